"""BEIR-format corpora: parsing with errors that name file and line, document-level
evaluation by hand and against ir-measures, and the pipeline end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import ir_measures
import pandas as pd
import pytest
import yaml
from ir_measures import R, nDCG

from rag.corpus.beir import (
    BeirFormatError,
    beir_questions,
    export_collection,
    paragraph_blocks,
    parse_corpus,
    parse_qrels,
    parse_queries,
)
from rag.corpus.beir_files import read_beir_collection, write_beir_collection
from rag.corpus.documents import parse_markdown
from rag.evaluation.document_relevance import collapse_to_documents, document_relevance
from rag.evaluation.metrics import ndcg_at, recall_at
from rag.labels import DocumentJudgement, evidence_judgements, locate_spans, parse_questions
from rag.question_tables import read_questions
from rag.text import analyze, split_sentences
from tests.workdir import FIXTURES, planned_jobs, snakemake

PROJECT = Path(__file__).resolve().parents[3]

# --------------------------------------------------------------------------
# A small collection whose BM25 rankings follow from its construction
# --------------------------------------------------------------------------

# Every sentence has six terms after analysis, so chunks (one sentence each
# under the sentences chunker, one document each under the sections chunker)
# have equal lengths and BM25 orders them by how often they hold the query
# terms and by those terms' idf.
DOCUMENTS = {
    "d1": ("Zebra notes", "Zebra zebra zebra graze savanna grass.\n\nZebra herds cross rivers every spring."),
    "d2": ("Plains life", "Zebra zebra stripes confuse biting flies. Lions hunt near muddy water holes."),
    "d3": ("Horses", "Wild horses roam open grassy plains. Zebra foals stand minutes past birth."),
    "d4": ("Big cats", "Lions sleep twenty hours every day. Cubs play near shady acacia trees."),
    "d5": ("Rhinos", "Rhinos wallow mud cooling thick skin. Oxpecker birds remove ticks quite gently."),
}
QUERIES = {
    "q1": "zebra",  # ranks d1 (3 zebras in a chunk), d2 (2), d3 (1)
    "q2": "Where do lions hunt?",  # ranks d2 (lions and hunt), d4 (lions)
    "q3": "volcano",  # matches nothing: an empty ranking
    "q4": "spring rivers",  # no judgements: not evaluated
    "q5": "oxpecker",  # ranks d5, judged with score 0: nothing relevant
}
QRELS = [
    ("q1", "d1", 1),
    ("q1", "d2", 0),
    ("q1", "d3", 2),
    ("q1", "d4", 1),
    ("q2", "d4", 2),
    ("q2", "d5", 1),
    ("q3", "d5", 1),
    ("q5", "d5", 0),
]
EXPECTED_RANKINGS = {"q1": ["d1", "d2", "d3"], "q2": ["d2", "d4"], "q3": [], "q5": ["d5"]}


def dcg(gains: list[float]) -> float:
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


# By hand: nDCG@10 = DCG of the ranking / DCG of the judged gains sorted
# (trec_eval's ideal), recall@100 = relevant documents ranked / relevant documents.
HAND_NDCG = {
    "q1": (1 / math.log2(2) + 0 / math.log2(3) + 2 / math.log2(4))
    / (2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)),
    "q2": (0 / math.log2(2) + 2 / math.log2(3)) / (2 / math.log2(2) + 1 / math.log2(3)),
    "q3": 0.0,  # nothing ranked
    "q5": 0.0,  # nothing relevant: 0, as trec_eval scores it
}
HAND_RECALL = {"q1": 2 / 3, "q2": 1 / 2, "q3": 0.0, "q5": 0.0}
EVALUATED = len(HAND_NDCG)


def write_collection(folder: Path, split: str = "test") -> Path:
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w") as handle:
        for doc_id, (title, text) in DOCUMENTS.items():
            handle.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with open(folder / "queries.jsonl", "w") as handle:
        for query_id, text in QUERIES.items():
            handle.write(json.dumps({"_id": query_id, "text": text}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{s}" for q, d, s in QRELS]
    (folder / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return folder


def test_the_collection_has_the_shape_the_hand_computation_assumes():
    for _, text in DOCUMENTS.values():
        for start, end in split_sentences(text):
            assert len(analyze(text[start:end])) == 6, text[start:end]


def test_hand_values_are_what_the_formulas_give():
    # The same numbers through rag.evaluation.metrics, with each relevant document a piece.
    judgements = [DocumentJudgement(*row) for row in QRELS]
    questions = beir_questions(
        parse_queries([json.dumps({"_id": q, "text": t}) for q, t in QUERIES.items()], "queries.jsonl"),
        judgements,
    )
    evaluated = [question for question in questions if question.answerable]
    assert [question.question_id for question in evaluated] == ["q1", "q2", "q3", "q5"]
    relevance = document_relevance(judgements, evaluated)
    for question_id, ranking in EXPECTED_RANKINGS.items():
        assert ndcg_at(ranking, relevance[question_id], 10) == pytest.approx(HAND_NDCG[question_id])
        assert recall_at(ranking, relevance[question_id], 100) == pytest.approx(HAND_RECALL[question_id])
    assert HAND_NDCG["q1"] == pytest.approx(2 / 3.130930, abs=1e-6)
    assert HAND_NDCG["q2"] == pytest.approx(1.261860 / 2.630930, abs=1e-6)


# --------------------------------------------------------------------------
# Parsing: every bad line names its file and line
# --------------------------------------------------------------------------


def test_documents_become_paragraph_blocks():
    documents = parse_corpus(
        [
            json.dumps(
                {"_id": "a", "title": "Title", "text": "First  paragraph\nstill first.\n\n  Second. "}
            ),
            "",
            json.dumps({"_id": 7, "title": "Only a title", "text": ""}),
        ],
        "corpus.jsonl",
    )
    assert [document.doc_id for document in documents] == ["a", "7"]
    assert [block.text for block in documents[0].blocks] == ["First paragraph still first.", "Second."]
    assert documents[0].title == "Title"
    assert [block.text for block in documents[1].blocks] == ["Only a title"]
    assert paragraph_blocks("one paragraph only") == paragraph_blocks("one   paragraph\nonly")


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"_id": "a", "text": "x"}', '{"_id": "b", "text": "y"'], "corpus.jsonl:2: not valid JSON"),
        (['{"_id": "a", "text": "x"}', "", '{"title": "t", "text": "y"}'], "corpus.jsonl:3: missing '_id'"),
        (['{"_id": "", "text": "x"}'], "corpus.jsonl:1: '_id' is empty"),
        (['{"_id": ["a"], "text": "x"}'], "corpus.jsonl:1: '_id' must be a string"),
        (['["a", "x"]'], "corpus.jsonl:1: expected a JSON object"),
        (['{"_id": "a", "text": 5}'], "corpus.jsonl:1: 'text' must be a string"),
        (
            ['{"_id": "a", "title": "", "text": " "}'],
            "corpus.jsonl:1: document 'a' has neither title nor text",
        ),
        (
            ['{"_id": "a", "text": "x"}', '{"_id": "a", "text": "y"}'],
            "corpus.jsonl:2: document id 'a' already",
        ),
        ([""], "corpus.jsonl: no documents"),
    ],
)
def test_bad_corpus_lines_name_file_and_line(lines, message):
    with pytest.raises(BeirFormatError) as error:
        parse_corpus(lines, "corpus.jsonl")
    assert str(error.value).startswith(message)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"_id": "q1", "text": "x"}', "{oops}"], "queries.jsonl:2: not valid JSON"),
        (['{"text": "x"}'], "queries.jsonl:1: missing '_id'"),
        (['{"_id": "q1", "text": "  "}'], "queries.jsonl:1: query 'q1' has no text"),
        (
            ['{"_id": "q1", "text": "x"}', '{"_id": "q1", "text": "y"}'],
            "queries.jsonl:2: query id 'q1' already",
        ),
    ],
)
def test_bad_query_lines_name_file_and_line(lines, message):
    with pytest.raises(BeirFormatError) as error:
        parse_queries(lines, "queries.jsonl")
    assert str(error.value).startswith(message)


HEADER = "query-id\tcorpus-id\tscore"


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["q1\td1\t1"], "qrels/test.tsv:1: expected a header line"),
        ([HEADER, "q1\td1\t1", "q1\td9\t1"], "qrels/test.tsv:3: unknown document id 'd9'"),
        ([HEADER, "q9\td1\t1"], "qrels/test.tsv:2: unknown query id 'q9'"),
        ([HEADER, "q1\td1"], "qrels/test.tsv:2: expected three tab-separated fields"),
        ([HEADER, "q1\td1\thigh"], "qrels/test.tsv:2: score 'high' is not a non-negative integer"),
        ([HEADER, "q1\td1\t-1"], "qrels/test.tsv:2: score '-1'"),
        (
            [HEADER, "q1\td1\t1", "", "q1\td1\t2"],
            "qrels/test.tsv:4: query 'q1' and document 'd1' are already judged",
        ),
        ([], "qrels/test.tsv: empty file"),
    ],
)
def test_bad_qrels_lines_name_file_and_line(lines, message):
    with pytest.raises(BeirFormatError) as error:
        parse_qrels(lines, "qrels/test.tsv", {"d1", "d2"}, {"q1", "q2"})
    assert str(error.value).startswith(message)


def test_qrels_accept_spaces_and_windows_line_ends():
    judgements = parse_qrels(
        [HEADER + "\r\n", "q1 d1 2\r\n", "q2\td2\t0\r\n"], "t.tsv", {"d1", "d2"}, {"q1", "q2"}
    )
    assert judgements == [DocumentJudgement("q1", "d1", 2), DocumentJudgement("q2", "d2", 0)]


def test_reading_files_names_them(tmp_path):
    folder = write_collection(tmp_path / "collection")
    documents, questions, judgements = read_beir_collection(
        folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / "test.tsv"
    )
    assert len(documents) == 5 and len(questions) == 5 and len(judgements) == len(QRELS)
    assert {q.question_id for q in questions if q.answerable} == {"q1", "q2", "q3", "q5"}
    with pytest.raises(FileNotFoundError, match="qrels/dev.tsv"):
        read_beir_collection(folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / "dev.tsv")
    corpus = folder / "corpus.jsonl"
    corpus.write_bytes(corpus.read_bytes() + b'{"_id": "d6", "text": "caf\xe9"}\n')
    with pytest.raises(ValueError, match=r"corpus.jsonl:6: not valid UTF-8"):
        read_beir_collection(corpus, folder / "queries.jsonl", folder / "qrels" / "test.tsv")


# --------------------------------------------------------------------------
# Document-level relevance
# --------------------------------------------------------------------------


def test_collapse_keeps_each_document_at_its_best_chunk():
    document_of = {"a1": "A", "a2": "A", "b1": "B", "c1": "C"}
    assert collapse_to_documents(["a2", "b1", "a1", "c1"], document_of) == ["A", "B", "C"]
    assert collapse_to_documents([], document_of) == []
    with pytest.raises(ValueError, match="'z9'"):
        collapse_to_documents(["a1", "z9"], document_of)


def test_zero_scores_are_not_relevant():
    questions = parse_questions([{"id": "q", "question": "x", "evidence": [{"spans": ["y"]}]}], "inline")
    judgements = [DocumentJudgement("q", "A", 0), DocumentJudgement("q", "B", 3)]
    assert document_relevance(judgements, questions) == {"q": {"B": {"B": 3.0}}}
    # Only zeros: every metric is 0, even for a ranking that holds the judged document.
    nothing = document_relevance(judgements[:1], questions)["q"]
    assert ndcg_at(["A"], nothing, 10) == 0.0 and recall_at(["A"], nothing, 100) == 0.0


def test_evidence_spans_judge_the_documents_that_hold_them():
    fixture = FIXTURES / "tiny"
    documents = [
        parse_markdown(path.read_text(), path.name) for path in sorted((fixture / "documents").glob("*.md"))
    ]
    questions = [
        q
        for q in parse_questions(yaml.safe_load((fixture / "questions.yaml").read_text()), "q")
        if q.answerable
    ]
    judgements = evidence_judgements(questions, locate_spans(questions, documents))
    # Independently: every document a span names, with its piece's gain (the largest when several).
    expected: dict[tuple[str, str], int] = {}
    for item in yaml.safe_load((fixture / "questions.yaml").read_text())["questions"]:
        for piece in item.get("evidence", []):
            for span in piece["spans"]:
                key = (item["id"], span["document"])
                expected[key] = max(expected.get(key, 0), piece.get("gain", 1))
    assert {(j.question_id, j.doc_id): j.gain for j in judgements} == expected


# --------------------------------------------------------------------------
# The export of a labelled corpus
# --------------------------------------------------------------------------


@pytest.mark.parametrize("unit", ["documents", "sections", "paragraphs"])
def test_export_round_trips_and_judges_the_units_holding_evidence(tmp_path, unit):
    fixture = FIXTURES / "tiny"
    documents = [
        parse_markdown(path.read_text(), path.name) for path in sorted((fixture / "documents").glob("*.md"))
    ]
    questions = parse_questions(yaml.safe_load((fixture / "questions.yaml").read_text()), "q")
    locations = locate_spans(questions, documents)
    collection = export_collection(documents, questions, locations, unit)
    files = write_beir_collection(tmp_path / unit, collection, "test")
    parsed, parsed_questions, judgements = read_beir_collection(
        files["corpus"], files["queries"], files["qrels"]
    )

    assert [q.question_id for q in parsed_questions] == [q.question_id for q in questions if q.answerable]
    assert all(q.answerable for q in parsed_questions)
    # Every paragraph of the corpus is in exactly one exported document.
    exported_paragraphs = sorted(block.text for document in parsed for block in document.blocks)
    assert exported_paragraphs == sorted(block.text for document in documents for block in document.blocks)
    # Every judged unit holds a span of one of the question's pieces; every located span is in a judged unit.
    texts = {document.doc_id: document.full_text for document in parsed}
    spans = {q.question_id: [s.text for e in q.evidence for s in e.spans] for q in questions}
    for judgement in judgements:
        assert judgement.gain >= 1
        assert any(span in texts[judgement.doc_id] for span in spans[judgement.question_id])
    judged = {(j.question_id, j.doc_id) for j in judgements}
    for question in questions:
        for piece in question.evidence:
            for span in piece.spans:
                holders = [doc_id for doc_id, text in texts.items() if span.text in text]
                assert holders and all((question.question_id, doc_id) in judged for doc_id in holders)


# --------------------------------------------------------------------------
# The pipeline end to end
# --------------------------------------------------------------------------


def beir_config(extra_corpora: dict | None = None) -> dict:
    return {
        "corpora": {"zoo": {"source": "beir", "folder": "zoo"}, **(extra_corpora or {})},
        "chunkers": {
            "sentences8": {"kind": "sentences", "max_words": 8, "header": False},
            "whole": {"kind": "sections", "header": False},
        },
        "retrievers": {
            "bm25": {"kind": "bm25"},
            # The stemmed baseline, a fusion and a learned fusion, on whole documents only.
            "bm25_stem": {"kind": "bm25", "k1": 0.9, "b": 0.4, "stem": True, "chunkers": ["whole"]},
            "tfidf": {"kind": "tfidf", "chunkers": ["whole"]},
            "rrf_bm25_stem_tfidf": {
                "kind": "rrf",
                "components": ["bm25_stem", "tfidf"],
                "chunkers": ["whole"],
            },
            "learned_bm25_stem_tfidf": {
                "kind": "learned",
                "components": ["bm25_stem", "tfidf"],
                "folds": 2,
                "chunkers": ["whole"],
            },
        },
        "evaluation": {"depth": 100, "ks": [1, 5]},
    }


@pytest.fixture(scope="module")
def built(build_pipeline):
    """The collection, the tiny Markdown corpus at both levels, built once."""

    def prepare(workdir: Path) -> None:
        write_collection(workdir / "zoo")
        config = beir_config(
            {
                "tiny": {"source": "markdown", "documents": "documents", "questions": "questions.yaml"},
                "tiny_documents": {
                    "source": "markdown",
                    "documents": "documents",
                    "questions": "questions.yaml",
                    "level": "document",
                },
            }
        )
        (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    build = build_pipeline("beir", prepare=prepare)
    return build.project, build.workdir


def pipeline_runs(workdir: Path, corpus: str, chunker: str, retriever: str = "bm25") -> dict[str, list[str]]:
    """Document rankings collapsed here, independently of the pipeline's code."""
    chunks = pd.read_parquet(workdir / f"work/chunks/{corpus}/{chunker}.parquet")
    document_of = dict(zip(chunks.chunk_id, chunks.doc_id, strict=True))
    ranking = pd.read_parquet(workdir / f"work/rankings/{corpus}/{chunker}/{retriever}.parquet")
    runs: dict[str, list[str]] = {}
    for row in ranking.sort_values(["question_id", "rank"]).itertuples():
        documents = runs.setdefault(row.question_id, [])
        if document_of[row.chunk_id] not in documents:
            documents.append(document_of[row.chunk_id])
    return runs


def test_beir_rankings_are_the_constructed_ones(built):
    _, workdir = built
    for chunker in ("sentences8", "whole"):
        runs = pipeline_runs(workdir, "zoo", chunker)
        assert {q: runs.get(q, []) for q in EXPECTED_RANKINGS} == EXPECTED_RANKINGS, chunker
    sentences = pd.read_parquet(workdir / "work/chunks/zoo/sentences8.parquet")
    assert (sentences.doc_id == "d1").sum() == 2  # so the collapse had something to do


def test_beir_table_reproduces_the_hand_computed_values(built):
    _, workdir = built
    table = pd.read_csv(workdir / "results/beir_metrics.csv")
    zoo = table[(table.corpus == "zoo") & (table.retriever == "bm25")]
    assert sorted(zoo.chunker) == ["sentences8", "whole"]
    for row in zoo.itertuples():
        assert row.questions == EVALUATED  # q4 has no judgements
        assert row.ndcg_at_10 == pytest.approx(sum(HAND_NDCG.values()) / EVALUATED, abs=1e-6)
        assert row.recall_at_100 == pytest.approx(sum(HAND_RECALL.values()) / EVALUATED, abs=1e-6)
        assert row.documents_ranked == pytest.approx((3 + 2 + 0 + 1) / EVALUATED, abs=1e-6)
    tidy = pd.read_csv(workdir / "results/document_metrics.csv")
    ndcg10 = tidy[
        (tidy.corpus == "zoo") & (tidy.retriever == "bm25") & (tidy.metric == "ndcg") & (tidy.k == 10)
    ]
    assert ndcg10["value"].tolist() == pytest.approx([sum(HAND_NDCG.values()) / EVALUATED] * 2, abs=1e-6)
    assert set(tidy.k.dropna().astype(int)) == {1, 5, 10, 100}


def trec_values(runs: dict[str, list[str]], qrels: list[tuple[str, str, int]]) -> dict[str, dict[str, float]]:
    """ir-measures (pytrec_eval) per query; scores fall with rank so trec_eval keeps our order."""
    run = [
        ir_measures.ScoredDoc(query_id, doc_id, float(1000 - rank))
        for query_id, documents in runs.items()
        for rank, doc_id in enumerate(documents)
    ]
    judged = [ir_measures.Qrel(q, d, s) for q, d, s in qrels]
    values: dict[str, dict[str, float]] = {}
    for metric in ir_measures.iter_calc([nDCG @ 10, R @ 100], judged, run):
        values.setdefault(metric.query_id, {})[str(metric.measure)] = metric.value
    return values


def test_beir_values_agree_with_ir_measures(built):
    _, workdir = built
    table = pd.read_csv(workdir / "results/beir_metrics.csv")
    for chunker in ("sentences8", "whole"):
        runs = pipeline_runs(workdir, "zoo", chunker)
        values = trec_values(runs, QRELS)
        # ir-measures scores every judged query, the unranked q3 as 0 like the pipeline.
        assert set(values) == set(HAND_NDCG)
        for query_id in HAND_NDCG:
            assert values[query_id]["nDCG@10"] == pytest.approx(HAND_NDCG[query_id], abs=1e-9)
            assert values[query_id]["R@100"] == pytest.approx(HAND_RECALL[query_id], abs=1e-9)
        run = [
            ir_measures.ScoredDoc(q, d, float(1000 - rank))
            for q, ds in runs.items()
            for rank, d in enumerate(ds)
        ]
        means = ir_measures.calc_aggregate(
            [nDCG @ 10, R @ 100], [ir_measures.Qrel(*row) for row in QRELS], run
        )
        row = table[(table.corpus == "zoo") & (table.chunker == chunker) & (table.retriever == "bm25")].iloc[
            0
        ]
        assert row.ndcg_at_10 == pytest.approx(means[nDCG @ 10], abs=1e-6)
        assert row.recall_at_100 == pytest.approx(means[R @ 100], abs=1e-6)


def test_markdown_corpus_at_document_level_agrees_with_ir_measures(built):
    _, workdir = built
    # Qrels from the question file itself: the documents its spans name.
    items = yaml.safe_load((workdir / "questions.yaml").read_text())["questions"]
    gains: dict[tuple[str, str], int] = {}
    for item in items:
        for piece in item.get("evidence", []):
            for span in piece["spans"]:
                key = (item["id"], span["document"])
                gains[key] = max(gains.get(key, 0), piece.get("gain", 1))
    qrels = [(q, d, g) for (q, d), g in gains.items()]
    answerable = sorted({q for q, _, _ in qrels})
    table = pd.read_csv(workdir / "results/beir_metrics.csv")
    for chunker in ("sentences8", "whole"):
        runs = pipeline_runs(workdir, "tiny_documents", chunker)
        values = trec_values({q: runs.get(q, []) for q in answerable}, qrels)
        of_corpus = table[(table.corpus == "tiny_documents") & (table.retriever == "bm25")]
        row = of_corpus[of_corpus.chunker == chunker].iloc[0]
        assert row.questions == len(answerable)
        ndcg = [values.get(q, {}).get("nDCG@10", 0.0) for q in answerable]
        recall = [values.get(q, {}).get("R@100", 0.0) for q in answerable]
        assert row.ndcg_at_10 == pytest.approx(sum(ndcg) / len(ndcg), abs=1e-6)
        assert row.recall_at_100 == pytest.approx(sum(recall) / len(recall), abs=1e-6)


def test_each_level_has_its_own_table(built):
    _, workdir = built
    metrics = pd.read_csv(workdir / "results/metrics.csv")
    assert set(metrics.corpus) == {"tiny"}
    assert set(pd.read_csv(workdir / "results/beir_metrics.csv").corpus) == {"zoo", "tiny_documents"}
    cuts = pd.read_csv(workdir / "results/evidence_cuts.csv")
    assert set(cuts.corpus) == {"tiny", "tiny_documents"}
    by_type = pd.read_csv(workdir / "results/questions_by_type.csv")
    zoo = by_type[by_type.corpus == "zoo"].set_index("type")
    # Only the judged queries are kept and ranked (queries: judged, the default): q4 is not.
    assert zoo.loc["general", "questions"] == EVALUATED and zoo.loc["(answerable)", "questions"] == EVALUATED
    judged = [query for query in QUERIES if query != "q4"]
    assert [q.question_id for q in read_questions(workdir / "work/questions/zoo.parquet")] == judged


def test_rerun_and_a_new_split_rerun_only_the_beir_branch(built):
    project, workdir = built
    result = snakemake(workdir, "-n", "--cores", "1", snakefile=project / "Snakefile")
    assert "Nothing to be done" in result.stdout + result.stderr
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    (workdir / "zoo" / "qrels" / "dev.tsv").write_text((workdir / "zoo" / "qrels" / "test.tsv").read_text())
    original = (workdir / "config.yaml").read_text()
    try:
        config["corpora"]["zoo"]["split"] = "test"  # restating the default changes nothing
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
        result = snakemake(workdir, "-n", "--cores", "1", snakefile=project / "Snakefile")
        assert "Nothing to be done" in result.stdout + result.stderr
        config["corpora"]["zoo"]["split"] = "dev"
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
        jobs = planned_jobs(workdir, project / "Snakefile")
        assert jobs["parse_beir"] == 1 and jobs["evaluate_documents"] == 1
        assert not {"parse_markdown", "label", "document_qrels", "evaluate"} & set(jobs)
    finally:
        (workdir / "config.yaml").write_text(original)


# --------------------------------------------------------------------------
# Bad input in the pipeline
# --------------------------------------------------------------------------


def run_broken(tmp_path: Path, built, change) -> str:
    project, _ = built
    workdir = tmp_path / "work"
    write_collection(workdir / "zoo")
    config = beir_config()
    change(workdir, config)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, "--cores", "1", snakefile=project / "Snakefile", check=False)
    assert result.returncode != 0
    return result.stdout + result.stderr


def test_a_broken_corpus_line_fails_naming_file_and_line(tmp_path, built):
    def change(workdir, config):
        with open(workdir / "zoo" / "corpus.jsonl", "a") as handle:
            handle.write('{"_id": "d6", "title": "Broken", "text": "no closing brace"\n')

    output = run_broken(tmp_path, built, change)
    assert "zoo/corpus.jsonl:6: not valid JSON" in output


def test_an_unknown_document_in_the_qrels_fails_naming_file_and_line(tmp_path, built):
    def change(workdir, config):
        with open(workdir / "zoo" / "qrels" / "test.tsv", "a") as handle:
            handle.write("q2\td42\t1\n")

    output = run_broken(tmp_path, built, change)
    assert f"zoo/qrels/test.tsv:{len(QRELS) + 2}: unknown document id 'd42'" in output


def test_a_beir_corpus_is_measured_like_the_others(built):
    """Intervals, significance, the summary, its README section and learned fusion, as at chunk level."""
    _, workdir = built
    results = workdir / "results"
    beir = pd.read_csv(results / "beir_metrics.csv")
    zoo = beir[beir.corpus == "zoo"]
    assert {"bm25", "bm25_stem", "rrf_bm25_stem_tfidf", "learned_bm25_stem_tfidf"} <= set(zoo.retriever)
    intervals = pd.read_csv(results / "metrics_ci.csv")
    ndcg = intervals[(intervals.corpus == "zoo") & (intervals.metric == "ndcg") & (intervals.k == 10)]
    assert len(ndcg) == 2 + 4  # bm25 on both chunkers, the four others on whole documents
    assert (ndcg.ci_low <= ndcg.value).all() and (ndcg.value <= ndcg.ci_high).all()
    assert set(ndcg.questions) == {EVALUATED}
    # The interval's mean is the table's mean, computed apart.
    bm25 = ndcg[(ndcg.chunker == "whole") & (ndcg.retriever == "bm25")].iloc[0]
    assert bm25.value == pytest.approx(sum(HAND_NDCG.values()) / EVALUATED, abs=1e-6)
    significance = pd.read_csv(results / "significance.csv")
    assert set(significance[significance.corpus == "zoo"].retriever) == {
        "bm25_stem",
        "tfidf",
        "rrf_bm25_stem_tfidf",
        "learned_bm25_stem_tfidf",
    }
    summary = pd.read_csv(results / "summary.csv")
    assert len(summary[summary.corpus == "zoo"]) == 2 + 4
    assert "## zoo" in (results / "README.md").read_text()
    # Four judged queries are fewer than a choice needs: plain RRF, with the warning in the job's log.
    learned = pd.read_csv(results / "learned_fusion.csv")
    of_zoo = learned[learned.corpus == "zoo"]
    assert set(of_zoo.chunker) == {"whole"} and set(of_zoo.choice) == {"plain rrf"}
    # q3 matches no document, so no component ranks it: three labelled questions are fused.
    assert set(of_zoo.component) == {"bm25_stem", "tfidf"} and set(of_zoo.held_out_labelled) == {
        EVALUATED - 1
    }
    log = (workdir / "logs/fuse_learned/zoo/whole/learned_bm25_stem_tfidf.log").read_text()
    assert "fewer than the 20 a choice needs; fusing by plain RRF" in log
    # Its rankings are plain RRF's: the same as the rrf entry's over the same components.
    rrf = pd.read_parquet(workdir / "work/rankings/zoo/whole/rrf_bm25_stem_tfidf.parquet")
    fused = pd.read_parquet(workdir / "work/rankings/zoo/whole/learned_bm25_stem_tfidf.parquet")
    assert rrf[["question_id", "rank", "chunk_id"]].equals(fused[["question_id", "rank", "chunk_id"]])
    # Fusions read their components ranked to the BEIR component depth, apart from the evaluated rankings.
    assert (workdir / "work/component_rankings/zoo/whole/bm25_stem.parquet").is_file()
    assert not (workdir / "work/component_rankings/tiny/whole/bm25_stem.parquet").exists()
