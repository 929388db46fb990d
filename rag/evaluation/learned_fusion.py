"""Fusion weights chosen on labelled questions, evaluated only on questions they were not chosen on.

Tuning a fusion weight on the same questions it is then scored on reports
the best of many tries as if it were one: the gain is overfitted. Here the
questions are split into ``folds`` seeded folds; for each fold, every weight
vector of a simplex grid (each weight a multiple of 1 / ``steps``, summing to
1) is scored by the mean objective over the labelled questions of the other
folds, and the best one ranks the fold's questions. Every question's ranking
thus comes from weights that never saw its labels, and the chosen weights are
reported per fold, so their stability is visible too.

Ties between weight vectors (equal objective after rounding to
``OBJECTIVE_DECIMALS``) go to the one closest to equal weights, then to the
first in grid order, so the choice does not depend on floating-point noise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from itertools import product

import numpy as np
import pandas as pd

from rag.evaluation import metric_registry
from rag.evaluation.metrics import Relevance, relevance_from_columns
from rag.labels import Question
from rag.retrieval.fusion import weighted_fusion
from rag.retrieval.search import Ranking, chunk_id_order

OBJECTIVE_DECIMALS = 9
OBJECTIVES = tuple(metric_registry.objectives())


@dataclass(frozen=True)
class LearnedFusionSettings:
    """How a learned retriever entry chooses its weights, read once from the entry.

    ``fusion`` and ``constant`` say how the components are fused, ``folds``
    and ``seed`` how the questions are split, ``steps`` how fine the weight
    grid is, and ``objective`` at depth ``objective_k`` what a weight vector
    is scored by. The fields are named as the entry's keys, so the entry
    maps onto them without a list of keys repeated in every function.
    """

    fusion: str
    folds: int
    seed: int
    steps: int
    objective: str
    objective_k: int
    constant: float = 60.0

    @classmethod
    def from_entry(cls, entry: Mapping) -> LearnedFusionSettings:
        """The settings of a learned retriever ``entry`` of the config (its other keys are ignored)."""
        return cls(**{field.name: entry[field.name] for field in fields(cls)})


@dataclass(frozen=True)
class FoldChoice:
    """The weights one fold's questions were ranked with, and what they scored on the other folds."""

    fold: int
    weights: tuple[float, ...]
    training_questions: int
    held_out_questions: int
    training_objective: float


def weight_grid(components: int, steps: int) -> list[tuple[float, ...]]:
    """Every weight vector whose entries are multiples of 1 / steps and sum to 1, in lexicographic order."""
    if components < 1 or steps < 1:
        raise ValueError("a weight grid needs at least one component and one step")
    vectors = [counts for counts in product(range(steps + 1), repeat=components) if sum(counts) == steps]
    return [tuple(count / steps for count in counts) for counts in vectors]


def assign_folds(question_ids: Sequence[str], folds: int, seed: int) -> dict[str, int]:
    """Each question's fold: a seeded shuffle of the sorted ids, dealt round-robin."""
    if folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, got {folds}")
    ordered = sorted(set(question_ids))
    if len(ordered) < folds:
        raise ValueError(f"{folds} folds but only {len(ordered)} questions")
    shuffled = np.random.default_rng(seed).permutation(len(ordered))
    return {ordered[index]: position % folds for position, index in enumerate(shuffled)}


def objective_value(ranked: Sequence[str], relevance: Relevance, objective: str, k: int) -> float:
    return metric_registry.objective(objective)(ranked, relevance, k)


def _closeness_to_equal(weights: Sequence[float]) -> float:
    equal = 1.0 / len(weights)
    return round(math.fsum(abs(weight - equal) for weight in weights), OBJECTIVE_DECIMALS)


def cross_validated_fusion(
    components: Mapping[str, Sequence[Ranking]],
    relevance: Mapping[str, Relevance],
    chunk_ids: Sequence[str],
    settings: LearnedFusionSettings,
    depth: int | None = None,
    tie_order: np.ndarray | None = None,
) -> tuple[dict[str, Ranking], list[FoldChoice]]:
    """Held-out fused rankings for every question, and the weights chosen for each fold.

    ``components`` maps each question id to its component rankings (in the
    entry's component order); ``relevance`` holds the labelled questions,
    which alone are used to choose weights. Unlabelled questions are still
    assigned a fold and ranked with that fold's weights. Weight vectors are
    scored to depth ``settings.objective_k``; held-out rankings go to ``depth``.
    """
    question_ids = sorted(components)
    unknown = sorted(set(relevance) - set(question_ids))
    if unknown:
        raise ValueError(f"question {unknown[0]!r} has labels but no component rankings")
    if not relevance:
        raise ValueError("learned fusion needs labelled questions to choose weights on")
    width = {len(lists) for lists in components.values()}
    if len(width) != 1:
        raise ValueError("every question needs one ranking per component")
    grid = weight_grid(width.pop(), settings.steps)
    fold_of = assign_folds(question_ids, settings.folds, settings.seed)
    labelled = sorted(relevance)
    # Each candidate's objective on each labelled question, computed once and reused by every fold.
    scores = {}
    for candidate, weights in enumerate(grid):
        for question_id in labelled:
            fused = weighted_fusion(
                components[question_id],
                weights,
                settings.fusion,
                settings.constant,
                settings.objective_k,
                tie_order,
            )
            ranked = [chunk_ids[position] for position in fused.positions]
            scores[candidate, question_id] = objective_value(
                ranked, relevance[question_id], settings.objective, settings.objective_k
            )
    rankings: dict[str, Ranking] = {}
    choices: list[FoldChoice] = []
    for fold in range(settings.folds):
        training = [question_id for question_id in labelled if fold_of[question_id] != fold]
        held_out = [question_id for question_id in question_ids if fold_of[question_id] == fold]
        if not training:
            raise ValueError(f"fold {fold}: no labelled question outside it to choose weights on")

        keys = [
            (
                -round(math.fsum(scores[candidate, q] for q in training) / len(training), OBJECTIVE_DECIMALS),
                _closeness_to_equal(grid[candidate]),
                candidate,
            )
            for candidate in range(len(grid))
        ]
        best = min(keys)[2]
        for question_id in held_out:
            rankings[question_id] = weighted_fusion(
                components[question_id], grid[best], settings.fusion, settings.constant, depth, tie_order
            )
        choices.append(
            FoldChoice(
                fold=fold,
                weights=grid[best],
                training_questions=len(training),
                held_out_questions=len(held_out),
                training_objective=-keys[best][0],
            )
        )
    return rankings, choices


# --------------------------------------------------------------------------
# The fuse_learned job: one learned entry over its components' rankings
# --------------------------------------------------------------------------


def learned_fusion(
    settings: LearnedFusionSettings,
    components: Sequence[Mapping[str, Ranking]],
    chunk_ids: Sequence[str],
    questions: Sequence[Question],
    qrels: Mapping[str, Sequence],
    depth: int | None,
) -> tuple[dict[str, Ranking], list[FoldChoice]]:
    """:func:`cross_validated_fusion` with a learned retriever entry's ``settings``.

    ``components`` are the component rankings (question id -> Ranking, in
    the entry's component order, every one over the same questions), and
    ``qrels`` the chunk set's qrels columns. Weights are chosen on the
    answerable questions the components ranked; ties between chunks go to
    the lower chunk id, as in every ranking of the pipeline.
    """
    by_question = {
        question_id: [component[question_id] for component in components]
        for question_id in sorted(set().union(*components))
    }
    labelled = [
        question for question in questions if question.answerable and question.question_id in by_question
    ]
    return cross_validated_fusion(
        by_question,
        relevance_from_columns(labelled, qrels),
        chunk_ids,
        settings,
        depth=depth,
        tie_order=chunk_id_order(chunk_ids),
    )


def describe_choice(choice: FoldChoice, settings: LearnedFusionSettings) -> str:
    """The fuse_learned log line of one fold: its weights and what they scored in training."""
    training = f"{settings.objective}@{int(settings.objective_k)} = {choice.training_objective:.4f}"
    return f"fold {int(choice.fold)}: weights {choice.weights} (training {training})"


def weights_table(choices: Sequence[FoldChoice], components: Sequence[str]) -> pd.DataFrame:
    """One row per (fold, component): the weight the fold chose, with its training and held-out sizes.

    The table work/learned/<corpus>/<chunker>/<retriever>.csv, gathered into
    results/learned_fusion.csv, so the weights' stability is visible.
    """
    rows = [
        {
            "fold": choice.fold,
            "component": component,
            "weight": weight,
            "training_questions": choice.training_questions,
            "held_out_questions": choice.held_out_questions,
            "training_objective": choice.training_objective,
        }
        for choice in choices
        for component, weight in zip(components, choice.weights, strict=True)
    ]
    return pd.DataFrame(rows)
