"""One access model for every source (issue 27, family 1).

Markdown, plain text, HTML and BEIR corpora, each with ``default_access:
restricted`` (the schema's default, written out): a document that declares no
access level, or cannot (plain text), is restricted. No row of any ``public``
ranking comes from a restricted document, and the same documents are ranked
when restricted ones are allowed, so the test could fail.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import yaml

from tests.workdir import snakemake

ALPHA = "Alpha is a small rocky world close to its star. It completes one orbit every 88.2 days."
BETA = "Beta is a giant world of gas with 42 known moons. Its day lasts 10.7 hours."
GAMMA = "Gamma is a staff-only world of gas and rock. The vault code of Gamma is 4711."
QUESTIONS = [
    {
        "id": "alpha-orbit",
        "question": "How long does Alpha take to orbit its star?",
        "type": "fact",
        "evidence": [{"spans": [{"document": "alpha", "text": "It completes one orbit every 88.2 days."}]}],
    },
    {
        "id": "gas-world",
        "question": "Which world of gas has moons, and what is the vault code?",
        "type": "fact",
        "evidence": [{"spans": [{"document": "beta", "text": "42 known moons"}]}],
    },
]
# Per source: the documents a public ranking may show.
PUBLIC = {"markdown": {"alpha"}, "text": set(), "html": {"alpha"}, "beir": {"alpha"}}
ALL = {"alpha", "beta", "gamma"}


def write_corpora(workdir) -> None:
    markdown = workdir / "markdown"
    markdown.mkdir()
    (markdown / "alpha.md").write_text(f"---\naccess: public\n---\n\n# Alpha\n\n{ALPHA}\n")
    (markdown / "beta.md").write_text(f"---\naccess: restricted\n---\n\n# Beta\n\n{BETA}\n")
    (markdown / "gamma.md").write_text(f"# Gamma\n\n{GAMMA}\n")  # no front matter: the default
    text = workdir / "text"
    text.mkdir()
    for name, body in (("alpha", ALPHA), ("beta", BETA), ("gamma", GAMMA)):
        (text / f"{name}.txt").write_text(body + "\n")
    html = workdir / "html"
    html.mkdir()
    (html / "alpha.html").write_text(
        f'<html><head><meta name="access" content="public"><title>Alpha</title></head><body><p>{ALPHA}</p>'
    )
    (html / "beta.html").write_text(f"<title>Beta</title><p>{BETA}</p>")
    (html / "gamma.html").write_text(
        f'<meta name="access" content="restricted"><title>Gamma</title><p>{GAMMA}</p>'
    )
    beir = workdir / "beir"
    (beir / "qrels").mkdir(parents=True)
    records = [
        {"_id": "alpha", "title": "Alpha", "text": ALPHA, "access": "public"},
        {"_id": "beta", "title": "Beta", "text": BETA},
        {"_id": "gamma", "title": "Gamma", "text": GAMMA, "access": "restricted"},
    ]
    (beir / "corpus.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    queries = [{"_id": q["id"], "text": q["question"]} for q in QUESTIONS]
    (beir / "queries.jsonl").write_text("".join(json.dumps(query) + "\n" for query in queries))
    (beir / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nalpha-orbit\talpha\t1\ngas-world\tbeta\t1\n"
    )
    (workdir / "questions.yaml").write_text(yaml.safe_dump(QUESTIONS))


def test_restricted_documents_of_every_source_stay_out_of_public_rankings(tmp_path):
    workdir = tmp_path / "run"
    workdir.mkdir()
    write_corpora(workdir)
    folder = {"default_access": "restricted", "questions": "questions.yaml"}
    config = {
        "corpora": {
            "markdown": {"source": "markdown", "documents": "markdown", **folder},
            "text": {"source": "text", "documents": "text", **folder},
            "html": {"source": "html", "documents": "html", **folder},
            "beir": {"source": "beir", "folder": "beir", "default_access": "restricted", "depth": 100},
        },
        "chunkers": {"sentences20": {"kind": "sentences", "max_words": 20}},
        "retrievers": {"bm25": {"kind": "bm25"}},
        "filters": {"public": {"access": ["public"]}, "any_access": {"access": ["public", "restricted"]}},
        "evaluation": {"depth": 5, "ks": [1, 5]},
    }
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    targets = [
        f"work/filtered/{corpus}/sentences20/{name}/bm25.parquet"
        for corpus in PUBLIC
        for name in config["filters"]
    ]
    snakemake(workdir, "--cores", "1", *targets)
    for corpus, public in PUBLIC.items():
        chunks = pq.read_table(workdir / f"work/chunks/{corpus}/sentences20.parquet").to_pydict()
        doc_of = dict(zip(chunks["chunk_id"], chunks["doc_id"], strict=True))
        access = dict(zip(chunks["doc_id"], chunks["access"], strict=True))
        assert {doc for doc, level in access.items() if level == "public"} == public, corpus
        ranked = {}
        for name in config["filters"]:
            table = pq.read_table(workdir / f"work/filtered/{corpus}/sentences20/{name}/bm25.parquet")
            ranked[name] = {doc_of[chunk_id] for chunk_id in table.column("chunk_id").to_pylist()}
        # 0 rows of a restricted document in the public ranking ...
        assert ranked["public"] <= public, (corpus, ranked["public"])
        # ... and the restricted documents are ranked when allowed, so this could fail.
        assert ranked["any_access"] - public, (corpus, ranked["any_access"])
        assert ranked["any_access"] <= ALL
