"""``rag ask`` reaches every generator kind of the table of kinds, and compares no generator name.

Every kind of :data:`rag.kinds.GENERATOR_KINDS` is tried through the command:
an offline kind by its own name (``--generator KIND``), which answers; any
other as an entry of that kind in ./config.yaml, which answers or is refused
in one line (a language model at an endpoint that does not answer, a judge
that answers no question). A kind added to the table as the pipeline adds one
is thereby tried here without editing this file. The AST scan below finds any
comparison of a string with a generator kind's name left in rag/ask, so
dispatch goes through the table (rag.ask.generators) and nowhere else.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.answering.extractive import extract_answer
from rag.answering.prompts import build_prompt
from rag.ask.generators import OFFLINE_GENERATORS, fixed_threshold, measured_generators, measured_name
from rag.ask.index import quoted_or_abstained
from rag.chunking import Chunk
from rag.cli import main
from rag.kinds import GENERATOR_KINDS, behaviour

ASK_PACKAGE = Path(__file__).resolve().parents[3] / "rag" / "ask"
QUESTION = "Who discovered Uranus?"
# An endpoint nothing listens on: a language-model entry's request fails at once.
CLOSED_ENDPOINT = "http://127.0.0.1:9/v1"


@pytest.fixture(scope="module")
def index_cache(tmp_path_factory):
    """One index cache for every run of this module (the bundled documents, the spec's setup)."""
    return tmp_path_factory.mktemp("ask-cache")


def run_ask(arguments: list[str], capsys) -> tuple[int, str, list[str]]:
    status = main(["ask", QUESTION, "--retriever", "bm25_lsa_ivf", *arguments])
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("rag ask: error")]
    return status, captured.out, errors


@pytest.mark.parametrize("kind", sorted(GENERATOR_KINDS))
def test_every_generator_kind_of_the_table_reaches_rag_ask(kind, tmp_path, monkeypatch, capsys, index_cache):
    monkeypatch.chdir(tmp_path)
    cache = ["--cache", str(index_cache)]
    if kind in OFFLINE_GENERATORS:
        status, out, errors = run_ask(["--generator", kind, *cache], capsys)
        assert status == 0 and errors == []
        assert f"Answer ({kind}" in out and "Citation check" in out
        return
    entry = {"kind": kind}
    parameters = GENERATOR_KINDS[kind].parameters
    entry |= {"base_url": CLOSED_ENDPOINT} if "base_url" in parameters else {}
    entry |= {"timeout": 1} if "timeout" in parameters else {}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"generators": {f"my_{kind}": entry}}))
    status, out, errors = run_ask(["--generator", f"my_{kind}", *cache], capsys)
    assert "Traceback" not in out
    if status == 0:
        assert f"Answer (my_{kind})" in out
    else:
        assert status == 1 and len(errors) == 1 and f"--generator my_{kind}" in errors[0]


def test_offline_kinds_and_their_thresholds_come_from_the_table():
    offline = [name for name, kind in GENERATOR_KINDS.items() if kind.read is not None]
    assert list(OFFLINE_GENERATORS) == offline
    for name in offline:
        policy = GENERATOR_KINDS[name].threshold
        threshold = fixed_threshold(name)
        assert (threshold is None) == (policy == "cross_validated")
        assert (threshold == float("-inf")) == (policy is None)
    # What results/answers_heldout.csv measures: every offline kind that abstains, and each
    # kind that takes the MiniLM similarity once more with it.
    measured = measured_generators()
    assert [runs for _, runs, _, _ in measured] == [
        runs
        for name in offline
        if GENERATOR_KINDS[name].threshold is not None
        for runs in [name] * (1 + ("similarity" in GENERATOR_KINDS[name].parameters))
    ]
    for name, runs, _, similarity in measured:
        assert measured_name(runs, similarity) == name


WORDS = ["titan", "saturn", "haze", "moon", "probe", "orbit", "the", "of", "largest", "cold"]
SENTENCE = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(lambda words: " ".join(words) + ".")
CHUNK_TEXT = st.lists(SENTENCE, min_size=0, max_size=3).map(" ".join)


@settings(max_examples=150, derandomize=True, deadline=None)
@given(
    question=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(
        lambda words: " ".join(words) + "?"
    ),
    texts=st.lists(CHUNK_TEXT, min_size=0, max_size=4),
    idf=st.dictionaries(st.sampled_from(WORDS), st.floats(0.0, 5.0), max_size=len(WORDS)),
    threshold=st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, float("-inf")]),
)
def test_the_extractive_kind_through_its_read_answers_as_extract_answer(question, texts, idf, threshold):
    """rag ask answers an offline kind from its read (quoted_or_abstained); for the extractive
    generator that is, field for field, the spec's extract_answer at the same threshold."""
    chunks = [
        Chunk(f"c{number}", f"d{number}", "Saturn", "Moons", 0, len(text), text)
        for number, text in enumerate(texts)
        if text
    ]
    prompt = build_prompt(question, chunks)
    best = behaviour("extractive", "read")(prompt, idf, None)
    assert quoted_or_abstained(best, threshold) == extract_answer(prompt, idf, threshold=threshold)


def _kind_names_in(node: ast.AST) -> list[str]:
    """The generator kind names a comparison operand spells out (a string, or a literal collection)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in GENERATOR_KINDS else []
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [name for element in node.elts for name in _kind_names_in(element)]
    return []


def kind_name_comparisons(package: Path) -> list[str]:
    """Every comparison (==, !=, in, not in, a match case) of a string with a generator kind's name."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
            elif isinstance(node, ast.MatchValue):
                operands = [node.value]
            else:
                continue
            for name in (name for operand in operands for name in _kind_names_in(operand)):
                found.append(f"{path.name}:{node.lineno} {name}")
    return found


def test_rag_ask_compares_no_generator_kind_name():
    assert kind_name_comparisons(ASK_PACKAGE) == []


def test_the_scan_finds_a_comparison_that_would_dispatch_by_name(tmp_path):
    """The scan itself: each way of comparing with a kind's name is found, other strings are not."""
    (tmp_path / "dispatch.py").write_text(
        "def a(g):\n    return g == 'reader'\n\n"
        "def b(g):\n    return g in ('extractive', 'hosted')\n\n"
        "def c(g):\n    match g:\n        case 'llm':\n            return 1\n\n"
        "def d(g):\n    return g != 'hosted' and g == 'reader_minilm'\n",
        encoding="utf-8",
    )
    assert kind_name_comparisons(tmp_path) == [
        "dispatch.py:2 reader",
        "dispatch.py:5 extractive",
        "dispatch.py:9 llm",
    ]


def test_an_abstention_prints_no_check_lines_for_what_it_withheld():
    """The reader abstains on the bundled corpus for an off-corpus question: the Checks block has no
    Source or Type check line, and no rate line, since there is no answer to check."""
    from types import SimpleNamespace

    from rag.ask.cli import format_verdicts

    withheld = SimpleNamespace(faithful=True, responsive=True)
    report = SimpleNamespace(
        verdicts=None, withheld=withheld, reading=SimpleNamespace(best=SimpleNamespace(text="x"))
    )
    lines = format_verdicts(report, ["heldout_questions: right 15 of 17"])
    assert lines[1] == "  none: the generator abstained, so there is no answer to check"
    assert not any("check passed" in line or "check FAILED" in line or "right" in line for line in lines[1:])
