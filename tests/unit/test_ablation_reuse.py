"""Which tables an ablation folder reuses from the default folder (rag.pipeline.config.shared_table_groups).

A group of tables is shared only when everything it is made from is the same
in the ablation's config as in config.yaml: its section, every named entry it
reads (components of fusions, the base of an IVF index, a funnel's stages),
its corpora and the evaluation settings. Each case changes one of these and
checks that exactly the groups made from it stop being shared.
"""

from __future__ import annotations

import copy
import functools

import pytest
import yaml

from rag.pipeline.config import TABLE_GROUPS, build_plan
from tests.extras import needs
from tests.workdir import PROJECT

SCHEMA = yaml.safe_load((PROJECT / "workflow/schemas/config.schema.yaml").read_text())
BUNDLED = yaml.safe_load((PROJECT / "config.yaml").read_text())


def ablation(change=None, results: str = "results_ablation"):
    config = copy.deepcopy(BUNDLED)
    config["chunkers"]["sentences80"] = {"kind": "sentences", "max_words": 80}
    config["retrievers"]["bm25_k1_12"] = {"kind": "bm25", "k1": 1.2}
    config["results"] = results
    if change is not None:
        change(config)
    return build_plan(config, SCHEMA, PROJECT, base_config=copy.deepcopy(BUNDLED))


@functools.cache
def shared_by_plain_ablation() -> frozenset[str]:
    return frozenset(ablation().shared_tables)


def test_an_ablation_with_new_entries_reuses_every_group_of_the_default_folder():
    plan = ablation()
    present = set(plan.table_fingerprints())
    assert set(plan.shared_tables) == present and plan.shared_tables
    assert set(plan.shared_tables.values()) == {"results"}
    for group in plan.shared_tables:
        for name in TABLE_GROUPS[group]:
            assert plan.table(name) == f"results/{name}"
    assert plan.table("metrics.csv") == "results_ablation/metrics.csv"
    shared = {f"results/{name}" for group in plan.shared_tables for name in TABLE_GROUPS[group]}
    listed = plan.results()
    assert shared & set(listed)
    assert all(path.startswith("results_ablation/") for path in listed if path not in shared)


def _set(*keys, value):
    def change(config):
        node = config
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return change


def _delete(*keys):
    def change(config):
        node = config
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]

    return change


@pytest.mark.parametrize(
    ("change", "not_shared"),
    [
        (_set("ivf_synthetic", "queries", value=999), {"ivf_synthetic", "ivf_figure"}),
        (_set("grounding", "k", value=4), {"grounding"}),
        # Answering every chunker: the answered pairs now hold sentences80.
        (_delete("answers", "chunkers"), {"answers"}),
        # bm25 is read by the answers, the fusions, the filter and diversity ablations and grounding.
        (
            _set("retrievers", "bm25", "k1", value=2.0),
            {"answers", "filter_ablation", "diversity_ablation", "grounding"},
        ),
        # lsa128 is the base of the IVF tradeoff's index and a component of rrf_bm25_lsa.
        (_set("retrievers", "lsa128", "dimensions", value=96), {"ivf_tradeoff", "ivf_figure", "answers"}),
        (_set("chunkers", "sentences100", "max_words", value=90), {"answers", "filter_ablation"}),
        (_set("evaluation", "depth", value=90), {"grounding", "answers", "ivf_tradeoff", "filter_ablation"}),
        (_set("filters", "public", value={"access": ["public", "internal"]}), {"filter_ablation"}),
        # Without the llm extra the optional smollm2 is left out, so its settings change nothing.
        pytest.param(
            _set("generators", "smollm2", "max_tokens", value=32),
            {"answers", "grounding"},
            marks=needs("llm"),
        ),
    ],
)
def test_a_group_made_from_a_changed_setting_is_not_shared(change, not_shared):
    plan = ablation(change)
    groups = set(shared_by_plain_ablation())
    missing = groups - set(plan.shared_tables)
    assert not_shared <= missing, (not_shared, missing)
    assert all(
        plan.table(name).startswith("results_ablation/") for group in missing for name in TABLE_GROUPS[group]
    )


def test_the_default_folder_shares_nothing_with_itself():
    plan = build_plan(copy.deepcopy(BUNDLED), SCHEMA, PROJECT, base_config=copy.deepcopy(BUNDLED))
    assert plan.shared_tables == {}
    assert all(path.startswith("results/") for path in plan.results())


def test_a_base_that_does_not_plan_shares_nothing():
    broken = copy.deepcopy(BUNDLED)
    broken["chunkers"]["fixed100"]["overlpa"] = 3
    config = copy.deepcopy(BUNDLED)
    config["results"] = "results_ablation"
    plan = build_plan(config, SCHEMA, PROJECT, base_config=broken)
    assert plan.shared_tables == {}
