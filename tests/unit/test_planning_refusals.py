"""One set of checks at planning (issue 42): what used to pass the plan and then fail or misbehave in a job.

Prompt templates take only plain ``{name}`` placeholders; a URL's port lies in
1-65535; a development question file is never listed again as held-out; a
retriever's ``chunkers`` is never empty; the held-out check needs the reader.
Each mistake is one ConfigError line naming its key.
"""

from __future__ import annotations

import copy
import re
import string
import urllib.parse

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.answering.config_checks import placeholder_problem, port_problem
from rag.pipeline.config import ConfigError, build_plan
from tests.workdir import PROJECT

SCHEMA = yaml.safe_load((PROJECT / "workflow/schemas/config.schema.yaml").read_text())
BUNDLED = yaml.safe_load((PROJECT / "config.yaml").read_text())
NAMES_A_KEY = re.compile(r"^config(\[[^\]]+\])+: ")
FUZZ = settings(max_examples=120, deadline=None, derandomize=True, database=None)


def plan_of(config: dict):
    return build_plan(copy.deepcopy(config), SCHEMA, PROJECT, ["config.yaml"], project_root=PROJECT)


def refusal(config: dict, key: str) -> str:
    with pytest.raises(ConfigError) as caught:
        plan_of(config)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(key + ": "), message
    return message


def with_llm(**entry) -> dict:
    config = copy.deepcopy(BUNDLED)
    config["generators"]["hosted"] = {
        "kind": "llm",
        "base_url": "http://127.0.0.1:8080/v1",
        "model": "m",
        **entry,
    }
    return config


# --------------------------------------------------------------------------
# Prompt templates: plain {name} placeholders only
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "user",
    [
        "{question:>999999999} {sources}",
        "{question!r} {sources}",
        "{question!s:10} {sources}",
        "{question} {sources:{question}}",
        "{question.upper} {sources}",
        "{question[0]} {sources}",
        "{0} {question} {sources}",
        "{} {question} {sources}",
    ],
)
def test_a_template_with_more_than_plain_placeholders_is_refused(user):
    message = refusal(with_llm(user=user), "config['generators']['hosted']['user']")
    assert "placeholder" in message


@pytest.mark.parametrize("key", ["system", "closed_book_system", "closed_book_user"])
def test_every_template_of_an_entry_is_checked(key):
    assert "format spec" in refusal(
        with_llm(**{key: "{question:>99999}"}), f"config['generators']['hosted'][{key!r}]"
    )


def test_plain_placeholders_and_literal_braces_are_kept():
    plan = plan_of(with_llm(user="Answer {{in JSON}}: {question}\n{sources}"))
    assert plan.generators["hosted"]["user"].startswith("Answer {{in JSON}}")


# --------------------------------------------------------------------------
# Ports
# --------------------------------------------------------------------------


@pytest.mark.parametrize("port", ["0", "65536", "70000", "99999999999999999999", "-1", "http"])
def test_a_port_outside_1_to_65535_is_refused(port):
    message = refusal(
        with_llm(base_url=f"http://127.0.0.1:{port}/v1"), "config['generators']['hosted']['base_url']"
    )
    assert "port" in message


def test_a_wikipedia_api_url_with_a_bad_port_is_refused():
    config = copy.deepcopy(BUNDLED)
    config["corpora"]["wiki"] = {
        "source": "wikipedia",
        "enabled": False,
        "api": "http://127.0.0.1:65536/w/api.php",
    }
    refusal(config, "config['corpora']['wiki']['api']")


@pytest.mark.parametrize("port", ["1", "8080", "65535"])
def test_a_port_inside_the_range_is_kept(port):
    assert (
        plan_of(with_llm(base_url=f"http://127.0.0.1:{port}/v1"))
        .generators["hosted"]["base_url"]
        .endswith(f":{port}/v1")
    )


# --------------------------------------------------------------------------
# Held-out questions, empty chunker lists, the reader the held-out check needs
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["resources/solar_system/questions.yaml", "./resources/solar_system/questions.yaml"]
)
def test_the_development_question_file_listed_as_held_out_is_refused(path):
    config = copy.deepcopy(BUNDLED)
    config["answers"]["heldout"]["questions"].append(path)
    message = refusal(config, "config['answers']['heldout']['questions']")
    assert "development question file of corpus 'solar_system'" in message


@pytest.mark.parametrize("retriever", ["funnel_bm25_lsa_10", "bm25"])
def test_an_empty_chunkers_list_is_refused(retriever):
    config = copy.deepcopy(BUNDLED)
    config["retrievers"][retriever]["chunkers"] = []
    refusal(config, f"config['retrievers'][{retriever!r}]['chunkers']")


def test_the_held_out_check_without_the_reader_is_refused_at_planning():
    config = copy.deepcopy(BUNDLED)
    config["answers"]["generators"] = ["extractive"]
    assert "list the reader" in refusal(config, "config['answers']['generators']")


def test_the_held_out_check_without_its_threshold_setting_is_refused_at_planning():
    config = copy.deepcopy(BUNDLED)
    config["answers"]["chunkers"] = ["sections"]
    config["answers"]["abstention"] = config["answers"]["summaries"] = {
        "chunker": "sections",
        "retriever": "bm25",
    }
    config["answers"]["llm"]["chunkers"] = ["sections"]
    assert "sentences100 + minilm or sentences100 + bm25" in refusal(config, "config['answers']['heldout']")


def test_the_extractive_generator_alone_without_a_held_out_check_plans():
    config = copy.deepcopy(BUNDLED)
    config["answers"]["generators"] = ["extractive"]
    del config["answers"]["heldout"]
    assert plan_of(config).answers["offline"] == ["extractive"]


# --------------------------------------------------------------------------
# Fuzz: templates and ports, checked against an independent reading
# --------------------------------------------------------------------------

PIECES = st.sampled_from(
    ["{question}", "{sources}", "text ", "{{", "}}", "{", "}", "{question:>9}", "{question!r}", "{0}", "{}"]
    + ["{question.x}", "{sources[0]}", "{question:{sources}}", "{ question}", "{question }", "{é}", "{_}"]
)


def _plain(template: str) -> bool:
    """Every field a bare identifier, read by a regular expression instead of string.Formatter."""
    stripped = template.replace("{{", "").replace("}}", "")
    fields = re.findall(r"\{([^{}]*)\}", stripped)
    leftover = re.sub(r"\{[^{}]*\}", "", stripped)
    return "{" not in leftover and "}" not in leftover and all(field.isidentifier() for field in fields)


@FUZZ
@given(st.lists(PIECES, min_size=0, max_size=6))
def test_any_template_is_plain_or_refused(pieces):
    template = "".join(pieces)
    problem = placeholder_problem(template)
    assert (problem is None) == _plain(template), (template, problem)
    if problem is None:
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
        rendered = template.format(**{name: "x" for name in names})
        assert len(rendered) <= len(template)


@FUZZ
@given(
    port=st.one_of(st.integers(-10, 10**6).map(str), st.sampled_from(["", "x", "8080x", "١٢", " 80", "+80"])),
    host=st.sampled_from(["127.0.0.1", "localhost", "[::1]", "example.invalid"]),
)
def test_any_port_is_in_range_or_refused(port, host):
    url = f"http://{host}:{port}/v1"
    problem = port_problem(url)
    digits = port.isascii() and port.isdigit()
    in_range = port == "" or (digits and 1 <= int(port) <= 65535)
    assert (problem is None) == in_range, (url, problem)
    if problem is None and port:
        assert urllib.parse.urlsplit(url).port == int(port)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(user=st.lists(PIECES, min_size=1, max_size=5).map("".join), port=st.integers(-1, 70000))
def test_an_llm_entry_plans_only_when_its_templates_and_port_are_sound(user, port):
    config = with_llm(user=user, base_url=f"http://127.0.0.1:{port}/v1")
    try:
        plan = plan_of(config)
    except ConfigError as error:
        message = str(error)
        assert "\n" not in message and NAMES_A_KEY.match(message), message
        return
    assert 1 <= port <= 65535 and _plain(user), (user, port)
    assert plan.generators["hosted"]["user"] == user
