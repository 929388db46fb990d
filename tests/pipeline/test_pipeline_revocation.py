"""Revocation between two real runs of the workflow: what a caller lost never reaches it again.

The tiny corpus gets three documents about the zephyr turbine: Pluto's,
readable by the groups astronomers and outreach; Ceres's, readable by
outreach; and a shared public one. Run 1 answers as outreach through a stub
OpenAI-compatible server on 127.0.0.1 that logs every prompt, and ranks for
both callers. Between the runs outreach leaves Pluto's ACL and Ceres's file
is deleted, as a user would do it; nothing is forced. After run 2, for the
outreach caller: 0 chunks of either document in its rankings, prompts,
answers and traces, and `rag ask` as outreach over the same folder finds
neither. The astronomers still rank and ask Pluto, so the check could fail.
Run 3 changes only Eris's file, outreach leaving its ACL, by a copy that keeps
the older modification time (cp -p): its content digest, a parameter of the
parse job, reruns the parse, so outreach no longer ranks Eris.
(The in-memory measurement of the same contract is results/revocation.csv,
rag.ask.revocation.)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rag import cli
from tests.fault_server import FaultServer, reply
from tests.workdir import add_question, copy_project, make_workdir, read_config, snakemake, write_config

QUESTION = "How fast does the zephyr turbine spin?"
CALLERS = {
    "outreach": {"groups": ["outreach"], "access": ["public"]},
    "astronomer": {"groups": ["astronomers"], "access": ["public"]},
}
# doc id -> ACL in run 1 (None: no ACL, every caller of its level reads it).
BEFORE = {
    "pluto": ["astronomers", "outreach"],
    "ceres": ["outreach"],
    "shared": None,
    "eris": ["astronomers", "outreach"],
}
RETRIEVERS = ["bm25", "rrf_bm25_tfidf"]
LLM_ANSWERS = "work/llm_answers/tiny/development/model/sentences20/{retriever}.parquet"


def sentence(doc_id: str) -> str:
    return f"The zephyr turbine of {doc_id} spins at {len(doc_id) * 7} rotations per minute."


def document_text(doc_id: str, acl: list[str] | None) -> str:
    lines = [f"id: {doc_id}", "version: 1", "updated: 2026-01-05", "access: public"]
    lines += [f"acl: [{', '.join(acl)}]"] if acl else []
    return "---\n" + "\n".join(lines) + f"\n---\n\n# {doc_id}\n\n{sentence(doc_id)}\n"


def completion(content: str) -> bytes:
    body = {
        "choices": [{"message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3},
    }
    return json.dumps(body).encode()


def configure(workdir: Path, base_url: str) -> None:
    config = read_config(workdir)
    config["retrievers"] = {
        "bm25": {"kind": "bm25"},
        "tfidf": {"kind": "tfidf"},
        "rrf_bm25_tfidf": {"kind": "rrf", "components": ["bm25", "tfidf"]},
    }
    config["callers"] = CALLERS
    config["generators"] = {
        "extractive": {"kind": "extractive"},
        "model": {"kind": "llm", "base_url": base_url, "model": "stub", "timeout": 10},
    }
    config["answers"] = {
        "chunkers": ["sentences20"],
        "retrievers": ["bm25"],
        "k": 10,
        "caller": "outreach",
        "abstention": {"thresholds": [0.0, 1.0]},
        "summaries": {"window": 1000},
        "llm": {"chunkers": ["sentences20"], "retrievers": RETRIEVERS, "caller": "outreach"},
    }
    write_config(workdir, config)


def targets() -> list[str]:
    paths = [
        f"work/filtered/tiny/sentences20/{caller}/{retriever}.parquet"
        for caller in CALLERS
        for retriever in RETRIEVERS
    ]
    return paths + [LLM_ANSWERS.format(retriever=retriever) for retriever in RETRIEVERS]


def read_run(workdir: Path, server: FaultServer, before: int) -> dict:
    """What one run left: each caller's ranked documents, outreach's prompts, answers and traces."""
    chunks = pq.read_table(workdir / "work/chunks/tiny/sentences20.parquet", columns=["chunk_id", "doc_id"])
    by_chunk = dict(
        zip(chunks.column("chunk_id").to_pylist(), chunks.column("doc_id").to_pylist(), strict=True)
    )
    ranked = {}
    for caller in CALLERS:
        ranked[caller] = set()
        for retriever in RETRIEVERS:
            table = pq.read_table(workdir / f"work/filtered/tiny/sentences20/{caller}/{retriever}.parquet")
            ranked[caller] |= {by_chunk[chunk] for chunk in table.column("chunk_id").to_pylist()}
    prompts = "\n".join(
        message["content"]
        for request in server.received[before:]
        for message in json.loads(request.body)["messages"]
    )
    answers = "\n".join(
        pq.read_table(workdir / LLM_ANSWERS.format(retriever=retriever)).to_pandas().to_csv()
        for retriever in RETRIEVERS
    )
    traced = set()
    for path in sorted((workdir / "work/traces").rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            trace = json.loads(line)
            for key in ("candidates", "selected", "citations"):
                traced |= {by_chunk.get(chunk, f"unknown chunk {chunk}") for chunk in trace[key]}
    return {"ranked": ranked, "prompts": prompts, "answers": answers, "traced": traced, "by_chunk": by_chunk}


def ask(folder: Path, cache: Path, group: str, capsys) -> str:
    arguments = ["ask", QUESTION, "--documents", str(folder), "--cache", str(cache), "--group", group]
    arguments += ["--sources", "5", "--generator", "extractive"]
    assert cli.main(arguments) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("revocation")
    project = copy_project(root / "project")
    workdir = make_workdir(root / "work")
    documents = workdir / "documents"
    for doc_id, acl in BEFORE.items():
        (documents / f"{doc_id}.md").write_text(document_text(doc_id, acl))
    add_question(workdir, "zephyr-speed", QUESTION, "shared", sentence("shared"))
    # Cite every source, so a revoked chunk in a prompt would be an answer's citation too.
    server = FaultServer([reply(completion("It spins [1] [2] [3] [4] [5]."))])
    try:
        configure(workdir, server.url + "/v1")
        snakemake(workdir, "--cores", "1", *targets(), snakefile=project / "Snakefile")
        first = read_run(workdir, server, 0)
        # Between the runs: outreach leaves Pluto's ACL, Ceres's document is deleted.
        (documents / "pluto.md").write_text(document_text("pluto", ["astronomers"]))
        (documents / "ceres.md").unlink()
        before = len(server.received)
        snakemake(workdir, "--cores", "1", *targets(), snakefile=project / "Snakefile")
        second = read_run(workdir, server, before)
        # Run 3: outreach leaves Eris's ACL by a copy that keeps the older modification time (cp -p).
        eris = documents / "eris.md"
        kept = os.stat(eris)
        eris.write_text(document_text("eris", ["astronomers"]))
        os.utime(eris, ns=(kept.st_atime_ns, kept.st_mtime_ns))
        rankings = [path for path in targets() if path.startswith("work/filtered/")]
        snakemake(workdir, "--cores", "1", *rankings, snakefile=project / "Snakefile")
        third = read_rankings(workdir)
    finally:
        server.close()
    return workdir, first, second, third


def read_rankings(workdir: Path) -> dict[str, set[str]]:
    """Each caller's ranked documents."""
    chunks = pq.read_table(workdir / "work/chunks/tiny/sentences20.parquet", columns=["chunk_id", "doc_id"])
    by_chunk = dict(
        zip(chunks.column("chunk_id").to_pylist(), chunks.column("doc_id").to_pylist(), strict=True)
    )
    ranked = {}
    for caller in CALLERS:
        ranked[caller] = set()
        for retriever in RETRIEVERS:
            table = pq.read_table(workdir / f"work/filtered/tiny/sentences20/{caller}/{retriever}.parquet")
            ranked[caller] |= {by_chunk[chunk] for chunk in table.column("chunk_id").to_pylist()}
    return ranked


def test_an_edit_that_keeps_the_older_mtime_still_revokes(runs):
    _, first, second, third = runs
    assert "eris" in first["ranked"]["outreach"] and "eris" in second["ranked"]["outreach"]
    assert "eris" not in third["outreach"], "a cp -p edit was not read again: outreach still ranks Eris"
    assert "eris" in third["astronomer"]


def test_before_revocation_outreach_reads_both_documents(runs):
    _, first, _, _ = runs
    assert {"pluto", "ceres", "shared"} <= first["ranked"]["outreach"]
    assert sentence("pluto") in first["prompts"] and sentence("ceres") in first["prompts"]
    assert {"pluto", "ceres"} <= first["traced"]
    assert "ceres" not in first["ranked"]["astronomer"]  # ACLs were applied in run 1 too


def test_after_revocation_nothing_of_either_document_reaches_outreach(runs):
    _, _, second, _ = runs
    assert second["prompts"], "run 2 sent no prompt: the changed documents did not reach the answers"
    assert "pluto" not in second["ranked"]["outreach"] and "ceres" not in second["ranked"]["outreach"]
    assert "shared" in second["ranked"]["outreach"]
    for doc_id in ("pluto", "ceres"):
        assert sentence(doc_id) not in second["prompts"], doc_id
        assert sentence(doc_id) not in second["answers"], doc_id
    assert not {"pluto", "ceres"} & second["traced"], second["traced"]
    assert not any(doc.startswith("unknown chunk") for doc in second["traced"])
    assert "ceres" not in set(second["by_chunk"].values())  # the deleted document is gone from the chunks


def test_after_revocation_the_astronomers_still_read_pluto(runs):
    _, _, second, _ = runs
    assert "pluto" in second["ranked"]["astronomer"]


def test_rag_ask_after_revocation_follows_the_changed_folder(runs, tmp_path, capsys):
    workdir, _, _, _ = runs
    folder = workdir / "documents"
    cache = tmp_path / "ask-cache"
    outreach = ask(folder, cache, "outreach", capsys)
    astronomer = ask(folder, cache, "astronomers", capsys)
    assert sentence("pluto") not in outreach and "pluto" not in outreach.lower()
    assert "ceres" not in outreach.lower()
    assert "pluto" in astronomer.lower()
