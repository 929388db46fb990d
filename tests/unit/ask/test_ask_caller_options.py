"""``rag ask``'s caller options follow the pipeline's rules.

``--group a,b`` is an error naming the flag; a drawn ``--tenant`` or
``--group`` is accepted exactly when it is a plain name as documents write
them (:data:`rag.documents.access_metadata.PRINCIPAL_NAME`, an independent statement of
the rule) and otherwise refused naming the flag; a ./config.yaml the
pipeline refuses (a caller given twice, a bad caller) is refused the same way.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag import cli
from rag.ask.cli import AskError, configured_callers
from rag.documents.access_metadata import PRINCIPAL_NAME
from rag.pipeline.config import ConfigError, check_duplicate_keys
from rag.retrieval.filters import FilterError, parse_caller

SEED = settings(max_examples=120, deadline=None, derandomize=True)
NAMES = st.one_of(
    st.from_regex(r"\w[\w.:@+/-]{0,20}", fullmatch=True),
    st.text(min_size=1, max_size=12),
    st.sampled_from(["a,b", "acme corp", " acme", "acme\n", "a\x1b[2J", "eng,", "x" * 101]),
)


def parsed(*options: str):
    return cli.build_parser().parse_args(["ask", "Why?", *options])


def test_a_comma_separated_group_is_an_error_naming_the_flag(capsys):
    with pytest.raises(SystemExit) as caught:
        parsed("--group", "astronomers,outreach")
    error = capsys.readouterr().err
    assert caught.value.code == 2 and "argument --group: 'astronomers,outreach' is a list" in error


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(NAMES, st.sampled_from(["--tenant", "--group"]))
def test_a_tenant_or_group_is_accepted_iff_it_is_a_plain_name(capsys, name, flag):
    plain = PRINCIPAL_NAME.fullmatch(name) is not None
    capsys.readouterr()
    try:
        arguments = parsed(flag, name)
    except SystemExit as caught:
        error = capsys.readouterr().err
        assert not plain and caught.code == 2 and f"argument {flag}: " in error
        assert len(error.strip().splitlines()) <= 2  # usage line and one error line
        return
    assert plain
    value = arguments.tenant if flag == "--tenant" else arguments.group[0]
    assert value == name
    # The pipeline's rule agrees: the same caller passes the config's check.
    key = "tenant" if flag == "--tenant" else "groups"
    parse_caller("c", {key: name if flag == "--tenant" else [name]}, "caller")


@SEED
@given(NAMES)
def test_the_pipeline_refuses_the_names_rag_ask_refuses(name):
    plain = PRINCIPAL_NAME.fullmatch(name) is not None
    for entry in ({"tenant": name}, {"groups": [name]}):
        if plain:
            parse_caller("c", entry, "caller")
        else:
            with pytest.raises(FilterError):
                parse_caller("c", entry, "caller")


def test_a_caller_given_twice_is_refused_as_the_pipeline_refuses_it(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config.yaml"
    config.write_text(
        "callers:\n  outreach:\n    groups: [outreach]\n  outreach:\n    groups: [astronomers]\n"
    )
    with pytest.raises(ConfigError) as pipeline:
        check_duplicate_keys([config])
    with pytest.raises(AskError) as ask:
        configured_callers(config)
    assert str(ask.value) == str(pipeline.value) and "line 4: duplicate key 'outreach'" in str(ask.value)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["ask", "Why?", "--caller", "outreach"]) == 1
    assert "config.yaml, line 4: duplicate key 'outreach'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("  staff:\n    tenant: acme corp\n", "'acme corp' is not a tenant name"),
        ("  staff:\n    groups: ['a,b']\n", "'a,b' is not a group name"),
        ("  staff:\n    groups: [eng]\n  other:\n    acl: [eng]\n", "unknown caller key"),
    ],
)
def test_every_caller_of_the_config_is_checked_not_only_the_one_asked_for(tmp_path, section, message):
    config = tmp_path / "config.yaml"
    config.write_text("callers:\n" + section)
    with pytest.raises(AskError, match=message):
        configured_callers(config)
