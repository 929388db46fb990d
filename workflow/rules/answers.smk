# Rankings to answers: the spec's extractive generator and the stronger
# reader (rag.answering.reader) read the top k chunks of a ranking; each answer is
# checked against the sources it cites (faithful), against the question's
# expected type (responsive) and judged against the labelled evidence. Beside
# the chunk rankings, the lead sections of the documents serve as context (all
# in one prompt) and as a router to a single document. Nothing here runs
# unless config.yaml has an answers section.


rule answer:
    input:
        chunks=CHUNKS,
        ranking=answer_ranking,
        parsed=PARSED,
        questions=questions_file,
    output:
        answers=[f"{ANSWER_STEM}.parquet"],
        # One JSON line per answer (docs/trace.md): hashes and ids, no text.
        traces=[f"{ANSWER_TRACE_STEM}.jsonl"],
    log:
        "logs/answer/{corpus}/{chunker}/{retriever}.log",
    benchmark:
        "benchmarks/logs/answer/{corpus}/{chunker}/{retriever}.tsv"
    conda:
        "../envs/rag.yaml"
    params:
        generation=answers_section("generation"),
        readers=EXTRACTIVE_READERS,
        cache=EMBEDDING_CACHE,
        caller=lambda wildcards: caller_params(PLAN.answer_callers["answers"]),
        code=script_digest("answer.py"),
    script:
        "../scripts/answer.py"


if MINILM_READER:

    # Every sentence a chunk set's prompts can hold, encoded once for all its
    # answer jobs (rag.answering.reader.prompt_texts); they read the vectors
    # from here instead of each encoding what its prompts share with the others'.
    rule prompt_vectors:
        input:
            chunks=CHUNKS,
            questions=questions_file,
        output:
            PROMPT_VECTORS,
        log:
            "logs/prompt_vectors/{corpus}/{chunker}.log",
        benchmark:
            "benchmarks/logs/prompt_vectors/{corpus}/{chunker}.tsv"
        conda:
            "../envs/rag.yaml"
        params:
            cache=EMBEDDING_CACHE,
            code=script_digest("prompt_vectors.py"),
        script:
            "../scripts/prompt_vectors.py"


# Every reader of a ranking in one job (rag.answering.answers.answer_questions_by_readers):
# they differ only in their similarity, so the job reads the ranking, builds
# each prompt and loads the token counter once for all of them.
if reader_names():

    rule read_answers:
        input:
            chunks=CHUNKS,
            ranking=answer_ranking,
            parsed=PARSED,
            questions=questions_file,
            prompt_vectors=prompt_vectors,
        output:
            answers=reader_answer_files(ANSWER_STEM),
            traces=reader_answer_files(ANSWER_TRACE_STEM, "jsonl"),
        log:
            "logs/read_answers/{corpus}/{chunker}/{retriever}.log",
        benchmark:
            "benchmarks/logs/read_answers/{corpus}/{chunker}/{retriever}.tsv"
        conda:
            "../envs/rag.yaml"
        params:
            generation=answers_section("generation", "k", "token_counter", "budget"),
            readers=reader_params,
            cache=EMBEDDING_CACHE,
            caller=lambda wildcards: caller_params(PLAN.answer_callers["answers"]),
            code=script_digest("answer.py"),
        script:
            "../scripts/answer.py"


rule answer_from_summaries:
    input:
        parsed=PARSED,
        questions=questions_file,
    output:
        answers=[f"{SUMMARY_ANSWER_STEM}.parquet"],
        traces=[f"{SUMMARY_ANSWER_TRACE_STEM}.jsonl"],
    log:
        "logs/answer_from_summaries/{corpus}.log",
    benchmark:
        "benchmarks/logs/answer_from_summaries/{corpus}.tsv"
    conda:
        "../envs/rag.yaml"
    params:
        generation=answers_section("generation", "threshold", "token_counter", "budget"),
        readers=EXTRACTIVE_READERS,
        cache=EMBEDDING_CACHE,
        caller=lambda wildcards: caller_params(PLAN.answer_callers["answers"]),
        code=script_digest("answer_from_summaries.py"),
    script:
        "../scripts/answer_from_summaries.py"


if reader_names():

    rule read_answers_from_summaries:
        input:
            parsed=PARSED,
            questions=questions_file,
        output:
            answers=reader_answer_files(SUMMARY_ANSWER_STEM),
            traces=reader_answer_files(SUMMARY_ANSWER_TRACE_STEM, "jsonl"),
        log:
            "logs/read_answers_from_summaries/{corpus}.log",
        benchmark:
            "benchmarks/logs/read_answers_from_summaries/{corpus}.tsv"
        conda:
            "../envs/rag.yaml"
        params:
            generation=answers_section("generation", "token_counter", "budget"),
            readers=reader_params,
            cache=EMBEDDING_CACHE,
            caller=lambda wildcards: caller_params(PLAN.answer_callers["answers"]),
            code=script_digest("answer_from_summaries.py"),
        script:
            "../scripts/answer_from_summaries.py"


rule answer_tables:
    input:
        ranked=[
            path
            for c, ch, r in answer_pairs()
            for path in answer_files(ANSWER_STEM.format(corpus=c, chunker=ch, retriever=r))
        ],
        summaries=[
            path
            for corpus in SPAN_CORPORA
            for path in answer_files(SUMMARY_ANSWER_STEM.format(corpus=corpus))
        ],
    output:
        answers=TABLE("answers.csv"),
        summary=TABLE("answers_summary.csv"),
        thresholds=TABLE("reader_thresholds.csv"),
    log:
        "logs/answer_tables.log",
    conda:
        "../envs/rag.yaml"
    params:
        reader=answers_section("reader"),
        cross_validated=cross_validated_readers(),
        holdouts=PLAN.holdouts,
        code=script_digest("answer_tables.py"),
    script:
        "../scripts/answer_tables.py"


rule answers_document:
    input:
        summary=TABLE("answers_summary.csv"),
        thresholds=TABLE("reader_thresholds.csv"),
        heldout=[TABLE("answers_heldout.csv")] if ANSWERS and ANSWERS["heldout"] else [],
        reader_rules=[TABLE("reader_rules.csv")] if ANSWERS and ANSWERS["heldout"] else [],
        llm=(
            [
                TABLE("llm_answers_summary.csv"),
                TABLE("llm_closed_book.csv"),
                TABLE("citation_check.csv"),
                TABLE("verdicts.csv"),
            ]
            if llm_answer_files()
            else []
        ),
        accuracy=[TABLE("citation_accuracy.csv")] if llm_answer_files() else [],
        judges=[f"{RESULTS}/judge_calibration.csv"] if PLAN.judges else [],
    output:
        TABLE("answers.md"),
    log:
        "logs/answers_document.log",
    conda:
        "../envs/rag.yaml"
    params:
        code=script_digest("answers_document.py"),
    script:
        "../scripts/answers_document.py"


rule abstention:
    input:
        abstention_inputs(),
    output:
        table=TABLE("abstention.csv"),
        figure=report(
            TABLE("figures/abstention.png"),
            caption="../report/abstention.rst",
            category="3. Answers",
            subcategory="Figures",
        ),
    log:
        "logs/abstention.log",
    conda:
        "../envs/rag.yaml"
    params:
        thresholds=answers_section("abstention", "thresholds"),
        threshold=lambda wildcards: ANSWERS["generation"]["threshold"],
        corpus=FIGURES.get("corpus", SPAN_CORPORA[0] if SPAN_CORPORA else None),
        code=script_digest("abstention.py"),
    script:
        "../scripts/abstention.py"


rule summaries:
    input:
        parsed=expand(PARSED, corpus=SPAN_CORPORA),
        questions=[CORPORA[corpus]["questions"] for corpus in SPAN_CORPORA],
    output:
        TABLE("summaries.csv"),
    log:
        "logs/summaries.log",
    conda:
        "../envs/rag.yaml"
    params:
        corpora=SPAN_CORPORA,
        window=answers_section("summaries", "window"),
        code=script_digest("summaries.py"),
    script:
        "../scripts/summaries.py"


rule route:
    input:
        parsed=expand(PARSED, corpus=SPAN_CORPORA),
        questions=[CORPORA[corpus]["questions"] for corpus in SPAN_CORPORA],
        chunks=routing_inputs("chunks"),
        qrels=routing_inputs("qrels"),
        index=routing_inputs("index"),
    output:
        routing=TABLE("routing.csv"),
        metrics=TABLE("routing_metrics.csv"),
    log:
        "logs/route.log",
    benchmark:
        "benchmarks/logs/route.tsv"
    conda:
        "../envs/rag.yaml"
    params:
        corpora=SPAN_CORPORA,
        routing=answers_section("summaries", "chunker", "retriever"),
        retriever=lambda wildcards: canonical_json(RETRIEVERS[ANSWERS["summaries"]["retriever"]]),
        depths=[PLAN.ranking_depth(corpus) for corpus in SPAN_CORPORA],
        ks=sorted(config["evaluation"]["ks"]),
        code=script_digest("route.py"),
    script:
        "../scripts/route.py"


# The held-out check: questions written after the reader was frozen, answered
# through rag ask's own path next to the development questions.
if ANSWERS is not None and ANSWERS["heldout"] is not None:

    # Each of the reader's rules switched off in turn, on the same questions: a
    # rule that helps the development questions only is a fit to them.
    rule reader_rules:
        input:
            documents=heldout_input("documents"),
            development=heldout_input("development"),
            heldout=heldout_input("heldout"),
            thresholds=TABLE("reader_thresholds.csv"),
        output:
            TABLE("reader_rules.csv"),
        log:
            "logs/reader_rules.log",
        benchmark:
            "benchmarks/logs/reader_rules.tsv"
        conda:
            "../envs/rag.yaml"
        params:
            code=script_digest("reader_rules.py"),
        script:
            "../scripts/reader_rules.py"

    if MINILM_READER:

        # What the held-out check embeds (rag.answering.answers.measured_ask_texts),
        # encoded early: answers_heldout waits for every answer table.
        rule ask_vectors:
            input:
                documents=heldout_input("documents"),
                development=heldout_input("development"),
                heldout=heldout_input("heldout"),
            output:
                ASK_VECTORS,
            log:
                "logs/ask_vectors.log",
            benchmark:
                "benchmarks/logs/ask_vectors.tsv"
            conda:
                "../envs/rag.yaml"
            params:
                cache=EMBEDDING_CACHE,
                code=script_digest("ask_vectors.py"),
            script:
                "../scripts/ask_vectors.py"

    rule answers_heldout:
        input:
            documents=heldout_input("documents"),
            development=heldout_input("development"),
            heldout=heldout_input("heldout"),
            thresholds=TABLE("reader_thresholds.csv"),
            ask_vectors=[ASK_VECTORS] if MINILM_READER else [],
        output:
            table=TABLE("answers_heldout.csv"),
            # One trace per answer, as the answers' caller (docs/trace.md).
            traces="work/traces/answers_heldout.jsonl",
        log:
            "logs/answers_heldout.log",
        benchmark:
            "benchmarks/logs/answers_heldout.tsv"
        conda:
            "../envs/rag.yaml"
        params:
            cache=EMBEDDING_CACHE,
            caller=lambda wildcards: caller_params(PLAN.answer_callers["answers"]),
            code=script_digest("answers_heldout.py"),
        script:
            "../scripts/answers_heldout.py"


# Answers from language models (docs/llm.md): each llm generator answers the
# questions closed book (chunker and retriever "none") and from the top k
# chunks of each ranking of answers.llm. Replies come from the response cache
# (LLM_CACHE, committed) or, on a miss, from the endpoint; a bundled generator's
# server runs only inside the job that misses (rag/models/local_server.py).
rule llm_answer:
    input:
        unpack(llm_answer_inputs),
    output:
        LLM_ANSWER,
        # One JSON line per answer (docs/trace.md): hashes and ids, no text.
        trace=LLM_TRACE,
    log:
        job="logs/llm_answer/{corpus}/{questions}/{generator}/{chunker}/{retriever}.log",
        server="logs/llm_server/{corpus}/{questions}/{generator}/{chunker}/{retriever}.log",
    benchmark:
        "benchmarks/logs/llm_answer/{corpus}/{questions}/{generator}/{chunker}/{retriever}.tsv"
    wildcard_constraints:
        generator=alternatives(LLM_GENERATORS),
        chunker=alternatives([*CHUNKERS, CLOSED_BOOK]),
        retriever=alternatives([*RETRIEVERS, CLOSED_BOOK]),
    conda:
        "../envs/rag.yaml"
    # One core: a job whose replies are all in LLM_CACHE (every job of a build
    # from the committed cache) only reads it, and a miss's server computes
    # with the job's threads (RAG_LLM_THREADS, set by the script), so two jobs
    # on two cores never start four busy threads. Ask for two where misses are
    # expected: --set-threads llm_answer=2 (the slurm profile does).
    threads: 1
    params:
        generator=lambda wildcards: canonical_json(ANSWERS["generators"][wildcards.generator]),
        k=lambda wildcards: PLAN.llm_k(wildcards.chunker, wildcards.retriever),
        caller=lambda wildcards: caller_params(PLAN.answer_callers["llm"]),
        cache=LLM_CACHE,
        code=script_digest("llm_answer.py"),
    script:
        "../scripts/llm_answer.py"


rule llm_answers_table:
    input:
        [LLM_ANSWER.format(**names) for names in PLAN.llm_answer_settings()],
    output:
        TABLE("llm_answers.csv"),
    log:
        "logs/llm_answers_table.log",
    conda:
        "../envs/rag.yaml"
    params:
        code=script_digest("llm_answers_table.py"),
    script:
        "../scripts/llm_answers_table.py"
