"""The pipeline's plumbing: the config plan, the Snakemake job edge, provenance of code, reproduction.

:mod:`rag.pipeline.config` reads and checks the config and decides which outputs
exist (the plan ``workflow/rules/common.smk`` asks for);
:mod:`rag.pipeline.jobs` and :mod:`rag.pipeline.job_errors` are the edge every
workflow script starts and ends a job through; :mod:`rag.pipeline.code_digest`
digests a script and the ``rag`` modules it imports, so a rule reruns when its
code changes; :mod:`rag.pipeline.experiments` reads the experiment lists;
:mod:`rag.pipeline.reproduce` rebuilds ``results/`` in a clean copy and compares.
The stages never import this package (the table of kinds, :mod:`rag.kinds`, and
the provenance records, :mod:`rag.provenance`, sit below every stage, so they
stay outside it); only ``rag ask`` reads :mod:`rag.pipeline.code_digest`, to key
its index by the code that built it.
"""
