# Input functions and lists of the answer rules (answers.smk, llm_answers.smk),
# beside them rather than in common.smk; included after common.smk and before them.
from rag.answering.config_checks import CLOSED_BOOK

# Question sets and the language models' answer files (workflow/rules/llm_answers.smk).


def heldout_question_sets():
    """The stems of the held-out question files (answers.heldout.questions)."""
    heldout = (ANSWERS or {}).get("heldout") or {"questions": []}
    return [Path(path).stem for path in heldout["questions"]]


def question_set_ranking(corpus, questions, chunker, retriever):
    """Where one question set's ranking is: the grid's for development, rank_question_set's otherwise.

    The llm generator's inputs call this, so a held-out set is answered from
    the same retriever entry and index as the development questions.
    """
    names = {"corpus": corpus, "chunker": chunker, "retriever": retriever}
    if questions == "development":
        return caller_ranking(corpus, chunker, retriever, PLAN.answer_callers["llm"])
    return QUESTION_SET_RANKING.format(questions=questions, **names)


def question_set_indexes(wildcards):
    """The saved indexes of the base retrievers a (possibly fused) retriever ranks with."""
    from rag.retrieval.question_sets import base_components

    names = base_components(wildcards.retriever, RETRIEVERS)
    return [
        INDEX.format(corpus=wildcards.corpus, chunker=wildcards.chunker, retriever=name) for name in names
    ]


def question_set_entries(wildcards):
    """The retriever entries a question set's ranking reads: its own and its components'."""
    from rag.retrieval.question_sets import entries_used

    return canonical_json(entries_used(wildcards.retriever, RETRIEVERS))


def llm_answer_files():
    """The llm generators' answer files: the development questions of every corpus, and each
    held-out file of the held-out corpus, answered with the same settings."""
    files = [LLM_ANSWER.format(**names) for names in PLAN.llm_answer_settings()]
    heldout = ANSWERS["heldout"] if ANSWERS is not None else None
    for questions in heldout_question_sets():
        settings = PLAN.llm_answer_settings(questions)
        files += [LLM_ANSWER.format(**names) for names in settings if names["corpus"] == heldout["corpus"]]
    return files


def llm_chunk_files():
    """The chunk sets the llm answer files drew their sources from (closed book has none)."""
    chunkers = sorted({Path(path).parent.name for path in llm_answer_files()} - {CLOSED_BOOK})
    corpora = sorted({Path(path).parts[2] for path in llm_answer_files()})
    return [CHUNKS.format(corpus=corpus, chunker=chunker) for corpus in corpora for chunker in chunkers]


def answers_section(name, *keys):
    """One part of the canonical answers section as JSON: the params of the rules that use it."""

    def params(wildcards):
        section = ANSWERS[name]
        return canonical_json({key: section[key] for key in keys} if keys else section)

    return params


def abstention_inputs():
    """The answers of the abstention sweep's (chunker, retriever), one file per corpus."""
    if ANSWERS is None:
        return []
    chunker, retriever = ANSWERS["abstention"]["chunker"], ANSWERS["abstention"]["retriever"]
    return [
        f"{ANSWER_STEM}.parquet".format(corpus=corpus, chunker=chunker, retriever=retriever)
        for corpus in SPAN_CORPORA
    ]


def routing_inputs(kind):
    """Per corpus, the chunk set, its qrels or its saved index that routing searches within."""
    if ANSWERS is None:
        return []
    names = dict(chunker=ANSWERS["summaries"]["chunker"], retriever=ANSWERS["summaries"]["retriever"])
    pattern = {"chunks": CHUNKS, "qrels": QRELS, "index": INDEX}[kind]
    return [pattern.format(corpus=corpus, **names) for corpus in SPAN_CORPORA]


# The offline generators' answer tables (rag.answering.config_checks.offline_readers):
# each offline kind names the rule of its answer jobs in the table of kinds
# (rag/kinds.py). Rule answer answers with the extractive generator alone, into
# {stem}.parquet; rule read_answers with every other offline reader of a ranking
# in one job, each into {stem}.{name}.parquet.
READERS = ANSWERS["readers"] if ANSWERS is not None else []


def readers_of(rule):
    """The offline readers whose kind's answer jobs are ``rule``'s, in table order."""
    return [reader for reader in READERS if reader["rule"] == rule]


EXTRACTIVE_READERS = canonical_json(readers_of("answer"))


def reader_names():
    """The row names of rule read_answers' readers (reader, and reader_minilm with MiniLM similarity)."""
    return [reader["name"] for reader in readers_of("read_answers")]


# Whether a reader uses the MiniLM similarity: then its texts are encoded ahead
# (rules prompt_vectors and ask_vectors) and the answer jobs read them.
MINILM_READER = any(reader.get("similarity") == "minilm" for reader in READERS)


def prompt_vectors(wildcards):
    """The chunk set's prompt vectors when a reader uses the MiniLM similarity; otherwise nothing."""
    if not MINILM_READER:
        return []
    return [PROMPT_VECTORS.format(corpus=wildcards.corpus, chunker=wildcards.chunker)]


def reader_params(wildcards):
    """Rule read_answers' readers, in the order of reader_answer_files."""
    return canonical_json(readers_of("read_answers"))


def cross_validated_readers():
    """The row names whose threshold the answer tables choose by cross-validation (Kind.threshold)."""
    return [reader["name"] for reader in READERS if reader["threshold"] == "cross_validated"]


def reader_answer_files(stem, ending="parquet"):
    """One file per reader name, in the order of reader_params: {stem}.{name}.{ending} (answers, traces)."""
    return [f"{stem}.{name}.{ending}" for name in reader_names()]


def answer_files(stem):
    """One answer file per offline reader: rule answer's ({stem}.parquet), then rule read_answers' each."""
    return [*(f"{stem}.parquet" for _ in readers_of("answer")), *reader_answer_files(stem)]


def heldout_input(kind):
    """The held-out check's documents folder and its two question files (development, held-out)."""
    corpus, heldout = CORPORA[ANSWERS["heldout"]["corpus"]], ANSWERS["heldout"]["questions"]
    return {"documents": corpus["documents"], "development": corpus["questions"], "heldout": heldout}[kind]


LLM_GENERATORS = ANSWERS["llm"]["generators"] if ANSWERS is not None else []


def outcome_generators():
    """The llm generators that answer with an explicit outcome (refusal: outcome; docs/llm.md)."""
    entries = ANSWERS["generators"] if ANSWERS is not None else {}
    return [name for name in LLM_GENERATORS if entries[name].get("refusal") == "outcome"]


def llm_questions_path(corpus, questions):
    """The question file of a set: ``development`` is the corpus's, another name a held-out file's stem."""
    if questions == "development":
        return questions_path(corpus)
    heldout = ANSWERS["heldout"] or {"questions": []}
    for path in heldout["questions"]:
        if Path(path).stem == questions:
            return path
    raise ConfigError(
        f"work/llm_answers: no question set {questions!r} (development or a held-out file's stem)"
    )


def llm_answer_inputs(wildcards):
    """The questions and, unless closed book, the chunks, ranking and parsed corpus of one setting."""
    inputs = {"questions": llm_questions_path(wildcards.corpus, wildcards.questions)}
    if wildcards.retriever != CLOSED_BOOK:
        names = {"corpus": wildcards.corpus, "chunker": wildcards.chunker}
        inputs |= {
            "chunks": CHUNKS.format(**names),
            "ranking": question_set_ranking(
                wildcards.corpus, wildcards.questions, wildcards.chunker, wildcards.retriever
            ),
            "parsed": PARSED.format(corpus=wildcards.corpus),
        }
    return inputs


# The claim labels and question files of the citation tables (citation_labels.smk).
# The labels are the project's, read from every working directory: only the
# labelled answers that are rows of this run's table count (the others are left
# out). A copy of the workflow without them measures from the check alone.
CLAIM_LABELS = PROJECT_ROOT / "resources" / "answer_labels"


def claim_label_files():
    """The claim labels (answers, then claims), or none when the project holds none."""
    files = [CLAIM_LABELS / "claim_answers.csv", CLAIM_LABELS / "claims.csv"]
    return [str(path) for path in files] if all(path.exists() for path in files) else []


def llm_question_files():
    """Every question set the llm answer files answer, by corpus and name: their question file."""
    pairs = sorted({tuple(Path(path).parts[2:4]) for path in llm_answer_files()})
    return {f"{corpus}/{questions}": llm_questions_path(corpus, questions) for corpus, questions in pairs}
