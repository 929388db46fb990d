"""ir-measures on the TREC runs the pipeline exports, against the metrics it computed itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import ir_measures
import pandas as pd
import pytest
from ir_measures import Success, nDCG


def assert_runs_reproduce_metrics(
    run: Path, metrics: pd.DataFrame, answerable: Mapping[str, int], ks: Sequence[int]
) -> None:
    """nDCG@k and recall@k of one exported run, computed by ir-measures, equal ``metrics.csv``'s.

    ``answerable`` maps each answerable question to its number of evidence
    pieces. nDCG reads ``qrels.txt`` (graded chunk gains); recall counts
    pieces, so it is success@k of each piece's own query in ``piece_qrels.txt``,
    averaged over a question's pieces.
    """
    chunker, retriever = run.parts[-2], run.name.removesuffix(".run.gz")
    scored = list(ir_measures.read_trec_run(str(run)))  # ir-measures reads the gzip itself
    qrels = list(ir_measures.read_trec_qrels(str(run.parent / "qrels.txt")))
    pieces = list(ir_measures.read_trec_qrels(str(run.parent / "piece_qrels.txt")))
    expected = metrics[(metrics.chunker == chunker) & (metrics.retriever == retriever)]
    by_piece = [
        document._replace(query_id=f"{document.query_id}#{piece}")
        for document in scored
        for piece in range(answerable.get(document.query_id, 0))
    ]
    for k in ks:
        # nDCG: questions without a labelled chunk score 0, as in metrics.csv.
        values = {m.query_id: m.value for m in ir_measures.iter_calc([nDCG @ k], qrels, scored)}
        ndcg = sum(values.get(question, 0.0) for question in answerable) / len(answerable)
        want = expected[(expected.metric == "ndcg") & (expected.k == k)].value.item()
        assert ndcg == pytest.approx(want, abs=1e-6), (run, k)
        found = {m.query_id: m.value for m in ir_measures.iter_calc([Success @ k], pieces, by_piece)}
        recall = sum(
            sum(found.get(f"{question}#{piece}", 0.0) for piece in range(count)) / count
            for question, count in answerable.items()
        ) / len(answerable)
        want = expected[(expected.metric == "recall") & (expected.k == k)].value.item()
        assert recall == pytest.approx(want, abs=1e-6), (run, k)
