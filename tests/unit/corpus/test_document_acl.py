"""Tenants and groups for every source, and duplicate or conflicting metadata refused.

A document may say beside ``access`` which ``tenant`` it belongs to and which
groups (``acl``) may read it: in Markdown front matter, in HTML ``<meta>``
elements, in a BEIR record (or its ``metadata`` object), and through the
corpus's ``default_tenant`` and ``default_acl``. A value stated twice, or
two attributes of one element, is an error naming the file and line: the
lenient reading (last one wins) would let a restricted page turn public.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.corpus.articles import declared_html_policy, document_from_html_file
from rag.corpus.beir import BeirFormatError, parse_corpus
from rag.corpus.document_tables import documents_from_frame, write_parsed_documents
from rag.corpus.documents import document_defaults, parse_markdown
from rag.corpus.folders import read_file
from rag.documents.access_metadata import ACCESS_LEVELS, PRINCIPAL_NAME, DocumentDefaults, DocumentError
from rag.formats.files import read_yaml
from rag.pipeline.config import ConfigError, build_plan

PROJECT = Path(__file__).resolve().parents[3]
SCHEMA = read_yaml(PROJECT / "workflow" / "schemas" / "config.schema.yaml")
FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def markdown(front: str) -> str:
    return f"---\n{front}\n---\n# Vault\n\nThe vault code is kept here.\n"


def page(head: str) -> str:
    return f"<html><head>\n{head}\n</head><body><h1>Vault</h1><h2>Code</h2><p>Kept here.</p></body></html>"


# --------------------------------------------------------------------------
# Each source
# --------------------------------------------------------------------------


def test_front_matter_states_tenant_and_groups_sorted_without_repeats():
    document = parse_markdown(markdown("access: internal\ntenant: acme\nacl: [ops, eng, ops]"), "v.md")
    assert (document.access, document.tenant, document.acl) == ("internal", "acme", ("eng", "ops"))


def test_without_them_a_document_is_shared_by_every_tenant_and_group_and_stays_restricted():
    document = parse_markdown("# Vault\n\nText.\n", "v.md")
    assert (document.access, document.tenant, document.acl) == ("restricted", "", ())


@pytest.mark.parametrize(
    ("front", "message"),
    [
        ("tenant: acme\ntenant: acme", "v.md, line 3: key 'tenant' appears twice (first on line 2)"),
        ("acl: [eng]\nacl: [eng]", "v.md, line 3: key 'acl' appears twice (first on line 2)"),
        ("tenant: ''", "v.md: front matter 'tenant' must be a tenant name"),
        ("tenant: acme corp", "v.md: front matter 'tenant' must be a tenant name"),
        ("tenant: 7", "v.md: front matter 'tenant' must be a tenant name"),
        ("acl: eng", "v.md: front matter 'acl' must be a non-empty list of group names"),
        ("acl: []", "v.md: front matter 'acl' must be a non-empty list of group names"),
        ("acl: ['eng, ops']", "v.md: front matter 'acl': 'eng, ops' is not a group name"),
        ("acl: [eng, 1]", "v.md: front matter 'acl': 1 is not a group name"),
    ],
)
def test_front_matter_tenant_and_acl_are_strict(front, message):
    with pytest.raises(DocumentError) as error:
        parse_markdown(markdown(front), "v.md")
    assert str(error.value).startswith(message)


def test_html_meta_elements_state_tenant_and_groups():
    head = '<meta name="access" content="internal">\n<meta name="tenant" content="acme">\n'
    head += '<meta name="acl" content="ops, eng">'
    document, _ = document_from_html_file(page(head), "vault", "restricted", "vault.html")
    assert (document.access, document.tenant, document.acl) == ("internal", "acme", ("eng", "ops"))


def test_an_html_meta_name_in_another_case_is_a_lookalike_error():
    head = '<meta name="access" content="internal">\n<meta name="TENANT" content="acme">\n'
    with pytest.raises(DocumentError, match=r"^vault\.html, line 3: <meta name>: key 'TENANT' looks like"):
        document_from_html_file(page(head), "vault", "restricted", "vault.html")


@pytest.mark.parametrize(
    ("head", "message"),
    [
        (
            '<meta name="access" content="restricted" content="public">',
            "vault.html, line 2: <meta name=\"access\"> has two 'content' attributes",
        ),
        (
            '<meta name="access" name="description" content="public">',
            "vault.html, line 2: <meta name=\"access\"> has two 'name' attributes",
        ),
        (
            '<meta name="tenant" content="acme">\n<meta name="tenant" content="acme">',
            'vault.html, line 3: a second <meta name="tenant"> (the first is on line 2)',
        ),
        (
            '<meta name="acl" content="eng">\n\n<meta name="acl" content="ops">',
            'vault.html, line 4: a second <meta name="acl"> (the first is on line 2)',
        ),
        ('<meta name="acl" content="eng,,ops">', 'vault.html, line 2: <meta name="acl">'),
        ('<meta name="acl" content="">', 'vault.html, line 2: <meta name="acl">'),
        ('<meta name="tenant" content="a b">', 'vault.html, line 2: <meta name="tenant"> must be a tenant'),
    ],
)
def test_duplicate_or_conflicting_html_metadata_is_refused_with_file_and_line(head, message):
    with pytest.raises(DocumentError) as error:
        declared_html_policy(page(head), "vault.html")
    assert str(error.value).startswith(message)


def test_beir_records_state_them_at_the_top_level_or_in_metadata():
    lines = [
        json.dumps(
            {"_id": "a", "text": "A.", "metadata": {"access": "public", "tenant": "acme", "acl": ["b", "a"]}}
        ),
        json.dumps(
            {"_id": "b", "text": "B.", "access": "internal", "tenant": "globex", "metadata": {"url": "x"}}
        ),
        json.dumps({"_id": "c", "text": "C.", "metadata": None}),
    ]
    documents = parse_corpus(lines, "corpus.jsonl", "restricted", "shared-tenant", ("readers",))
    assert [(d.access, d.tenant, d.acl) for d in documents] == [
        ("public", "acme", ("a", "b")),
        ("internal", "globex", ("readers",)),
        ("restricted", "shared-tenant", ("readers",)),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"_id": "a", "text": "A.", "access": "restricted", "access": "public"}',
            "key 'access' appears twice",
        ),
        ('{"_id": "a", "text": "A.", "metadata": {"acl": ["x"], "acl": ["y"]}}', "key 'acl' appears twice"),
        ('{"_id": "a", "_id": "b", "text": "A."}', "key '_id' appears twice"),
        (
            '{"_id": "a", "text": "A.", "access": "public", "metadata": {"access": "restricted"}}',
            "'access' is given both at the top level and in 'metadata'",
        ),
        (
            '{"_id": "a", "text": "A.", "tenant": "x", "metadata": {"tenant": "x"}}',
            "'tenant' is given both at the top level and in 'metadata'",
        ),
        ('{"_id": "a", "text": "A.", "metadata": ["access"]}', "'metadata' must be a JSON object"),
        ('{"_id": "a", "text": "A.", "metadata": {"acl": "eng"}}', "'acl' must be a non-empty list"),
        ('{"_id": "a", "text": "A.", "metadata": {"tenant": ""}}', "'tenant' must be a tenant name"),
    ],
)
def test_duplicate_or_conflicting_beir_metadata_is_refused_with_file_and_line(line, message):
    with pytest.raises(BeirFormatError) as error:
        parse_corpus(['{"_id": "ok", "text": "Fine."}', line], "corpus.jsonl")
    assert str(error.value).startswith("corpus.jsonl:2: ") and message in str(error.value)


def test_plain_text_takes_the_corpus_defaults():
    defaults = DocumentDefaults("internal", "acme", ("eng",))
    document = read_file("The vault code.\n", "notes/vault.txt", "text", None, defaults).document
    assert (document.access, document.tenant, document.acl) == ("internal", "acme", ("eng",))


def test_the_parsed_table_carries_tenant_and_acl_columns(tmp_path):
    documents = [
        parse_markdown(markdown("tenant: acme\nacl: [eng]"), "a.md"),
        parse_markdown("# Open\n\nText.\n", "b.md"),
    ]
    write_parsed_documents(documents, tmp_path / "parsed.parquet")
    import pyarrow.parquet as pq

    schema = pq.read_schema(tmp_path / "parsed.parquet")
    assert str(schema.field("acl").type) == "list<element: string>"
    assert str(schema.field("tenant").type) in ("string", "large_string")
    frame = pd.read_parquet(tmp_path / "parsed.parquet")
    assert documents_from_frame(frame) == documents
    # A table written before the columns existed reads as shared, every group.
    old = documents_from_frame(frame.drop(columns=["tenant", "acl"]))
    assert [(document.tenant, document.acl) for document in old] == [("", ()), ("", ())]


# --------------------------------------------------------------------------
# Corpus defaults in the configuration
# --------------------------------------------------------------------------


def plan_with(tmp_path: Path, **settings_):
    (tmp_path / "documents").mkdir(exist_ok=True)
    (tmp_path / "documents" / "a.txt").write_text("Some text.\n")
    entry = {"source": "text", "documents": "documents", **settings_}
    config = {
        "corpora": {"notes": entry},
        "chunkers": {"s": {"kind": "sections"}},
        "retrievers": {"b": {"kind": "bm25"}},
        "evaluation": {"depth": 5, "ks": [1, 5]},
    }
    return build_plan(config, SCHEMA, root=tmp_path)


def test_default_tenant_and_acl_are_explicit_only(tmp_path):
    plan = plan_with(tmp_path)
    assert "default_tenant" not in plan.corpora["notes"] and "default_acl" not in plan.corpora["notes"]
    assert document_defaults(plan.corpora["notes"], "x") == DocumentDefaults("restricted", "", ())
    plan = plan_with(tmp_path, default_tenant="acme", default_acl=["ops", "eng"])
    assert document_defaults(plan.corpora["notes"], "x") == DocumentDefaults(
        "restricted", "acme", ("eng", "ops")
    )


@pytest.mark.parametrize(
    ("settings_", "key"),
    [
        ({"default_tenant": "acme corp"}, "default_tenant"),
        ({"default_tenant": ""}, "default_tenant"),
        ({"default_acl": []}, "default_acl"),
        ({"default_acl": "eng"}, "default_acl"),
        ({"default_acl": ["a,b"]}, "default_acl"),
        ({"default_tenant": "acme\n"}, "default_tenant"),
    ],
)
def test_bad_corpus_defaults_are_one_line_naming_the_key(tmp_path, settings_, key):
    with pytest.raises(ConfigError) as error:
        plan_with(tmp_path, **settings_)
    assert key in str(error.value) and "\n" not in str(error.value)


# --------------------------------------------------------------------------
# Seeded fuzzing of the new metadata surfaces
# --------------------------------------------------------------------------

NAMES = st.sampled_from(
    ["acme", "eng", "ops", "a.b", "x@y", "", " ", "a b", "a,b", "\u202e", "é", "x" * 120, "7"]
)
VALUES = st.one_of(NAMES, st.lists(NAMES, max_size=3), st.sampled_from([None, 0, True, {"a": 1}, 1.5]))
KEYS = st.sampled_from(["access", "tenant", "acl", "ACL", "Tenant", "description"])


def expected_acl(value: object) -> tuple[str, ...] | None:
    """The groups a valid ``acl`` value gives (an independent reading), else None."""
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(group, str) and re.fullmatch(r"\w[\w.:@+/-]{0,99}", group) for group in value):
        return None
    return tuple(sorted(set(value)))


@FUZZ
@given(st.lists(st.tuples(KEYS, VALUES), max_size=4), st.booleans())
def test_fuzzed_beir_metadata_parses_right_or_fails_naming_the_line(fields, nested):
    pairs = ", ".join(f"{json.dumps(key.lower())}: {json.dumps(value)}" for key, value in fields)
    record = (
        f'{{"_id": "d", "text": "Text.", "metadata": {{{pairs}}}}}'
        if nested
        else (f'{{"_id": "d", "text": "Text."{", " if pairs else ""}{pairs}}}')
    )
    try:
        [document] = parse_corpus(["", record], "corpus.jsonl", "restricted", "", ())
    except BeirFormatError as error:
        assert str(error).startswith("corpus.jsonl:2: ") and "\n" not in str(error)
        return
    stated: dict[str, object] = {}
    for key, value in fields:
        assert key.lower() not in stated, "a key given twice was accepted"
        stated[key.lower()] = value
    assert document.access == stated.get("access", "restricted") and document.access in ACCESS_LEVELS
    assert document.tenant == stated.get("tenant", "")
    assert document.tenant == "" or PRINCIPAL_NAME.fullmatch(document.tenant)
    assert document.acl == (expected_acl(stated["acl"]) if "acl" in stated else ())


@FUZZ
@given(st.lists(st.tuples(KEYS, NAMES, st.sampled_from(["", ' content="public"', ' name="x"'])), max_size=4))
def test_fuzzed_html_meta_parses_right_or_fails_naming_the_line(elements):
    lines = [f'<meta name="{key}" content="{value}"{extra}>' for key, value, extra in elements]
    html = page("\n".join(lines))
    try:
        policy = declared_html_policy(html, "p.html")
    except DocumentError as error:
        assert re.match(r"p\.html, line \d+: ", str(error)) and "\n" not in str(error)
        return
    stated: dict[str, str] = {}
    for key, value, extra in elements:
        if key.lower() in ("access", "tenant", "acl"):
            assert not extra, "an element with a doubled attribute was accepted"
            assert key.lower() not in stated, "a second element was accepted"
            stated[key.lower()] = value.strip()
    assert policy.access == stated.get("access", "restricted")
    assert policy.tenant == stated.get("tenant", "")
    if "acl" in stated:
        assert policy.acl == expected_acl([group.strip() for group in stated["acl"].split(",")])
    else:
        assert policy.acl == ()


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(["tenant", "acl", "access"]), VALUES), max_size=3))
def test_fuzzed_front_matter_tenant_and_acl_parse_right_or_fail_naming_the_file(fields):
    front = "\n".join(f"{key}: {json.dumps(value)}" for key, value in fields)
    try:
        document = parse_markdown(markdown(front), "v.md")
    except DocumentError as error:
        assert str(error).startswith("v.md") and "\n" not in str(error)
        return
    stated = dict(fields)
    assert len(stated) == len(fields)
    assert document.tenant == stated.get("tenant", "")
    assert document.acl == (expected_acl(stated["acl"]) if "acl" in stated else ())
    assert document.access == stated.get("access", "restricted")


@FUZZ
@given(
    st.dictionaries(st.sampled_from(["default_tenant", "default_acl", "default_access"]), VALUES, max_size=3)
)
def test_fuzzed_corpus_defaults_plan_right_or_fail_naming_the_key(tmp_path_factory, settings_):
    tmp_path = tmp_path_factory.mktemp("defaults")
    try:
        plan = plan_with(tmp_path, **settings_)
    except ConfigError as error:
        assert "\n" not in str(error) and any(key in str(error) for key in settings_)
        return
    defaults = document_defaults(plan.corpora["notes"], "x")
    assert defaults.tenant == settings_.get("default_tenant", "")
    assert defaults.acl == (expected_acl(settings_["default_acl"]) if "default_acl" in settings_ else ())
    assert defaults.access == settings_.get("default_access", "restricted")
