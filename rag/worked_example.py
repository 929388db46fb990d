"""The four-chunk worked example, computed by the real analyzer and retrievers.

Every number of the hand calculation comes out of the same functions the
pipeline runs, so the example doubles as an end-to-end check: if an analyzer
or a formula drifts, the printed values (and tests/unit/test_worked_example.py)
change. Run ``python -m rag.worked_example`` to print them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rag.answering.extractive import extract_answer, score_sentences
from rag.answering.prompts import build_prompt
from rag.answering.verification import ClaimCheck, check_answer
from rag.chunking import Chunk
from rag.evaluation.metrics import dcg_at, ideal_dcg_at, ndcg_at, recall_at, reciprocal_rank
from rag.grounding.rag_likelihoods import (
    rag_sequence_likelihood,
    rag_sequence_posteriors,
    rag_token_likelihood,
    retrieval_prior,
)
from rag.retrieval.bm25 import bm25_breakdown, bm25_search, build_bm25_index, length_factor
from rag.retrieval.fusion import reciprocal_rank_fusion
from rag.retrieval.search import Ranking, chunk_id_order, exact_search, ranked_ids
from rag.retrieval.tfidf import build_tfidf_index, query_lengths, query_weights, tfidf_scores
from rag.text import analyze

QUESTION = "What moons does Mars have?"
TEXTS: dict[str, str] = {
    "d1": "Mars has two small moons, Phobos and Deimos.",
    "d2": "Phobos orbits Mars faster than Mars rotates.",
    "d3": "Jupiter has dozens of moons, including four large moons.",
    "d4": "The red colour of Mars comes from iron oxide dust.",
}
# The article each chunk comes from: the label of its source in a prompt.
TITLES: dict[str, str] = {"d1": "Mars", "d2": "Mars", "d3": "Jupiter", "d4": "Mars"}
# A stand-in for a learned encoder: two-dimensional embeddings chosen by hand.
DENSE_QUERY = (0.8, 0.6)
DENSE_CHUNKS: dict[str, tuple[float, float]] = {
    "d1": (0.5, 0.9),
    "d2": (1.0, 0.5),
    "d3": (-0.1, 1.0),
    "d4": (0.9, -0.2),
}
FUSION_CONSTANT = 10.0
# d1 answers the question, d2 is about one of the moons; each is its own piece.
RELEVANCE: dict[str, dict[str, float]] = {"answer": {"d1": 2.0}, "moon": {"d2": 1.0}}
CUTOFFS = (1, 2, 3)
# The two best fused chunks become the sources of the prompt.
PROMPT_SOURCES = 2
# A drafted answer with one supported claim, one with an invented number and
# one citing a source the prompt does not have.
DRAFT = (
    "Mars has two moons, Phobos and Deimos [1]. "
    "Phobos circles Mars every 8 hours [2]. "
    "Deimos is the smaller moon [3]."
)
# The retriever's prior over the two prompt sources is a softmax of their BM25
# scores at this temperature.
PRIOR_TEMPERATURE = 0.5
# A made-up generator's probabilities of a two-token answer, one row per source
# (in prompt order) and one column per token: under the first source the answer
# is likelier as a whole, while the second source explains the first token better.
ANSWER_TOKEN_PROBABILITIES = ((0.5, 0.6), (0.7, 0.05))


def worked_example_chunks() -> list[Chunk]:
    return [
        Chunk(
            chunk_id=chunk_id,
            doc_id="worked-example",
            title=TITLES[chunk_id],
            section="",
            start=0,
            end=len(text),
            text=text,
        )
        for chunk_id, text in TEXTS.items()
    ]


@dataclass(frozen=True)
class RankingEvaluation:
    ranking: tuple[str, ...]
    recall: dict[int, float]
    reciprocal_rank: float
    dcg: float
    ndcg: float


@dataclass(frozen=True)
class RagFormulations:
    """RAG-Sequence and RAG-Token on the prompt's two sources, keyed by chunk id."""

    temperature: float
    logit_difference: float  # (score of source 1 - score of source 2) / temperature
    prior: dict[str, float]
    answer_probabilities: dict[str, tuple[float, ...]]  # per source: each token's probability
    answer_products: dict[str, float]  # per source: the whole answer's probability
    sequence_likelihood: float
    sequence_factors: tuple[float, ...]  # P_i / P_(i-1) under the running posterior
    sequence_posterior: dict[str, float]  # the weights after the first token
    token_likelihood: float
    token_factors: tuple[float, ...]  # each token mixed under the prior


@dataclass(frozen=True)
class WorkedExample:
    """Every value of the example, keyed by term or chunk id."""

    chunk_terms: dict[str, tuple[str, ...]]
    query_terms: tuple[str, ...]
    average_length: float
    bm25_idf: dict[str, float]
    length_factors: dict[int, float]  # by chunk length in terms
    saturations: dict[tuple[str, str], float]  # (term, chunk id)
    contributions: dict[tuple[str, str], float]
    bm25_scores: dict[str, float]
    bm25_ranking: tuple[str, ...]
    tfidf_idf: dict[str, float]  # moons, mars and the single-chunk terms
    tfidf_chunk_lengths: dict[str, float]
    tfidf_query_length: float
    tfidf_dot_products: dict[str, float]
    tfidf_cosines: dict[str, float]
    tfidf_ranking: tuple[str, ...]
    tfidf_sublinear_cosines: dict[str, float]  # the pipeline's default weighting, for comparison
    dense_cosines: dict[str, float]
    dense_ranking: tuple[str, ...]
    fused_scores: dict[str, float]
    fused_ranking: tuple[str, ...]
    ideal_dcg: float
    evaluations: dict[str, RankingEvaluation]  # bm25, dense, fused
    classic_idf: dict[str, float]
    classic_scores: dict[str, float]
    classic_ranking: tuple[str, ...]
    pitfall_ndcg: float
    pitfall_retrieved_ideal_ndcg: float
    prompt_sources: tuple[str, ...]  # chunk ids of sources [1], [2], ...
    prompt_tokens: int  # word-and-punctuation tokens of the whole prompt
    sentence_coverages: dict[str, float]  # by chunk id: each source holds one sentence
    answer: str
    draft_checks: tuple[ClaimCheck, ...]
    rag: RagFormulations


def _rag_formulations(sources: tuple[str, ...], bm25_scores: dict[str, float]) -> RagFormulations:
    scores = [bm25_scores[chunk_id] for chunk_id in sources]
    table = np.array(ANSWER_TOKEN_PROBABILITIES)
    prior = retrieval_prior(scores, PRIOR_TEMPERATURE)
    sequence = rag_sequence_likelihood(prior, table)
    token = rag_token_likelihood(prior, table)
    posteriors = rag_sequence_posteriors(prior, table)
    return RagFormulations(
        temperature=PRIOR_TEMPERATURE,
        logit_difference=(scores[0] - scores[1]) / PRIOR_TEMPERATURE,
        prior=_by_id(list(sources), prior),
        answer_probabilities={
            chunk_id: tuple(float(value) for value in row)
            for chunk_id, row in zip(sources, table, strict=True)
        },
        answer_products=_by_id(list(sources), table.prod(axis=1)),
        sequence_likelihood=sequence.likelihood,
        sequence_factors=sequence.token_factors,
        sequence_posterior=_by_id(list(sources), posteriors.weights[1]),
        token_likelihood=token.likelihood,
        token_factors=token.token_factors,
    )


def _by_id(ids: list[str], values: np.ndarray) -> dict[str, float]:
    return {chunk_id: float(value) for chunk_id, value in zip(ids, values, strict=True)}


def _evaluate(ranking: list[str]) -> RankingEvaluation:
    depth = max(CUTOFFS)
    top = ranking[:depth]
    return RankingEvaluation(
        ranking=tuple(top),
        recall={k: recall_at(top, RELEVANCE, k) for k in CUTOFFS},
        reciprocal_rank=reciprocal_rank(top, RELEVANCE),
        dcg=dcg_at(top, RELEVANCE, depth),
        ndcg=ndcg_at(top, RELEVANCE, depth),
    )


def _ndcg_pitfall() -> tuple[float, float]:
    """Two relevant chunks of gain 1; only one is retrieved, at rank 3."""
    relevance = {"first": {"r1": 1.0}, "second": {"r2": 1.0}}
    retrieved = ["x1", "x2", "r1"]
    honest = ndcg_at(retrieved, relevance, 3)
    # The mistake: the ideal of the retrieved list alone, i.e. as if r1 were all there is.
    retrieved_only = {"first": {"r1": 1.0}}
    return honest, dcg_at(retrieved, relevance, 3) / ideal_dcg_at(retrieved_only, 3)


def compute_worked_example() -> WorkedExample:
    chunks = worked_example_chunks()
    ids = [chunk.chunk_id for chunk in chunks]
    tie_order = chunk_id_order(ids)
    terms = [analyze(chunk.text) for chunk in chunks]
    query = analyze(QUESTION)
    n = len(ids)

    bm25 = build_bm25_index(terms)
    breakdown = bm25_breakdown(bm25, query)
    (bm25_ranking,) = bm25_search(bm25, [query], depth=n, tie_order=tie_order)
    lengths = sorted({len(chunk) for chunk in terms})
    factors = length_factor(np.array(lengths), bm25.average_length, bm25.k1, bm25.b)

    # Raw counts: the spec's tf-idf values weight two occurrences exactly 2.
    tfidf = build_tfidf_index(terms, sublinear=False)
    weighted_query = query_weights(tfidf, [query])
    cosines = tfidf_scores(tfidf, [query])[0]
    dots = tfidf_scores(tfidf, [query], normalize=False)[0]
    tfidf_ranking = np.lexsort((tie_order, -cosines))
    document_frequency = dict(zip(tfidf.vocabulary.tolist(), np.diff(tfidf.weights.indptr), strict=True))
    single = next(term for term, count in sorted(document_frequency.items()) if count == 1)
    tfidf_idf = {term: float(tfidf.idf[tfidf.column_of[term]]) for term in ("mars", "moons", single)}

    dense_chunks = np.array([DENSE_CHUNKS[chunk_id] for chunk_id in ids])
    dense_chunks = dense_chunks / np.linalg.norm(dense_chunks, axis=1, keepdims=True)
    dense_query = np.array(DENSE_QUERY) / np.linalg.norm(DENSE_QUERY)
    (dense_ranking,) = exact_search(dense_chunks, dense_query, depth=n, tie_order=tie_order)

    fused = reciprocal_rank_fusion([bm25_ranking, dense_ranking], FUSION_CONSTANT, tie_order=tie_order)

    classic = build_bm25_index(terms, idf="classic")
    (classic_ranking,) = bm25_search(classic, [query], depth=n, tie_order=tie_order)

    honest, flattering = _ndcg_pitfall()

    by_id = dict(zip(ids, chunks, strict=True))
    sources = ranked_ids(fused, ids)[:PROMPT_SOURCES]
    prompt = build_prompt(QUESTION, [by_id[chunk_id] for chunk_id in sources])
    idf = {term: float(weight) for term, weight in zip(bm25.vocabulary.tolist(), bm25.idf, strict=True)}
    coverages = {
        prompt.sources[sentence.source_number].chunk_id: sentence.coverage
        for sentence in score_sentences(prompt, idf)
    }

    def scores_of(ranking: Ranking) -> dict[str, float]:
        return {ids[p]: float(s) for p, s in zip(ranking.positions, ranking.scores, strict=True)}

    return WorkedExample(
        chunk_terms={chunk_id: tuple(chunk) for chunk_id, chunk in zip(ids, terms, strict=True)},
        query_terms=tuple(query),
        average_length=bm25.average_length,
        bm25_idf={term: float(bm25.idf[bm25.column_of[term]]) for term in dict.fromkeys(query)},
        length_factors={length: float(f) for length, f in zip(lengths, factors, strict=True)},
        saturations={(row.term, ids[row.position]): row.saturation for row in breakdown},
        contributions={(row.term, ids[row.position]): row.contribution for row in breakdown},
        bm25_scores=scores_of(bm25_ranking),
        bm25_ranking=tuple(ranked_ids(bm25_ranking, ids)),
        tfidf_idf=tfidf_idf,
        tfidf_chunk_lengths=_by_id(ids, tfidf.chunk_norms),
        tfidf_query_length=float(query_lengths(weighted_query)[0]),
        tfidf_dot_products=_by_id(ids, dots),
        tfidf_cosines=_by_id(ids, cosines),
        tfidf_ranking=tuple(ids[p] for p in tfidf_ranking),
        tfidf_sublinear_cosines=_by_id(ids, tfidf_scores(build_tfidf_index(terms), [query])[0]),
        dense_cosines=_by_id(ids, dense_chunks @ dense_query),
        dense_ranking=tuple(ranked_ids(dense_ranking, ids)),
        fused_scores=scores_of(fused),
        fused_ranking=tuple(ranked_ids(fused, ids)),
        ideal_dcg=ideal_dcg_at(RELEVANCE, max(CUTOFFS)),
        evaluations={
            "bm25": _evaluate(ranked_ids(bm25_ranking, ids)),
            "dense": _evaluate(ranked_ids(dense_ranking, ids)),
            "fused": _evaluate(ranked_ids(fused, ids)),
        },
        classic_idf={term: float(classic.idf[classic.column_of[term]]) for term in dict.fromkeys(query)},
        classic_scores=scores_of(classic_ranking),
        classic_ranking=tuple(ranked_ids(classic_ranking, ids)),
        pitfall_ndcg=honest,
        pitfall_retrieved_ideal_ndcg=flattering,
        prompt_sources=tuple(sources),
        prompt_tokens=prompt.tokens,
        sentence_coverages=coverages,
        answer=extract_answer(prompt, idf).text,
        draft_checks=check_answer(DRAFT, prompt.source_texts).claims,
        rag=_rag_formulations(tuple(sources), scores_of(bm25_ranking)),
    )


def _values(values: dict, keys: list | None = None) -> str:
    keys = list(values) if keys is None else keys
    return ", ".join(f"{key} {values[key]:.4f}" for key in keys)


def report(example: WorkedExample) -> str:
    """The example as text, in the order of the hand calculation."""
    ids = list(example.chunk_terms)
    lines = [f"Question: {QUESTION!r} -> terms {', '.join(example.query_terms)}"]
    for chunk_id, terms in example.chunk_terms.items():
        lines.append(f"  {chunk_id}: {TEXTS[chunk_id]!r} -> {len(terms)} terms: {', '.join(terms)}")
    lines += [
        "",
        f"BM25 (k1 = 1.5, b = 0.75), N = {len(ids)}, average length {example.average_length:.4f}",
        f"  idf: {_values(example.bm25_idf)}",
        "  length factor K: " + ", ".join(f"{n} terms {k:.4f}" for n, k in example.length_factors.items()),
        "  saturation: " + ", ".join(f"{t} in {d} {v:.4f}" for (t, d), v in example.saturations.items()),
        "  contribution: " + ", ".join(f"{t} to {d} {v:.4f}" for (t, d), v in example.contributions.items()),
        f"  scores: {_values(example.bm25_scores, ids)}",
        f"  ranking: {', '.join(example.bm25_ranking)}",
        "",
        "tf-idf (smoothed idf, raw term counts)",
        f"  idf: {_values(example.tfidf_idf)}",
        f"  chunk vector lengths: {_values(example.tfidf_chunk_lengths)}",
        f"  query vector length: {example.tfidf_query_length:.4f}",
        f"  dot products: {_values(example.tfidf_dot_products)}",
        f"  cosines: {_values(example.tfidf_cosines)}",
        f"  ranking: {', '.join(example.tfidf_ranking)}",
        "  cosines with sublinear tf (1 + ln f, the pipeline default): "
        + _values(example.tfidf_sublinear_cosines),
        "",
        f"Toy dense encoder, query {DENSE_QUERY}",
        f"  cosines: {_values(example.dense_cosines)}",
        f"  ranking: {', '.join(example.dense_ranking)}",
        "",
        f"Reciprocal rank fusion of BM25 and dense, c = {FUSION_CONSTANT:g}",
        f"  scores: {_values(example.fused_scores, ids)}",
        f"  ranking: {', '.join(example.fused_ranking)}",
        "",
        f"Evaluation (gains d1 = 2, d2 = 1), ideal DCG@3 {example.ideal_dcg:.4f}",
    ]
    for name, evaluation in example.evaluations.items():
        recall = ", ".join(f"@{k} {v:.4f}" for k, v in evaluation.recall.items())
        lines.append(
            f"  {name}: {', '.join(evaluation.ranking)}; recall {recall}; "
            f"RR {evaluation.reciprocal_rank:.4f}; DCG@3 {evaluation.dcg:.4f}; nDCG@3 {evaluation.ndcg:.4f}"
        )
    sources = ", ".join(f"[{number}] {chunk_id}" for number, chunk_id in enumerate(example.prompt_sources, 1))
    lines += [
        "",
        f"Prompt, answer and citations: the two best fused chunks as sources {sources}",
        f"  prompt: {example.prompt_tokens} word and punctuation tokens",
        f"  coverage (BM25 idf): {_values(example.sentence_coverages)}",
        f"  answer: {example.answer!r}",
        "  checking the draft:",
    ]
    for claim in example.draft_checks:
        cited = ", ".join(f"[{number}]" for number in claim.cited)
        missing = (
            f", {', '.join(f'[{n}]' for n in claim.missing_citations)} does not exist"
            if claim.missing_citations
            else ""
        )
        numbers = (
            f", number {', '.join(claim.unsupported_numbers)} in no cited source"
            if claim.unsupported_numbers
            else ""
        )
        verdict = "supported" if claim.supported else "unsupported"
        support = f"{claim.matched_terms} of {claim.term_count} terms, support {claim.support:.4f}{numbers}"
        lines.append(f"    {claim.sentence!r}: cites {cited}{missing}; {support}; {verdict}")
    lines += ["", *_rag_report(example.rag)]
    lines += [
        "",
        "Pitfall: the classic (Robertson-Spärck Jones) idf",
        f"  idf: {_values(example.classic_idf)}",
        f"  scores: {_values(example.classic_scores, ids)}",
        f"  ranking: {', '.join(example.classic_ranking)}",
        "Pitfall: ideal DCG from the retrieved list (1 of 2 relevant chunks, at rank 3)",
        f"  nDCG@3 with the collection's ideal {example.pitfall_ndcg:.4f}; "
        f"with the retrieved list's ideal {example.pitfall_retrieved_ideal_ndcg:.4f}",
    ]
    return "\n".join(lines)


def _rag_report(rag: RagFormulations) -> list[str]:
    first, second = rag.prior
    prior = rag.prior
    probabilities = rag.answer_probabilities
    products = rag.answer_products
    token_mixtures = " x ".join(f"{factor:.4f}" for factor in rag.token_factors)
    return [
        f"RAG-Sequence and RAG-Token: the prompt's sources {first}, {second} with a softmax of their BM25 "
        f"scores at temperature {rag.temperature:g}",
        f"  logit difference {rag.logit_difference:.4f}; prior {_values(prior)}",
        "  generator's token probabilities: "
        + "; ".join(
            f"under {chunk_id} "
            + ", ".join(f"{p:g}" for p in probabilities[chunk_id])
            + f", product {products[chunk_id]:.4f}"
            for chunk_id in prior
        ),
        f"  RAG-Sequence: {prior[first]:.4f} x {products[first]:.4f} + {prior[second]:.4f} x "
        f"{products[second]:.4f} = {rag.sequence_likelihood:.4f}",
        f"  RAG-Token: {token_mixtures} = {rag.token_likelihood:.4f}",
        f"  posterior after the first token: {_values(rag.sequence_posterior)}",
        "  RAG-Sequence token by token: "
        + " x ".join(f"{factor:.4f}" for factor in rag.sequence_factors)
        + f" = {rag.sequence_likelihood:.4f}",
    ]


def main() -> None:
    print(report(compute_worked_example()))


if __name__ == "__main__":
    main()
