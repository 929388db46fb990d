"""Every mistake before any job (issue 27, family 7): each refused at planning in one line naming its key."""

from __future__ import annotations

import copy
import math

import pytest
import yaml

from rag.corpus.beir import BeirFormatError, parse_qrels
from rag.pipeline.config import ConfigError, build_plan, results_folder
from tests.workdir import FIXTURES, PROJECT, make_workdir

SCHEMA = yaml.safe_load((PROJECT / "workflow/schemas/config.schema.yaml").read_text())
QUESTIONS_SCHEMA = yaml.safe_load((PROJECT / "workflow/schemas/questions.schema.yaml").read_text())
TINY = FIXTURES / "tiny"


def tiny() -> dict:
    return yaml.safe_load((TINY / "config.yaml").read_text())


def refusal(config: dict, root=TINY, **options) -> str:
    with pytest.raises(ConfigError) as caught:
        build_plan(copy.deepcopy(config), SCHEMA, root, **options)
    message = str(caught.value)
    assert "\n" not in message.split(":\n")[0]
    return message


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("../../../tmp/x", "leaves the working folder"),
        ("results/../../x", "leaves the working folder"),
        ("/", "is absolute"),
        ("/tmp/results", "is absolute"),
        ("C:\\results", "is absolute"),
        ("", "config['results']"),
    ],
)
def test_results_outside_the_working_folder_are_refused(value, message):
    config = {**tiny(), "results": value}
    assert message in refusal(config)
    assert "config['results']: " in refusal(config)


def test_results_inside_the_working_folder_are_kept():
    assert results_folder("results/") == "results"
    assert results_folder("out/tables") == "out/tables"
    plan = build_plan({**tiny(), "results": "out/run1"}, SCHEMA, TINY)
    assert all(path.startswith("out/run1/") for path in plan.results())


@pytest.mark.parametrize("components", [["bm25", "bm25"], ["bm25", "tfidf", "bm25"]])
def test_a_fusion_needs_distinct_components(components):
    config = tiny()
    config["retrievers"]["tfidf"] = {"kind": "tfidf"}
    config["retrievers"]["fused"] = {"kind": "rrf", "components": components}
    assert refusal(config) == (
        "config['retrievers']['fused']['components']: 'bm25' is named twice; "
        "a fusion needs distinct components"
    )


@pytest.mark.parametrize("installed", [True, False])
def test_a_typo_in_an_optional_entry_is_refused_whether_or_not_its_extra_is_installed(installed, monkeypatch):
    if not installed:

        def missing(name, entry, kinds):
            if entry.get("kind") in tuple(kinds):
                raise ConfigError(f"config['retrievers'][{name!r}]: the dense extra is missing")

        monkeypatch.setattr("rag.retrieval.config_checks.check_optional_packages", missing)
        pruned = tiny()
        pruned["retrievers"]["minilm"] = {"kind": "embedder", "optional": True}
        plan = build_plan(pruned, SCHEMA, TINY)
        assert "minilm" not in plan.retrievers and "left out of this run" in plan.warnings[0]
    config = tiny()
    config["retrievers"]["minilm"] = {"kind": "embedder", "optional": True, "k1": 1.5}
    message = refusal(config)
    assert message.startswith("config['retrievers']['minilm']") and "k1" in message


def questions_workdir(tmp_path, text: str):
    workdir = make_workdir(tmp_path / "run")
    (workdir / "questions.yaml").write_text(text, encoding="utf-8")
    return workdir


QUESTION = """questions:
  - id: alpha-orbit
    question: How long does Alpha take to orbit its star?
    type: fact
    answerable: true
    evidence:
      - spans:
          - {{document: alpha, text: It completes one orbit every 88.2 days.}}
        gain: {gain}
"""


@pytest.mark.parametrize("gain", ["1.0e+308", ".inf", ".nan", "1000000", "-1"])
def test_question_gains_are_finite_and_bounded_at_planning(gain, tmp_path):
    workdir = questions_workdir(tmp_path, QUESTION.format(gain=gain))
    message = refusal(tiny(), workdir, questions_schema=QUESTIONS_SCHEMA)
    assert "questions.yaml: question 'alpha-orbit'['evidence'][0]['gain']" in message
    parsed = yaml.safe_load(gain)
    assert not (math.isfinite(parsed) and 0 < parsed < 1e6)


def test_a_duplicate_type_in_a_question_file_is_refused(tmp_path):
    text = QUESTION.format(gain=1).replace("    type: fact\n", "    type: fact\n    type: comparison\n")
    workdir = questions_workdir(tmp_path, text)
    message = refusal(tiny(), workdir, questions_schema=QUESTIONS_SCHEMA)
    assert message.endswith(
        "questions.yaml, line 5: duplicate key 'type' (first given on line 4); "
        "YAML would silently keep only the last"
    )


def test_a_merge_key_is_one_clear_line(tmp_path):
    config_file = tmp_path / "config.yaml"
    config_file.write_text(
        "defaults: &base\n  kind: bm25\nretrievers:\n  bm25:\n    <<: *base\n", encoding="utf-8"
    )
    message = refusal(tiny(), config_files=[config_file])
    assert message == f"{config_file}, line 5: a YAML merge key (<<); write the keys out in full"


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["q1\td1\t1", "q1\td2\t1"], "qrels.tsv:1: expected a header line of three columns"),
        (["q1 d1"], "qrels.tsv:1: expected a header line of three columns"),
        (["query-id\tcorpus-id\tscore"], "qrels.tsv: a header and no judgements"),
        (["query-id\tcorpus-id\tscore", ""], "qrels.tsv: a header and no judgements"),
    ],
)
def test_qrels_are_read_strictly(lines, message):
    with pytest.raises(BeirFormatError) as caught:
        parse_qrels(lines, "qrels.tsv", {"d1", "d2"}, {"q1"})
    assert str(caught.value).startswith(message)


def test_qrels_with_a_header_keep_every_judgement():
    judgements = parse_qrels(
        ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q1\td2\t0"], "q.tsv", {"d1", "d2"}, {"q1"}
    )
    assert [(j.question_id, j.doc_id, j.gain) for j in judgements] == [("q1", "d1", 1), ("q1", "d2", 0)]


def test_a_link_leading_out_of_the_corpus_folder_is_refused_at_planning_and_by_rag_ask(tmp_path, capsys):
    from rag import cli

    workdir = make_workdir(tmp_path / "run")
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nThe vault code is 4711.\n", encoding="utf-8")
    (workdir / "documents" / "notes.md").symlink_to(outside)
    message = refusal(tiny(), workdir)
    assert message.startswith("config['corpora']['tiny']['documents']: ")
    assert "notes.md: a link to a file outside the corpus folder" in message
    assert cli.main(["ask", "What is the vault code?", "--documents", str(workdir / "documents")]) == 1
    error = capsys.readouterr().err
    assert "notes.md: a link to a file outside the folder" in error and "4711" not in error


def test_a_link_inside_the_corpus_folder_is_read(tmp_path):
    workdir = make_workdir(tmp_path / "run")
    (workdir / "documents" / "alpha_again.md").symlink_to(workdir / "documents" / "alpha.md")
    assert "tiny" in build_plan(tiny(), SCHEMA, workdir).corpora
