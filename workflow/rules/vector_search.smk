# Exact against approximate nearest-neighbour search: an IVF index over real
# chunk vectors (what it costs in recall, against exact search and against
# the labels) and over synthetic vectors (what it saves in time). Each half
# runs only when its section is in config.yaml; the figure needs both.

if IVF_TRADEOFF:

    rule ivf_tradeoff:
        input:
            index=INDEX.format(**{key: IVF_TRADEOFF[key] for key in ("corpus", "chunker", "retriever")}),
            chunks=CHUNKS.format(corpus=IVF_TRADEOFF["corpus"], chunker=IVF_TRADEOFF["chunker"]),
            qrels=QRELS.format(corpus=IVF_TRADEOFF["corpus"], chunker=IVF_TRADEOFF["chunker"]),
            questions=CORPORA[IVF_TRADEOFF["corpus"]]["questions"],
        output:
            TABLE("ivf_tradeoff.csv"),
        log:
            "logs/ivf_tradeoff.log",
        benchmark:
            "benchmarks/logs/ivf_tradeoff.tsv"
        conda:
            "../envs/rag.yaml"
        params:
            settings=canonical_json(IVF_TRADEOFF),
            retriever=canonical_json(RETRIEVERS[IVF_TRADEOFF["retriever"]]),
            code=script_digest("ivf_tradeoff.py"),
        script:
            "../scripts/ivf_tradeoff.py"


if IVF_SYNTHETIC:

    # Times exact and approximate search in one job, their runs interleaved,
    # so the ratio compares runs under the same load (rag.retrieval.ivf.probe_tradeoff,
    # one BLAS thread). It shares the machine with other jobs like any rule:
    # holding every core to time itself kept the whole build waiting, with
    # one core idle, for the seconds it ran. The times go to the timings
    # folder, which git and the reproduction check ignore; the recall and
    # share scanned stay in the results.
    rule ivf_synthetic:
        output:
            quality=TABLE("ivf_synthetic.csv"),
            timings=TABLE("timings/ivf_synthetic.csv"),
        log:
            "logs/ivf_synthetic.log",
        benchmark:
            "benchmarks/logs/ivf_synthetic.tsv"
        conda:
            "../envs/rag.yaml"
        threads: 1
        params:
            settings=canonical_json(IVF_SYNTHETIC),
            code=script_digest("ivf_synthetic.py"),
        script:
            "../scripts/ivf_synthetic.py"


if IVF_TRADEOFF and IVF_SYNTHETIC:

    rule plot_ivf_tradeoff:
        input:
            collection=TABLE("ivf_tradeoff.csv"),
            synthetic=TABLE("ivf_synthetic.csv"),
            timings=TABLE("timings/ivf_synthetic.csv"),
        output:
            recall=report(
                TABLE("figures/ivf_tradeoff.png"),
                caption="../report/ivf_tradeoff.rst",
                category="5. Approximate search",
                subcategory="Figures",
            ),
            timings=TABLE("timings/ivf_query_time.png"),
        log:
            "logs/plot_ivf_tradeoff.log",
        conda:
            "../envs/rag.yaml"
        params:
            code=script_digest("plot_ivf_tradeoff.py"),
        script:
            "../scripts/plot_ivf_tradeoff.py"
