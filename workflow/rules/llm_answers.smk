# Language models' answers measured (docs/answers.md): judged against the
# reference answers, compared with the closed book, and how often the verdicts
# "faithful and responsive" are correct for every generator (the citation
# check is held to the hand labels in citation_labels.smk). The answer files
# come from the llm generator's rule (llm_answer); held-out question sets are
# ranked here with the grid's own retrievers and indexes.


rule rank_question_set:
    input:
        chunks=CHUNKS,
        questions=lambda wildcards: llm_questions_path(wildcards.corpus, wildcards.questions),
        indexes=question_set_indexes,
    output:
        ranking=QUESTION_SET_RANKING,
    log:
        "logs/rank_question_set/{corpus}/{questions}/{chunker}/{retriever}.log",
    wildcard_constraints:
        questions=alternatives(heldout_question_sets()),
        retriever=alternatives([*BASE_RETRIEVERS, *FUSED_RETRIEVERS]),
    conda:
        "../envs/rag.yaml"
    params:
        retrievers=question_set_entries,
        caller=lambda wildcards: caller_params(PLAN.answer_callers["llm"]),
        depth=ranking_depth_of,
        code=script_digest("rank_question_set.py"),
    script:
        "../scripts/rank_question_set.py"


if llm_answer_files():

    rule llm_answer_tables:
        input:
            answers=llm_answer_files(),
            chunks=llm_chunk_files(),
            heldout=[TABLE("answers_heldout.csv")] if ANSWERS["heldout"] else [],
            # The hand labels, when the project holds them (correct, partly and wrong apart).
            labels=[path for path in ["resources/answer_labels/labels.csv"] if Path(path).is_file()],
            # The claim labels' answer-level readings (answers_common.smk), Qwen's among them.
            claim_labels=claim_label_files(),
        output:
            judged=TABLE("llm_answers_judged.csv"),
            summary=TABLE("llm_answers_summary.csv"),
            closed_book=TABLE("llm_closed_book.csv"),
            verdicts=TABLE("verdicts.csv"),
        log:
            "logs/llm_answer_tables.log",
        conda:
            "../envs/rag.yaml"
        params:
            code=script_digest("llm_answer_tables.py"),
        script:
            "../scripts/llm_answer_tables.py"


# The judges of answers against the hand labels (rag/measuring/judging.py):
# the deterministic one and every judge entry of config['generators'], each
# model asked through the response cache like every request.
if PLAN.judges:

    rule judge_calibration:
        input:
            # The claim readings: answers, then their claims (rag.measuring.judging.judged_labels).
            claim_labels=claim_label_files(),
            chunks=CHUNKS.format(corpus="solar_system", chunker="sentences100"),
        output:
            calibration=f"{RESULTS}/judge_calibration.csv",
            verdicts=f"{RESULTS}/judge_verdicts.csv",
        log:
            job="logs/judge_calibration.log",
            server="logs/llm_server/judge_calibration.log",
        conda:
            "../envs/rag.yaml"
        threads: 1
        params:
            judges=lambda wildcards: canonical_json(PLAN.judges),
            # A judge answers as the caller of the answers it judges (rag.models.gate).
            caller=lambda wildcards: caller_params(PLAN.answer_callers["judge"]),
            # The judges the config marks optional (the canonical entries do not keep the key).
            optional=sorted(
                name
                for name, entry in (config.get("generators") or {}).items()
                if isinstance(entry, dict) and entry.get("optional")
            ),
            cache=LLM_CACHE,
            code=script_digest("judge_calibration.py"),
        script:
            "../scripts/judge_calibration.py"
