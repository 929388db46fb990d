"""A learned fusion for a view: only the view's chunks, weights chosen on the view's labels alone."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.evaluation.learned_fusion import LearnedFusionSettings, learned_fusion
from rag.evaluation.learned_views import labels_within, learned_fusion_in_view, read_labels, readable_units
from rag.labels import Question
from rag.retrieval.filters import FilterError, restrict_ranking
from rag.retrieval.fusion import reciprocal_rank_fusion
from rag.retrieval.search import Ranking, chunk_id_order

FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
CHUNK_IDS = [f"c{number:02d}" for number in range(12)]
QUESTIONS = [Question(f"q{number:02d}", f"question {number}") for number in range(40)]
SETTINGS = LearnedFusionSettings(
    fusion="minmax", folds=2, seed=0, steps=4, objective="ndcg", objective_k=5, constant=60.0
)


def random_ranking(rng: np.random.Generator) -> Ranking:
    positions = rng.permutation(len(CHUNK_IDS))
    return Ranking(positions, np.sort(rng.random(len(CHUNK_IDS)))[::-1])


def components_and_labels(seed: int = 0):
    rng = np.random.default_rng(seed)
    components = [{q.question_id: random_ranking(rng) for q in QUESTIONS} for _ in range(2)]
    relevance = {
        q.question_id: {
            f"piece{piece}": {CHUNK_IDS[position]: 1.0}
            for piece, position in enumerate(rng.choice(len(CHUNK_IDS), 2, replace=False))
        }
        for q in QUESTIONS
    }
    return components, relevance


def prefiltered(components, allowed):
    """What the view's component rankings are: searched within the view."""
    return [
        {q: restrict_ranking(ranking, allowed) for q, ranking in component.items()}
        for component in components
    ]


def allowed_ids(allowed) -> set[str]:
    return {chunk_id for chunk_id, keep in zip(CHUNK_IDS, allowed, strict=True) if keep}


def test_a_narrow_view_ranks_only_its_chunks_as_fusing_its_filtered_components_gives():
    components, relevance = components_and_labels()
    allowed = np.array([position % 3 != 0 for position in range(len(CHUNK_IDS))])
    filtered = prefiltered(components, allowed)
    rankings, choices, warnings = learned_fusion_in_view(
        SETTINGS, filtered, CHUNK_IDS, QUESTIONS, relevance, allowed, depth=None
    )
    assert choices and not warnings  # weights were chosen, not plain RRF
    for ranking in rankings.values():
        assert allowed[ranking.positions].all()
        assert len(ranking) == allowed.sum()
    view_labels = labels_within(relevance, allowed_ids(allowed))
    expected, _, _ = learned_fusion(SETTINGS, filtered, CHUNK_IDS, QUESTIONS, view_labels, None)
    for question_id, ranking in rankings.items():
        ranked = [CHUNK_IDS[p] for p in ranking.positions]
        assert ranked == [CHUNK_IDS[p] for p in expected[question_id].positions], question_id


def test_the_view_that_allows_every_chunk_is_the_unfiltered_learned_ranking():
    components, relevance = components_and_labels()
    everything = np.ones(len(CHUNK_IDS), dtype=bool)
    rankings, _, _ = learned_fusion_in_view(
        SETTINGS, components, CHUNK_IDS, QUESTIONS, relevance, everything, 10
    )
    unfiltered, _, _ = learned_fusion(SETTINGS, components, CHUNK_IDS, QUESTIONS, relevance, 10)
    assert rankings.keys() == unfiltered.keys()
    for question_id, ranking in rankings.items():
        assert ranking.positions.tolist() == unfiltered[question_id].positions.tolist()
        assert ranking.scores.tolist() == unfiltered[question_id].scores.tolist()


def test_a_component_ranking_outside_the_view_is_dropped_even_if_the_input_holds_it():
    components, relevance = components_and_labels()
    allowed = np.arange(len(CHUNK_IDS)) < 6
    rankings, _, _ = learned_fusion_in_view(
        SETTINGS, components, CHUNK_IDS, QUESTIONS, relevance, allowed, None
    )
    assert all(allowed[ranking.positions].all() for ranking in rankings.values())


def test_a_view_without_labelled_questions_fuses_by_plain_rrf_with_a_warning():
    components, relevance = components_and_labels()
    allowed = np.arange(len(CHUNK_IDS)) < 6
    outside = {q: {"piece0": {"c11": 1.0}} for q in relevance}  # every label outside the view
    filtered = prefiltered(components, allowed)
    rankings, choices, warnings = learned_fusion_in_view(
        SETTINGS, filtered, CHUNK_IDS, QUESTIONS, outside, allowed, None
    )
    assert not choices and "plain RRF" in warnings[0]
    tie_order = chunk_id_order(CHUNK_IDS)
    for question_id, ranking in rankings.items():
        expected = reciprocal_rank_fusion([c[question_id] for c in filtered], 60.0, None, tie_order)
        assert ranking.positions.tolist() == expected.positions.tolist()


def test_labels_outside_the_view_are_dropped_and_documents_judge_by_their_allowed_chunks():
    relevance = {
        "q1": {"a": {"c00": 1.0, "c01": 2.0}, "b": {"c03": 1.0}},
        "q2": {"a": {"c02": 1.0}},
        "q3": {"nothing": {}},
    }
    assert labels_within(relevance, {"c01"}) == {"q1": {"a": {"c01": 2.0}}, "q3": {"nothing": {}}}
    assert labels_within(relevance, set(CHUNK_IDS)) == relevance
    document_of = {chunk_id: f"d{int(chunk_id[1:]) // 4}" for chunk_id in CHUNK_IDS}
    allowed = np.arange(len(CHUNK_IDS)) == 5
    assert readable_units(CHUNK_IDS, allowed, document_of) == {"d1"}
    assert readable_units(CHUNK_IDS, allowed) == {"c05"}


def test_a_mask_of_the_wrong_length_is_one_error_line():
    with pytest.raises(FilterError) as error:
        readable_units(CHUNK_IDS, np.ones(3, dtype=bool))
    assert "\n" not in str(error.value) and "3 entries for 12 chunks" in str(error.value)


@FUZZ
@given(
    mask=st.lists(st.booleans(), min_size=len(CHUNK_IDS), max_size=len(CHUNK_IDS)).filter(any),
    seed=st.integers(0, 2**16),
    depth=st.one_of(st.none(), st.integers(1, 12)),
)
def test_fuzz_a_view_never_ranks_a_chunk_it_does_not_allow(mask, seed, depth):
    components, relevance = components_and_labels(seed)
    allowed = np.array(mask)
    rankings, _, _ = learned_fusion_in_view(
        SETTINGS, prefiltered(components, allowed), CHUNK_IDS, QUESTIONS, relevance, allowed, depth
    )
    assert rankings.keys() == {q.question_id for q in QUESTIONS}
    for ranking in rankings.values():
        assert allowed[ranking.positions].all()
        assert len(ranking) == min(int(allowed.sum()), depth or len(CHUNK_IDS))


def test_document_labels_are_read_with_each_chunks_document_and_held_to_the_view(tmp_path):
    import pandas as pd

    path = tmp_path / "judgements.parquet"
    pd.DataFrame(
        {"question_id": ["q00", "q00", "q01"], "doc_id": ["d0", "d2", "d1"], "gain": [2, 1, 1]}
    ).to_parquet(path)
    chunks = {"chunk_id": CHUNK_IDS, "doc_id": [f"d{int(chunk_id[1:]) // 4}" for chunk_id in CHUNK_IDS]}
    relevance, document_of = read_labels(str(path), QUESTIONS[:2], "document", chunks)
    assert document_of == dict(zip(chunks["chunk_id"], chunks["doc_id"], strict=True))
    assert relevance == {"q00": {"d0": {"d0": 2.0}, "d2": {"d2": 1.0}}, "q01": {"d1": {"d1": 1.0}}}
    allowed = np.arange(len(CHUNK_IDS)) < 4  # document d0 only
    assert labels_within(relevance, readable_units(CHUNK_IDS, allowed, document_of)) == {
        "q00": {"d0": {"d0": 2.0}}
    }
