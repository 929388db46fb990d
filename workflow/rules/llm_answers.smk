# Language models' answers measured (docs/answers.md): judged against the
# reference answers, compared with the closed book, the citation check's
# precision and recall at flagging unsupported answers, and how often the
# verdicts "faithful and responsive" are correct for every generator. The
# answer files come from the llm generator's rule (llm_answer); held-out
# question sets are ranked here with the grid's own retrievers and indexes.


def question_set_path(corpus, questions):
    """The file of a question set: ``development`` is the corpus's own, another name a held-out stem."""
    if questions == "development":
        return questions_path(corpus)
    heldout = (ANSWERS or {}).get("heldout") or {"questions": []}
    for path in heldout["questions"]:
        if Path(path).stem == questions:
            return path
    raise ConfigError(f"no question set {questions!r}: development or a held-out file's stem")


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
        return RANKING.format(**names)
    return f"work/question_sets/{corpus}/{questions}/{chunker}/{retriever}.parquet"


def question_set_indexes(wildcards):
    """The saved indexes of the base retrievers a (possibly fused) retriever ranks with."""
    from rag.retrieval.question_sets import base_components

    names = base_components(wildcards.retriever, RETRIEVERS)
    return [INDEX.format(corpus=wildcards.corpus, chunker=wildcards.chunker, retriever=name) for name in names]


rule rank_question_set:
    input:
        chunks=CHUNKS,
        questions=lambda wildcards: question_set_path(wildcards.corpus, wildcards.questions),
        indexes=question_set_indexes,
    output:
        ranking="work/question_sets/{corpus}/{questions}/{chunker}/{retriever}.parquet",
    log:
        "logs/rank_question_set/{corpus}/{questions}/{chunker}/{retriever}.log",
    wildcard_constraints:
        questions=alternatives(heldout_question_sets()),
        retriever=alternatives([*BASE_RETRIEVERS, *FUSED_RETRIEVERS]),
    conda:
        "../envs/rag.yaml"
    params:
        retrievers=lambda wildcards: canonical_json(RETRIEVERS),
        depth=config["evaluation"]["depth"],
        code=script_digest("rank_question_set.py"),
    script:
        "../scripts/rank_question_set.py"


def llm_answer_files():
    """The llm generator's answer files, as its plan lists them; none before that plan exists.

    SEAM (issue 26): the llm generator's plan (branch llm-core) provides
    ``PLAN.llm_answer_files()``; until then nothing here is scheduled.
    """
    listed = getattr(PLAN, "llm_answer_files", None)
    return list(listed()) if listed is not None else []


def llm_chunk_files():
    """The chunk sets the llm answer files drew their sources from (closed book has none)."""
    chunkers = sorted({Path(path).parent.name for path in llm_answer_files()} - {"none"})
    corpora = sorted({Path(path).parts[2] for path in llm_answer_files()})
    return [CHUNKS.format(corpus=corpus, chunker=chunker) for corpus in corpora for chunker in chunkers]


if llm_answer_files():

    rule llm_answer_tables:
        input:
            answers=llm_answer_files(),
            chunks=llm_chunk_files(),
            heldout=[f"{RESULTS}/answers_heldout.csv"] if ANSWERS["heldout"] else [],
        output:
            judged=f"{RESULTS}/llm_answers_judged.csv",
            summary=f"{RESULTS}/llm_answers_summary.csv",
            closed_book=f"{RESULTS}/llm_closed_book.csv",
            citation=f"{RESULTS}/citation_check.csv",
            verdicts=f"{RESULTS}/verdicts.csv",
        log:
            "logs/llm_answer_tables.log",
        conda:
            "../envs/rag.yaml"
        params:
            code=script_digest("llm_answer_tables.py"),
        script:
            "../scripts/llm_answer_tables.py"
