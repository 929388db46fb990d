"""Outputs never overlap inputs (issue 42): a results folder that is, holds or sits inside an input,
or that a link leads out of the working folder, is refused at planning in one line naming the key."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.pipeline.config import ConfigError, build_plan, overlap_problem
from tests.workdir import FIXTURES, PROJECT, make_workdir

SCHEMA = yaml.safe_load((PROJECT / "workflow/schemas/config.schema.yaml").read_text())
FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def tiny() -> dict:
    return yaml.safe_load((FIXTURES / "tiny" / "config.yaml").read_text())


def plan_or_error(workdir: Path, results: str, config_files=("config.yaml",), project_root=None):
    config = {**tiny(), "results": results}
    try:
        return build_plan(copy.deepcopy(config), SCHEMA, workdir, config_files, project_root=project_root)
    except ConfigError as error:
        return error


def refusal(workdir: Path, results: str, **options) -> str:
    outcome = plan_or_error(workdir, results, **options)
    assert isinstance(outcome, ConfigError), f"results={results!r} was accepted"
    message = str(outcome)
    assert "\n" not in message and message.startswith("config['results']: "), message
    return message


@pytest.fixture
def workdir(tmp_path) -> Path:
    folder = make_workdir(tmp_path / "run")
    (folder / "resources").mkdir()
    (folder / "docs").mkdir()
    return folder


# --------------------------------------------------------------------------
# The pure check
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("/w/documents", "is the documents"),
        ("/w", "contains the documents"),
        ("/w/documents/sub", "sits inside the documents"),
        ("/w/results", None),
        ("/w/documents_old", None),
    ],
)
def test_overlap_problem_compares_whole_path_parts(output, expected):
    inputs = [("the documents", Path("/w/documents"), True)]
    problem = overlap_problem(Path(output), inputs)
    assert problem == expected


def test_an_output_may_sit_inside_the_working_folder_but_not_be_it():
    inputs = [("the working folder", Path("/w"), False)]
    assert overlap_problem(Path("/w/results"), inputs) is None
    assert overlap_problem(Path("/w"), inputs) == "is the working folder"


# --------------------------------------------------------------------------
# At planning
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("results", "names"),
    [
        (".", "is the working folder"),
        ("./", "is the working folder"),
        ("documents", "is the documents folder of corpus 'tiny'"),
        ("documents/tables", "sits inside the documents folder"),
        ("questions.yaml", "is the question file of corpus 'tiny'"),
        ("config.yaml", "is the config file config.yaml"),
        ("resources", "is resources/"),
        ("resources/out", "sits inside resources/"),
        ("docs", "is docs/"),
        ("work", "is work/"),
        ("logs/results", "sits inside logs/"),
    ],
)
def test_a_results_folder_overlapping_an_input_is_refused(workdir, results, names):
    assert names in refusal(workdir, results)


def test_a_folder_holding_a_config_file_is_refused(workdir):
    (workdir / "experiments").mkdir()
    (workdir / "experiments" / "mine.yaml").write_text("{}")
    message = refusal(workdir, "experiments", config_files=["experiments/mine.yaml"])
    assert "contains the config file experiments/mine.yaml" in message


def test_the_project_folders_are_inputs_when_the_run_is_elsewhere(tmp_path):
    project = tmp_path / "project"
    workdir = make_workdir(project / "resources" / "run")
    message = refusal(workdir, "out", project_root=project)
    assert "sits inside resources/, an input of the project" in message


def test_a_link_leading_out_of_the_working_folder_is_refused(workdir, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (workdir / "shortcut").symlink_to(outside, target_is_directory=True)
    message = refusal(workdir, "shortcut")
    assert "leads through a link out of the working folder" in message
    assert "leads through a link" in refusal(workdir, "shortcut/results")


def test_a_link_to_the_documents_is_judged_by_where_it_leads(workdir):
    (workdir / "tables").symlink_to(workdir / "documents", target_is_directory=True)
    assert "is the documents folder of corpus 'tiny'" in refusal(workdir, "tables")


def test_a_link_inside_the_results_folder_leading_out_is_refused(workdir, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (workdir / "mine").mkdir()
    (workdir / "mine" / "metrics.csv").symlink_to(outside / "metrics.csv")
    message = refusal(workdir, "mine")
    assert "mine/metrics.csv leads through a link out of the results folder" in message


def test_a_results_file_linked_to_an_input_is_refused(workdir):
    (workdir / "mine").mkdir()
    (workdir / "mine" / "README.md").symlink_to(workdir / "questions.yaml")
    assert "mine/README.md leads through a link out of the results folder" in refusal(workdir, "mine")


@pytest.mark.parametrize("results", ["results", "results_ablation", "out/run1", "documents_results"])
def test_a_folder_of_its_own_is_kept(workdir, results):
    plan = plan_or_error(workdir, results, project_root=workdir)
    assert not isinstance(plan, ConfigError), plan
    assert all(path.startswith(f"{results}/") for path in plan.results())


def test_the_bundled_config_passes():
    config = yaml.safe_load((PROJECT / "config.yaml").read_text())
    plan = build_plan(config, SCHEMA, PROJECT, ["config.yaml"], project_root=PROJECT)
    assert plan.results_folder == "results"


# --------------------------------------------------------------------------
# Fuzz: any results value is a plan whose folder overlaps nothing, or one line naming the key
# --------------------------------------------------------------------------

PARTS = st.sampled_from(
    [".", "..", "documents", "questions.yaml", "config.yaml", "resources", "docs", "work", "logs"]
    + ["results", "out", "link_out", "link_docs", "a b", "x" * 30, "documents_x", ".snakemake"]
)


def _independent_overlap(workdir: Path, results: str) -> bool:
    """Whether ``results`` is, holds or lies inside an input, judged on real paths by another route."""
    target = os.path.realpath(workdir / results)
    real_workdir = os.path.realpath(workdir)
    if os.path.commonpath([target, real_workdir]) != real_workdir or target == real_workdir:
        return True
    inputs = [workdir / name for name in ("documents", "questions.yaml", "config.yaml")]
    inputs += [workdir / name for name in ("resources", "docs", "work", "logs", ".snakemake", "cache")]
    inputs += [workdir / name for name in ("workflow", "rag", "tests", "config", "benchmarks")]
    for item in map(os.path.realpath, inputs):
        if os.path.commonpath([target, item]) in (target, item):
            return True
    return False


@FUZZ
@given(parts=st.lists(PARTS, min_size=1, max_size=4), slash=st.booleans())
def test_any_results_value_is_a_folder_apart_or_one_line(tmp_path_factory, parts, slash):
    workdir = make_workdir(tmp_path_factory.mktemp("fuzz") / "run")
    (workdir / "link_out").symlink_to(workdir.parent, target_is_directory=True)
    (workdir / "link_docs").symlink_to(workdir / "documents", target_is_directory=True)
    results = "/".join(parts) + ("/" if slash else "")
    outcome = plan_or_error(workdir, results)
    if isinstance(outcome, ConfigError):
        message = str(outcome)
        assert "\n" not in message and message.startswith("config['results']: "), message
        return
    folder = outcome.results_folder
    assert not _independent_overlap(workdir, folder), f"{results!r} accepted as {folder!r}"


# --------------------------------------------------------------------------
# The other output folder: a Wikipedia corpus's download cache
# --------------------------------------------------------------------------


def _wikipedia(tmp_path: Path, cache: str | None) -> tuple[Path, dict]:
    workdir = make_workdir(tmp_path / "wiki", "tiny_wikipedia")
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    if cache is not None:
        config["corpora"]["wiki"]["cache"] = cache
    return workdir, config


@pytest.mark.parametrize(
    ("cache", "names"), [(".", "is the working folder"), ("questions.yaml", "is the question")]
)
def test_a_download_cache_overlapping_an_input_is_refused(tmp_path, cache, names):
    workdir, config = _wikipedia(tmp_path, cache)
    with pytest.raises(ConfigError) as caught:
        build_plan(config, SCHEMA, workdir, ["config.yaml"])
    message = str(caught.value)
    assert message.startswith("config['corpora']['wiki']['cache']: ") and names in message, message


@pytest.mark.parametrize("cache", [None, "downloads", "absolute"])
def test_a_download_cache_of_its_own_is_kept_even_outside_the_working_folder(tmp_path, cache):
    if cache == "absolute":
        cache = str(tmp_path / "shared_cache")
    workdir, config = _wikipedia(tmp_path, cache)
    plan = build_plan(config, SCHEMA, workdir, ["config.yaml"])
    assert "wiki" in plan.corpora
