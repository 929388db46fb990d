"""Callers: a tenant, its groups and its access levels, applied as a prefilter like every filter.

The mask of a caller's view is compared with :func:`readable`, the rule
written for one document, on seeded random chunk metadata; the ``callers:``
section of config.yaml is fuzzed (every case is a plan or one ConfigError
line naming the section); the planning check that keeps a caller's text off
an endpoint that may not receive it names the caller and the levels.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.documents.access_metadata import ACCESS_LEVELS
from rag.formats.files import read_yaml
from rag.models.may_receive import endpoint_receives_too_much, loopback_endpoint
from rag.pipeline.config import ConfigError, build_plan
from rag.retrieval.filters import (
    PUBLIC_CALLER,
    Caller,
    ChunkMetadata,
    FilterError,
    allowed_chunks,
    caller_from_view,
    parse_caller,
    parse_filter,
    readable,
)

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = read_yaml(ROOT / "workflow/schemas/config.schema.yaml")
FUZZ = settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
TENANTS = ["", "acme", "globex"]
GROUPS = ["engineering", "finance", "legal"]


def random_metadata(seed: int, size: int = 80) -> ChunkMetadata:
    rng = random.Random(seed)
    return ChunkMetadata.from_columns(
        [f"d{rng.randrange(20)}" for _ in range(size)],
        [rng.choice(ACCESS_LEVELS) for _ in range(size)],
        [() for _ in range(size)],
        [None] * size,
        [rng.choice(TENANTS) for _ in range(size)],
        [tuple(sorted(rng.sample(GROUPS, rng.randrange(3)))) for _ in range(size)],
    )


def random_caller(rng: random.Random) -> Caller:
    return Caller(
        "c",
        rng.choice(TENANTS),
        frozenset(rng.sample(GROUPS, rng.randrange(4))),
        frozenset(rng.sample(ACCESS_LEVELS, rng.randrange(1, 4))),
    )


@pytest.mark.parametrize("seed", range(12))
def test_a_callers_mask_is_the_one_document_rule_for_every_chunk(seed):
    metadata, rng = random_metadata(seed), random.Random(1000 + seed)
    for _ in range(10):
        caller = random_caller(rng)
        mask = allowed_chunks(caller.view(), metadata)
        expected = [
            readable(caller, access, tenant, acl)
            for access, tenant, acl in zip(metadata.access, metadata.tenant, metadata.acl, strict=True)
        ]
        assert mask.tolist() == expected
        # Independently of readable(): the three conditions, spelled out.
        for position, allowed in enumerate(mask):
            acl = set(metadata.acl[position])
            assert allowed == (
                metadata.access[position] in caller.access
                and metadata.tenant[position] in ("", caller.tenant)
                and (not acl or bool(acl & caller.groups))
            )


def test_the_rule_on_named_cases():
    acme_eng = Caller("acme_eng", "acme", frozenset({"engineering"}), frozenset({"public", "internal"}))
    assert readable(acme_eng, "public")  # shared, open, public
    assert readable(acme_eng, "internal", "acme", ("engineering", "legal"))
    assert not readable(acme_eng, "internal", "globex")  # another tenant
    assert not readable(acme_eng, "internal", "acme", ("finance",))  # another group
    assert not readable(acme_eng, "restricted", "acme")  # a level it does not read
    assert not readable(PUBLIC_CALLER, "public", "", ("engineering",))  # no group at all
    assert readable(PUBLIC_CALLER, "public") and not readable(PUBLIC_CALLER, "restricted")


def test_a_caller_is_a_filter_and_back():
    caller = parse_caller("acme_eng", {"tenant": "acme", "groups": ["engineering"], "access": ["internal"]})
    config = caller.view().to_config()
    assert config == {"access": ["internal"], "tenant": "acme", "groups": ["engineering"]}
    assert caller_from_view("acme_eng", parse_filter(config)) == caller
    # A filter that names no tenant or groups is not a caller's view.
    assert caller_from_view("public", parse_filter({"access": ["public"]})) is None
    # Defaults: the public caller.
    assert parse_caller("p", {}).view() == PUBLIC_CALLER.view()


def test_metadata_without_tenant_and_acl_columns_is_shared_and_open():
    metadata = ChunkMetadata.from_columns(["a", "b"], ["public", "restricted"], [(), ()], [None, None])
    assert metadata.tenant == ("", "") and metadata.acl == ((), ())
    assert allowed_chunks(PUBLIC_CALLER.view(), metadata).tolist() == [True, False]


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ({"tenant": 3}, "tenant"),
        ({"groups": "engineering"}, "groups"),
        ({"groups": [""]}, "groups"),
        ({"access": ["Public"]}, "access"),
        ({"access": []}, "access"),
        ({"as_of": "yesterday"}, "as_of"),
        ({"role": "admin"}, "role"),
    ],
)
def test_bad_caller_entries_name_the_key(entry, key):
    with pytest.raises(FilterError) as caught:
        parse_caller("c", entry, "config['callers']['c']")
    assert f"config['callers']['c'][{key!r}]" in str(caught.value)


# --------------------------------------------------------------------------
# The callers section in the plan, fuzzed
# --------------------------------------------------------------------------


def bundled_config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.text(max_size=8),
    st.sampled_from(["acme", "", "public", "internal", "restricted", "2026-01-01", "Public"]),
    st.lists(st.sampled_from(["public", "internal", "restricted", "engineering", "", "x"]), max_size=4),
)
ENTRIES = st.one_of(
    VALUES,
    st.dictionaries(st.sampled_from(["tenant", "groups", "access", "as_of", "role"]), VALUES, max_size=4),
)
NAMES = st.sampled_from(["whole_corpus", "acme", "public_caller", "public", "Bad-Name", "x"])


@FUZZ
@given(st.dictionaries(NAMES, ENTRIES, max_size=3), st.sampled_from([None, "whole_corpus", "acme", "nobody"]))
def test_fuzzed_callers_sections_plan_or_fail_in_one_line(callers, answer_caller):
    config = bundled_config()
    config["callers"] = copy.deepcopy(callers)
    if answer_caller is None:
        config["answers"].pop("caller", None)
        config["grounding"].pop("caller", None)
    else:
        config["answers"]["caller"] = answer_caller
        config["grounding"]["caller"] = answer_caller
    try:
        plan = build_plan(config, SCHEMA, root=ROOT)
    except ConfigError as error:
        message = str(error)
        assert "\n" not in message
        assert "callers" in message or "caller" in message, message
        return
    chosen = plan.answer_callers["answers"]
    assert chosen == (answer_caller or PUBLIC_CALLER.name)
    view = plan.filters[chosen]
    # Every caller's view is a filter that names tenant and groups, parsed back to the same caller.
    caller = caller_from_view(chosen, parse_filter(view))
    assert caller is not None and caller.view().to_config() == view
    for name, entry in callers.items():
        expected = parse_caller(name, entry)
        assert plan.callers[name] == expected.view().to_config()


# --------------------------------------------------------------------------
# What an endpoint off this machine may receive
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("bundled", True),
        ("http://127.0.0.1:8080/v1", True),
        ("http://127.0.0.2:8080/v1", True),
        ("http://localhost:1/v1", True),
        ("http://[::1]:8000/v1", True),
        ("https://api.example.com/v1", False),
        ("http://10.0.0.5:8000/v1", False),
        ("https://127.0.0.1.example.com/v1", False),
    ],
)
def test_loopback_endpoints(url, loopback):
    assert loopback_endpoint(url) is loopback


def test_the_bundled_grid_pointed_off_the_machine_is_refused_naming_caller_and_levels():
    config = bundled_config()
    config["generators"]["smollm2"]["base_url"] = "https://api.example.com/v1"
    with pytest.raises(ConfigError) as caught:
        build_plan(config, SCHEMA, root=ROOT)
    message = str(caught.value)
    assert "\n" not in message
    assert "caller 'whole_corpus'" in message and "generator 'smollm2'" in message
    assert "public, internal, restricted" in message and "may receive only public" in message
    # Declared, it plans; and the plan of the bundled grid is unchanged otherwise.
    config["generators"]["smollm2"]["may_receive"] = ["public", "internal", "restricted"]
    plan = build_plan(config, SCHEMA, root=ROOT)
    assert plan.answer_callers["llm"] == "whole_corpus"


def test_a_public_caller_may_use_an_endpoint_that_receives_public_text():
    config = bundled_config()
    config["generators"]["smollm2"]["base_url"] = "https://api.example.com/v1"
    config["answers"]["llm"]["caller"] = "public_caller"
    config["grounding"]["caller"] = "public_caller"
    plan = build_plan(config, SCHEMA, root=ROOT)
    assert plan.answer_callers["llm"] == "public_caller" and plan.answer_callers["answers"] == "whole_corpus"


def test_may_receive_names_access_levels():
    entry = {"base_url": "https://api.example.com/v1", "may_receive": ["secret"]}
    problem = endpoint_receives_too_much("m", entry, "c", {"access": ["public"]})
    assert problem is not None and "'secret' is not an access level" in problem


REVOCATION_VALUES = st.one_of(
    st.sampled_from(["pluto", "ceres", "mars", "outreach", "astronomers", "", "nowhere"]),
    st.lists(st.sampled_from(["astronomers", "outreach", "x", ""]), max_size=3),
    st.integers(-1, 2),
    st.none(),
)


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(["groups", "revoke", "group", "delete", "corpus", "extra"]),
        REVOCATION_VALUES,
        max_size=6,
    )
)
def test_fuzzed_revocation_sections_plan_or_fail_in_one_line(section):
    config = bundled_config()
    config["revocation"] = copy.deepcopy(section)
    try:
        plan = build_plan(config, SCHEMA, root=ROOT)
    except ConfigError as error:
        message = str(error)
        assert "\n" not in message and "revocation" in message, message
        return
    revocation = plan.revocation
    assert revocation["group"] in revocation["groups"] and len(revocation["groups"]) >= 2
    assert revocation["revoke"] != revocation["delete"]
    assert f"{plan.results_folder}/revocation.csv" in plan.results()


def test_a_prompt_of_whole_documents_holds_only_the_readable_ones():
    from rag.answering.caller_sources import readable_documents
    from rag.documents.blocks import Block, Document

    def document(doc_id, access, tenant="", acl=()):
        return Document(doc_id, doc_id, "1", (Block((), "Text."),), access=access, tenant=tenant, acl=acl)

    documents = [
        document("open", "public"),
        document("acme", "public", "acme"),
        document("legal", "public", "", ("legal",)),
        document("secret", "restricted"),
    ]
    caller = Caller("c", "acme", frozenset({"engineering"}), frozenset({"public"}))
    assert [d.doc_id for d in readable_documents(documents, caller)] == ["open", "acme"]
    assert [d.doc_id for d in readable_documents(documents, PUBLIC_CALLER)] == ["open"]
