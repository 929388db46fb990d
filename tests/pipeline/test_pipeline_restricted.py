"""Restricted documents never leak into filtered rankings, whatever their front matter looks like.

The tiny fixture gets copies of its restricted document whose front matter a
naive reader would miss: a UTF-8 byte-order mark, Windows line breaks, and a
header that is never closed. Every copy must either stay restricted (no row
of any ``access: [public]`` ranking comes from it) or stop the run with an
error naming the file.
"""

from __future__ import annotations

import pyarrow.parquet as pq

from tests.workdir import make_workdir, read_config, snakemake, write_config

SECRET_WORDS = "The vault code of the hidden moon Zeta is 4711, known to staff only."


def restricted_copy(doc_id: str) -> str:
    return (
        f"---\nid: {doc_id}\nversion: 1\nupdated: 2026-03-01\ntags: [secret]\naccess: restricted\n---\n\n"
        f"# Secret {doc_id}\n\n{SECRET_WORDS} Alpha orbits its star; Beta has moons.\n"
    )


def filtered_targets(workdir) -> list[str]:
    config = read_config(workdir)
    config["filters"] = {"public": {"access": ["public"]}, "any_access": {"access": ["public", "restricted"]}}
    write_config(workdir, config)
    return [
        f"work/filtered/tiny/{chunker}/{name}/bm25.parquet"
        for chunker in config["chunkers"]
        for name in config["filters"]
    ]


def secret_rows(workdir, targets, secret) -> dict[str, int]:
    """Per filter, the rows of its rankings that come from a secret document."""
    by_doc = {}
    for chunks in (workdir / "work/chunks/tiny").glob("*.parquet"):
        table = pq.read_table(chunks, columns=["chunk_id", "doc_id"]).to_pydict()
        by_doc.update(zip(table["chunk_id"], table["doc_id"], strict=True))
    rows: dict[str, int] = {}
    for target in targets:
        name = target.split("/")[-2]
        ranked = pq.read_table(workdir / target, columns=["chunk_id"]).column("chunk_id").to_pylist()
        assert ranked
        rows[name] = rows.get(name, 0) + sum(by_doc[chunk_id] in secret for chunk_id in ranked)
    return rows


def test_bom_and_crlf_restricted_copies_stay_restricted(tmp_path):
    workdir = make_workdir(tmp_path / "run")
    documents = workdir / "documents"
    (documents / "secret_bom.md").write_bytes(b"\xef\xbb\xbf" + restricted_copy("secret_bom").encode())
    (documents / "secret_crlf.md").write_bytes(restricted_copy("secret_crlf").replace("\n", "\r\n").encode())
    (documents / "secret_cr.md").write_bytes(restricted_copy("secret_cr").replace("\n", "\r").encode())
    targets = filtered_targets(workdir)
    snakemake(workdir, "--cores", "1", *targets)
    chunks = pq.read_table(workdir / "work/chunks/tiny/fixed10.parquet").to_pydict()
    secret = {"secret_bom", "secret_crlf", "secret_cr"}
    by_doc = dict(zip(chunks["chunk_id"], chunks["doc_id"], strict=True))
    # The secrets were indexed, as restricted documents, and their front matter is not text.
    assert {by_doc[c] for c in by_doc} >= secret
    for doc_id, access, text in zip(chunks["doc_id"], chunks["access"], chunks["text"], strict=True):
        if doc_id in secret:
            assert access == "restricted"
            assert "access:" not in text and "---" not in text
    rows = secret_rows(workdir, targets, secret)
    # Reachable when restricted documents are allowed, absent from every public ranking.
    assert rows["any_access"] > 0
    assert rows["public"] == 0


def test_front_matter_never_closed_stops_the_run_naming_the_file(tmp_path):
    workdir = make_workdir(tmp_path / "run")
    documents = workdir / "documents"
    (documents / "secret_bom.md").write_bytes(b"\xef\xbb\xbf" + restricted_copy("secret_bom").encode())
    unclosed = restricted_copy("secret_open").replace("---\n\n# Secret", "\n# Secret")
    (documents / "secret_open.md").write_text(unclosed, encoding="utf-8")
    targets = filtered_targets(workdir)
    result = snakemake(workdir, "--cores", "1", *targets, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "secret_open.md, line 1: front matter opened by '---' is never closed" in output
    for target in targets:
        assert not (workdir / target).exists()
    assert not (workdir / "work/parsed/tiny.parquet").exists()
