"""Revocation measured on the bundled corpus: nothing of a revoked or deleted document reaches a caller
who lost it, by any path (prefiltered ranking, rag ask's candidates, prompt, answer, trace), and the
callers who still may read it still find it, so the check can fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.ask.index import documents_and_question_sets
from rag.ask.revocation import (
    PLACES,
    Revocation,
    RevocationError,
    document_runs,
    leaks,
    measure_revocation,
    reread_by_content,
)

ROOT = Path(__file__).resolve().parents[3]
REVOCATION = Revocation(("astronomers", "outreach"), "pluto", "outreach", "ceres")


@pytest.fixture(scope="module")
def bundled():
    documents, sets = documents_and_question_sets(
        str(ROOT / "resources/solar_system/documents"),
        str(ROOT / "resources/solar_system/questions.yaml"),
        [],
    )
    return documents, [question.text for question in sets["development"]]


@pytest.fixture(scope="module")
def rows(bundled):
    documents, questions = bundled
    return measure_revocation(documents, questions, REVOCATION)


def test_the_runs_change_exactly_one_acl_and_delete_one_document(bundled):
    documents, _ = bundled
    runs = document_runs(documents, REVOCATION)
    before = {document.doc_id: document for document in runs["before"]}
    after = {document.doc_id: document for document in runs["after"]}
    assert set(before) - set(after) == {"ceres"}
    assert before["pluto"].acl == ("astronomers", "outreach") and after["pluto"].acl == ("astronomers",)
    assert all(after[doc_id] == before[doc_id] for doc_id in after if doc_id != "pluto")


def test_nothing_revoked_reaches_a_caller_who_lost_it(rows):
    after = {(row["caller"], row["document"]): row for row in rows if row["run"] == "after"}
    # Who may read what after the change, by the rule written out.
    assert after[("astronomers", "pluto")]["may_read"]
    assert not after[("outreach", "pluto")]["may_read"]
    assert not after[("astronomers", "ceres")]["may_read"] and not after[("outreach", "ceres")]["may_read"]
    assert leaks(rows) == []
    for key in [("outreach", "pluto"), ("astronomers", "ceres"), ("outreach", "ceres")]:
        assert all(after[key][place] == 0 for place in PLACES), key


def test_the_documents_were_found_before_and_still_are_by_who_may_read_them(rows):
    before = [row for row in rows if row["run"] == "before"]
    assert len(before) == 4 and all(row["may_read"] for row in before)
    for row in before:
        assert row["rankings"] > 0 and row["prompts"] > 0 and row["traces"] > 0, row
    kept = next(
        row
        for row in rows
        if row["run"] == "after" and row["caller"] == "astronomers" and row["document"] == "pluto"
    )
    assert kept["rankings"] > 0 and kept["prompts"] > 0 and kept["answers"] > 0


def test_a_leak_would_be_reported():
    row = {"run": "after", "caller": "c", "document": "d", "may_read": False, **dict.fromkeys(PLACES, 0)}
    assert leaks([row]) == []
    assert leaks([{**row, "prompts": 2}]) == ["c / d: prompts 2"]


@pytest.mark.parametrize(
    ("revocation", "key"),
    [
        (Revocation(("a", "b"), "nowhere", "a", "ceres"), "revoke"),
        (Revocation(("a", "b"), "pluto", "a", "nowhere"), "delete"),
        (Revocation(("a", "b"), "pluto", "c", "ceres"), "group"),
        (Revocation(("a",), "pluto", "a", "ceres"), "groups"),
    ],
)
def test_bad_settings_name_the_key(bundled, revocation, key):
    documents, questions = bundled
    with pytest.raises(RevocationError) as caught:
        measure_revocation(documents, questions, revocation)
    assert f"[{key!r}]" in str(caught.value)


def test_rag_ask_misses_its_index_cache_after_a_revocation_and_serves_nothing_revoked(tmp_path, capsys):
    """The same through rag ask's files and index cache: the changed ACL and the deleted file miss it."""
    import json
    import shutil

    from rag import cli

    folder = tmp_path / "documents"
    shutil.copytree(ROOT / "resources/solar_system/documents", folder)
    for name in ("pluto.md", "ceres.md"):
        path = folder / name
        path.write_text(
            path.read_text(encoding="utf-8").replace(
                "access: restricted\n", "access: restricted\nacl: [astronomers, outreach]\n", 1
            ),
            encoding="utf-8",
        )

    def ask(question: str, group: str, trace: str) -> str:
        arguments = ["ask", question, "--documents", str(folder), "--cache", str(tmp_path / "cache")]
        arguments += ["--retriever", "bm25_lsa_ivf", "--generator", "extractive", "--group", group]
        arguments += ["--access", "public,internal,restricted", "--trace", str(tmp_path / trace)]
        assert cli.main(arguments) == 0
        return capsys.readouterr().out

    questions = {"pluto": "What is the rotation period of Pluto?", "ceres": "What is the diameter of Ceres?"}
    for document, question in questions.items():
        output = ask(question, "outreach", "before.jsonl")
        assert f"{document.capitalize()} ›" in output.split("\nPrompt")[1]  # readable before
    path = folder / "pluto.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace("acl: [astronomers, outreach]", "acl: [astronomers]"),
        encoding="utf-8",
    )
    (folder / "ceres.md").unlink()
    for document, question in questions.items():
        output = ask(question, "outreach", "after.jsonl")
        assert "index: cache hit" not in output or document == "ceres"
        prompt = output.split("\nPrompt")[1].split("\nAnswer")[0]
        assert f"{document.capitalize()} ›" not in prompt
    traces = [json.loads(line) for line in (tmp_path / "after.jsonl").read_text().splitlines()]
    assert len(traces) == 2 and all(trace["filters"]["groups"] == ["outreach"] for trace in traces)
    # The astronomers still read Pluto, from the same (now cached) index.
    output = ask(questions["pluto"], "astronomers", "kept.jsonl")
    assert "index: cache hit" in output and "Pluto ›" in output.split("\nPrompt")[1]


COPIED = Revocation(("astronomers", "outreach"), "pluto", "outreach", "ceres", copied="neptune")


def test_an_edit_that_keeps_the_older_mtime_is_read_again_by_its_content(bundled):
    documents, _ = bundled
    runs = document_runs(documents, COPIED)
    reread = {document.doc_id: document for document in reread_by_content(runs["before"], runs["after"])}
    first = {document.doc_id: document for document in runs["before"]}
    assert reread["neptune"].acl == ("astronomers",) and first["neptune"].acl == ("astronomers", "outreach")
    assert all(reread[doc_id] is first[doc_id] for doc_id in reread if doc_id not in ("pluto", "neptune"))


def test_the_cp_p_row_shows_nothing_of_the_copied_document_reaches_outreach(bundled):
    documents, questions = bundled
    rows = measure_revocation(documents, questions[:20], COPIED)
    after = {(row["caller"], row["document"]): row for row in rows if row["run"] == "after"}
    copied = after[("outreach", "neptune")]
    assert "cp -p" in copied["change"] and not copied["may_read"]
    assert all(copied[place] == 0 for place in PLACES) and leaks(rows) == []
    before = {(row["caller"], row["document"]): row for row in rows if row["run"] == "before"}
    assert before[("outreach", "neptune")]["rankings"] > 0  # it was read before, so the check can fail
    assert after[("astronomers", "neptune")]["may_read"] and after[("astronomers", "neptune")]["rankings"] > 0
