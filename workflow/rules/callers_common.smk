# Input functions of the rules that run as a caller (answers, llm answers, grounding,
# caller cohorts): which ranking each reads. Beside common.smk to keep it small.


# Callers (rag/retrieval/filters.py, Caller): every path to a model reads the
# rankings of the caller it answers for, searched inside retrieval within the
# caller's view (a filter of the caller's name). A view that allows every
# chunk of a chunk set gives exactly the unfiltered ranking (filtering.smk).
CALLERS = PLAN.callers


def caller_ranking(corpus, chunker, retriever, caller):
    return filtered_ranking(corpus, chunker, caller, retriever)


def answer_ranking(wildcards):
    """The ranking the offline generators answer from: answers.caller's."""
    return caller_ranking(
        wildcards.corpus, wildcards.chunker, wildcards.retriever, PLAN.answer_callers["answers"]
    )


# The callers of results/metrics_by_caller.csv, made by caller_cohorts: every
# caller of the callers section and every caller an answer path runs as, over
# the answered (chunker, retriever) pairs.
def measured_callers():
    named = set(PLAN.config.get("callers") or {})
    if ANSWERS is not None:
        named |= {PLAN.answer_callers["answers"], PLAN.answer_callers["llm"]}
    return sorted(named)


def caller_grid():
    return [
        [corpus, chunker, retriever, caller, caller_ranking(corpus, chunker, retriever, caller)]
        for corpus, chunker, retriever in answer_pairs()
        for caller in measured_callers()
    ]


def caller_grid_inputs():
    pairs = sorted({(corpus, chunker) for corpus, chunker, _ in answer_pairs()})
    return {
        f"{corpus}/{chunker}": {
            "questions": questions_path(corpus),
            "qrels": QRELS.format(corpus=corpus, chunker=chunker),
            "chunks": CHUNKS.format(corpus=corpus, chunker=chunker),
        }
        for corpus, chunker in pairs
    }


def caller_params(caller):
    """A caller's name and view as the params of a rule that answers for it."""
    return canonical_json({"name": caller, "view": CALLERS[caller]})


def grounding_inputs(wildcards):
    """The parsed corpus (memory), the chunk set and the ranking the grounding cases read."""
    if GROUNDING is None:
        raise ConfigError("config['grounding']: these results need a grounding section in config.yaml")
    names = {key: GROUNDING[key] for key in ("corpus", "chunker", "retriever")}
    templates = {"parsed": PARSED, "chunks": CHUNKS}
    inputs = {role: template.format(**names) for role, template in templates.items()}
    return inputs | {"ranking": caller_ranking(**names, caller=PLAN.answer_callers["grounding"])}
