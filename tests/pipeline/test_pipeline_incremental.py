"""Re-run behaviour of the DAG, driven through Snakemake on the tiny corpus."""

from __future__ import annotations

import pytest

from tests.workdir import (
    make_workdir,
    planned_jobs,
    planned_outputs,
    read_config,
    snakemake,
    write_config,
)


@pytest.fixture(scope="module")
def built(build_pipeline):
    """A private copy of the project and a tiny corpus, fully built once."""
    build = build_pipeline("project")
    return build.project, build.workdir


def test_second_run_has_nothing_to_do(built):
    project, workdir = built
    assert planned_jobs(workdir, project / "Snakefile") == {}


def test_reformatted_config_schedules_nothing(built):
    project, workdir = built
    original = (workdir / "config.yaml").read_text()
    config = read_config(workdir)
    reordered = {key: config[key] for key in reversed(list(config))}
    for section in ("chunkers", "retrievers"):
        reordered[section] = {
            name: {key: entry[key] for key in reversed(list(entry))}
            for name, entry in reversed(list(config[section].items()))
        }
    # Restating a default is not a change either.
    reordered["chunkers"]["sentences20"]["header"] = True
    try:
        write_config(workdir, reordered)
        with open(workdir / "config.yaml", "a") as handle:
            handle.write("# a comment added by hand\n")
        assert planned_jobs(workdir, project / "Snakefile") == {}
    finally:
        (workdir / "config.yaml").write_text(original)


def test_new_chunker_schedules_only_its_branch(built):
    project, workdir = built
    original = (workdir / "config.yaml").read_text()
    config = read_config(workdir)
    config["chunkers"]["sections"] = {"kind": "sections"}
    try:
        write_config(workdir, config)
        # The TREC export (rule trec_runs) is one job over the whole grid, like the
        # metric tables: its output list names every run, old chunkers' included.
        outputs = [
            path
            for path in planned_outputs(workdir, project / "Snakefile")
            if not path.startswith("results/runs/")
        ]
        per_chunker = [path for path in outputs if "/tiny/" in path]
        assert per_chunker, outputs
        assert all("sections" in path for path in per_chunker), per_chunker
        assert not any("fixed10" in path or "sentences20" in path for path in outputs)
        assert not any(path.startswith("work/parsed") for path in outputs)
    finally:
        (workdir / "config.yaml").write_text(original)


def test_changed_chunker_reruns_only_its_branch(built):
    project, workdir = built
    original = (workdir / "config.yaml").read_text()
    config = read_config(workdir)
    config["chunkers"]["fixed10"]["overlap"] = 3
    try:
        write_config(workdir, config)
        outputs = planned_outputs(workdir, project / "Snakefile")
        per_chunker = [path for path in outputs if "/tiny/" in path]
        assert "work/chunks/tiny/fixed10.parquet" in outputs
        assert all("fixed10" in path for path in per_chunker), per_chunker
    finally:
        (workdir / "config.yaml").write_text(original)


def test_edited_module_reruns_the_rules_that_use_it(built):
    project, workdir = built
    # tfidf is reached by the ranking script only (rank.py -> retrievers -> lsa -> tfidf);
    # tests/unit/test_code_digest.py walks every rule and module.
    module = project / "rag" / "retrieval" / "tfidf.py"
    original = module.read_text()
    try:
        module.write_text(original + "\n# an edit\n")
        jobs = planned_jobs(workdir, project / "Snakefile")
        assert jobs.get("rank") == 2
        assert "parse_markdown" not in jobs and "chunk" not in jobs and "label" not in jobs
    finally:
        module.write_text(original)
    assert planned_jobs(workdir, project / "Snakefile") == {}


def test_misspelled_key_fails_before_any_job(built, tmp_path):
    project, workdir = built
    broken = make_workdir(tmp_path / "broken")
    config = read_config(broken)
    config["chunkers"]["fixed10"]["overlpa"] = 2
    write_config(broken, config)
    result = snakemake(broken, "--cores", "1", snakefile=project / "Snakefile", check=False)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "config['chunkers']['fixed10']['overlpa']" in output
    assert "unknown key" in output
    assert not (broken / "work").exists()
