"""Fusion weights chosen on labelled questions, evaluated only on questions they were not chosen on.

Tuning a fusion weight on the same questions it is then scored on reports
the best of many tries as if it were one: the gain is overfitted, and the
weights may not carry to new questions at all (on one public set the learned
fusion of BM25 and MiniLM lost to MiniLM alone). So the choice is made by
nested cross-validation:

- the questions are split into ``folds`` seeded *outer* folds; each fold's
  questions are ranked with a choice made on the other folds alone;
- on those training questions, an *inner* split of ``folds`` seeded folds
  estimates what tuning is worth: weights tuned on all but one inner fold
  (every vector of a simplex grid, each weight a multiple of 1 / ``steps``)
  are scored on that inner fold, and the mean of those scores is compared
  with each component used alone;
- tuning is kept only when its inner estimate beats the best single
  component; otherwise the fold is ranked by that component alone, the
  candidate that cannot lose to itself.

Too few labelled questions cannot support a choice at all: below
:func:`minimum_labelled` the entry falls back to plain reciprocal rank
fusion, with a warning. The held-out questions of a ``holdout`` share
(:mod:`rag.evaluation.holdout`) take part in no choice: they are ranked with
the choice made on every other labelled question and reported apart.

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
from rag.evaluation.document_relevance import collapse_to_documents
from rag.evaluation.metrics import Relevance, relevance_from_columns
from rag.labels import Question
from rag.retrieval.fusion import reciprocal_rank_fusion, weighted_fusion
from rag.retrieval.search import Ranking, chunk_id_order

OBJECTIVE_DECIMALS = 9
OBJECTIVES = tuple(metric_registry.objectives())
# Below this many labelled questions (or one per outer and inner fold pair, when
# that is more) a choice of weights is noise: the entry fuses by plain RRF.
MIN_LABELLED_QUESTIONS = 20

# What a fold's choice was: weights tuned on the grid, one component alone,
# or plain RRF for want of labelled questions.
TUNED, COMPONENT, PLAIN_RRF = "tuned weights", "component alone", "plain rrf"
HOLDOUT = "holdout"


@dataclass(frozen=True)
class LearnedFusionSettings:
    """How a learned retriever entry chooses its weights, read once from the entry.

    ``fusion`` and ``constant`` say how the components are fused, ``folds``
    and ``seed`` how the questions are split (outer and inner), ``steps``
    how fine the weight grid is, and ``objective`` at depth ``objective_k``
    what a choice is scored by. The fields are named as the entry's keys,
    so the entry maps onto them without a list of keys repeated in every
    function.
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
    """The weights one fold's questions were ranked with, how they were chosen and what they scored.

    ``part`` is ``"fold"`` for an outer cross-validation fold and
    ``"holdout"`` for the held-out share. ``choice`` says whether tuned
    weights, one component alone or plain RRF ranked it; ``inner_objective``
    is the nested estimate of tuning on the training questions and
    ``training_objective`` the chosen weights' mean there. The held-out
    scores are means over the fold's labelled questions: the fusion's, and
    each component's alone (NaN when the fold holds no labelled question).
    ``at_grid_edge`` flags tuned weights on the border of the grid (a
    weight of 0), which a finer or wider search might have moved.
    """

    fold: int
    part: str
    choice: str
    weights: tuple[float, ...]
    training_questions: int
    held_out_questions: int
    held_out_labelled: int
    training_objective: float
    inner_objective: float
    held_out_objective: float
    component_held_out: tuple[float, ...]
    at_grid_edge: bool


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


def minimum_labelled(folds: int) -> int:
    """The fewest labelled questions a nested choice is made on: the stated minimum, or two per inner fold."""
    return max(MIN_LABELLED_QUESTIONS, folds * folds)


def objective_value(ranked: Sequence[str], relevance: Relevance, objective: str, k: int) -> float:
    return metric_registry.objective(objective)(ranked, relevance, k)


def _closeness_to_equal(weights: Sequence[float]) -> float:
    equal = 1.0 / len(weights)
    return round(math.fsum(abs(weight - equal) for weight in weights), OBJECTIVE_DECIMALS)


def _alone(weights: Sequence[float]) -> int | None:
    """The component a weight vector uses alone, or None when it mixes several."""
    used = [index for index, weight in enumerate(weights) if weight > 0]
    return used[0] if len(used) == 1 else None


def _rank(
    lists: Sequence[Ranking],
    weights: Sequence[float],
    settings: LearnedFusionSettings,
    depth: int | None,
    tie_order: np.ndarray | None,
) -> Ranking:
    """One question ranked with ``weights``: a component used alone keeps its own ranking."""
    alone = _alone(weights)
    if alone is not None:
        ranking = lists[alone]
        return ranking if depth is None else Ranking(ranking.positions[:depth], ranking.scores[:depth])
    return weighted_fusion(lists, weights, settings.fusion, settings.constant, depth, tie_order)


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


class _Scores:
    """Each grid vector's objective on each labelled question, computed once and shared by every split.

    With ``document_of`` (chunk id -> document id) the labels judge documents,
    as a BEIR corpus's graded qrels do: the whole fused list is collapsed to
    its documents, each at its best chunk, before the objective's cut.
    """

    def __init__(self, grid, components, relevance, chunk_ids, settings, tie_order, document_of=None):
        self.grid, self.relevance, self.chunk_ids = grid, relevance, chunk_ids
        self.settings, self.document_of = settings, document_of
        self.values: dict[tuple[int, str], float] = {}
        depth = settings.objective_k if document_of is None else None
        for candidate, weights in enumerate(grid):
            for question_id in relevance:
                fused = _rank(components[question_id], weights, settings, depth, tie_order)
                self.values[candidate, question_id] = self.objective(fused, question_id)
        width = len(grid[0])
        self.single = [grid.index(tuple(float(i == j) for j in range(width))) for i in range(width)]

    def objective(self, ranking: Ranking, question_id: str) -> float:
        """The objective of one question's ranking, over documents when the labels judge documents."""
        ranked = [self.chunk_ids[position] for position in ranking.positions]
        if self.document_of is not None:
            ranked = collapse_to_documents(ranked, self.document_of)
        settings = self.settings
        return objective_value(ranked, self.relevance[question_id], settings.objective, settings.objective_k)

    def mean(self, candidate: int, questions: Sequence[str]) -> float:
        return round(_mean([self.values[candidate, q] for q in questions]), OBJECTIVE_DECIMALS)

    def tuned(self, questions: Sequence[str]) -> int:
        """The grid vector with the best mean on ``questions`` (ties: closest to equal, then first)."""
        keys = [
            (-self.mean(candidate, questions), _closeness_to_equal(weights), candidate)
            for candidate, weights in enumerate(self.grid)
        ]
        return min(keys)[2]


def nested_choice(scores: _Scores, training: Sequence[str], folds: int, seed: int) -> tuple[int, str, float]:
    """The grid vector to rank with, whether it is tuned or one component alone, and tuning's inner estimate.

    The inner split scores the tuning *procedure* on questions it did not
    tune on; tuning is kept only when that beats the best component alone
    on the same questions, so a fusion whose tuned weights do not carry
    falls back to its best part.
    """
    inner = assign_folds(training, folds, seed)
    estimates = []
    for fold in range(folds):
        tuning = [q for q in training if inner[q] != fold]
        chosen = scores.tuned(tuning)
        estimates += [scores.values[chosen, q] for q in training if inner[q] == fold]
    inner_objective = round(_mean(estimates), OBJECTIVE_DECIMALS)
    best_single = min(scores.single, key=lambda candidate: (-scores.mean(candidate, training), candidate))
    if inner_objective > scores.mean(best_single, training):
        return scores.tuned(training), TUNED, inner_objective
    return best_single, COMPONENT, inner_objective


def _held_out_scores(scores, chosen, questions):
    return _mean([scores.values[chosen, q] for q in questions]), tuple(
        _mean([scores.values[single, q] for q in questions]) for single in scores.single
    )


def cross_validated_fusion(
    components: Mapping[str, Sequence[Ranking]],
    relevance: Mapping[str, Relevance],
    chunk_ids: Sequence[str],
    settings: LearnedFusionSettings,
    depth: int | None = None,
    tie_order: np.ndarray | None = None,
    holdout: Sequence[str] = (),
    document_of: Mapping[str, str] | None = None,
) -> tuple[dict[str, Ranking], list[FoldChoice], list[str]]:
    """Held-out fused rankings for every question, each fold's choice, and warnings.

    ``components`` maps each question id to its component rankings (in the
    entry's component order); ``relevance`` holds the labelled questions,
    which alone are used to choose, except those in ``holdout``: they choose
    nothing and are ranked with the choice made on all other labelled
    questions. Unlabelled questions are still assigned a fold and ranked with
    that fold's choice. Choices are scored to depth ``settings.objective_k``
    (of documents, when ``document_of`` maps chunks to the documents the
    labels judge); rankings go to ``depth``.
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
    held = set(holdout)
    choosing = {q: labels for q, labels in relevance.items() if q not in held}
    scores = _Scores(grid, components, relevance, chunk_ids, settings, tie_order, document_of)
    minimum = minimum_labelled(settings.folds)
    if len(choosing) < minimum:
        return _plain_rrf(components, relevance, scores, settings, depth, tie_order, held, len(choosing))
    in_folds = [q for q in question_ids if q not in held]
    fold_of = assign_folds(in_folds, settings.folds, settings.seed)
    rankings: dict[str, Ranking] = {}
    choices: list[FoldChoice] = []
    parts = [(fold, "fold", [q for q in in_folds if fold_of[q] == fold]) for fold in range(settings.folds)]
    parts += [(settings.folds, HOLDOUT, [q for q in question_ids if q in held])] if held else []
    for fold, part, ranked in parts:
        training = sorted(q for q in choosing if q not in ranked)
        chosen, how, inner_objective = nested_choice(
            scores, training, settings.folds, settings.seed + 1 + fold
        )
        for question_id in ranked:
            rankings[question_id] = _rank(components[question_id], grid[chosen], settings, depth, tie_order)
        labelled = [q for q in ranked if q in relevance]
        held_out, alone = _held_out_scores(scores, chosen, labelled)
        choices.append(
            FoldChoice(
                fold=fold,
                part=part,
                choice=how,
                weights=grid[chosen],
                training_questions=len(training),
                held_out_questions=len(ranked),
                held_out_labelled=len(labelled),
                training_objective=scores.mean(chosen, training),
                inner_objective=inner_objective,
                held_out_objective=held_out,
                component_held_out=alone,
                at_grid_edge=how == TUNED and min(grid[chosen]) == 0.0,
            )
        )
    return rankings, choices, []


def _plain_rrf(components, relevance, scores, settings, depth, tie_order, held, labelled_count):
    """Every question fused by plain reciprocal rank fusion: too few labelled questions to choose on."""
    rankings = {
        question_id: reciprocal_rank_fusion(lists, settings.constant, depth, tie_order)
        for question_id, lists in components.items()
    }
    width = len(scores.single)
    choices = []
    for part, questions in (
        ("fold", sorted(q for q in components if q not in held)),
        (HOLDOUT, sorted(held)),
    ):
        if not questions:
            continue
        labelled = [q for q in questions if q in relevance]
        fused = [scores.objective(rankings[q], q) for q in labelled]
        choices.append(
            FoldChoice(
                fold=0 if part == "fold" else 1,
                part=part,
                choice=PLAIN_RRF,
                weights=tuple(1.0 / width for _ in range(width)),
                training_questions=0,
                held_out_questions=len(questions),
                held_out_labelled=len(labelled),
                training_objective=math.nan,
                inner_objective=math.nan,
                held_out_objective=_mean(fused),
                component_held_out=tuple(
                    _mean([scores.values[single, q] for q in labelled]) for single in scores.single
                ),
                at_grid_edge=False,
            )
        )
    warning = (
        f"learned fusion: only {labelled_count} labelled questions to choose on, fewer than the "
        f"{minimum_labelled(settings.folds)} a choice needs; "
        f"fusing by plain RRF (constant {settings.constant:g})"
    )
    return rankings, choices, [warning]


# --------------------------------------------------------------------------
# The fuse_learned job: one learned entry over its components' rankings
# --------------------------------------------------------------------------


def learned_fusion(
    settings: LearnedFusionSettings,
    components: Sequence[Mapping[str, Ranking]],
    chunk_ids: Sequence[str],
    questions: Sequence[Question],
    relevance: Mapping[str, Relevance],
    depth: int | None,
    holdout: Sequence[str] = (),
    document_of: Mapping[str, str] | None = None,
) -> tuple[dict[str, Ranking], list[FoldChoice], list[str]]:
    """:func:`cross_validated_fusion` with a learned retriever entry's ``settings``.

    ``components`` are the component rankings (question id -> Ranking, in
    the entry's component order, every one over the same questions), and
    ``relevance`` the labels of the questions (:func:`chunk_relevance` for
    evidence spans; a BEIR corpus's graded qrels, with ``document_of`` mapping
    chunks to the documents they judge, work alike). Choices are
    made on the answerable questions the components ranked; ties between
    chunks go to the lower chunk id, as in every ranking of the pipeline.
    """
    by_question = {
        question_id: [component[question_id] for component in components]
        for question_id in sorted(set().union(*components))
    }
    answerable = {question.question_id for question in questions if question.answerable}
    labelled = {
        question_id: labels
        for question_id, labels in relevance.items()
        if question_id in answerable and question_id in by_question
    }
    return cross_validated_fusion(
        by_question,
        labelled,
        chunk_ids,
        settings,
        depth=depth,
        tie_order=chunk_id_order(chunk_ids),
        holdout=[question_id for question_id in holdout if question_id in by_question],
        document_of=document_of,
    )


def chunk_relevance(questions: Sequence[Question], qrels: Mapping[str, Sequence]) -> dict[str, Relevance]:
    """The evidence-span labels of the answerable questions, from a chunk set's qrels columns."""
    return relevance_from_columns([question for question in questions if question.answerable], qrels)


def describe_choice(choice: FoldChoice, settings: LearnedFusionSettings) -> str:
    """The fuse_learned log line of one fold: its choice, weights and held-out scores."""
    name = f"{settings.objective}@{int(settings.objective_k)}"
    alone = ", ".join(f"{value:.4f}" for value in choice.component_held_out)
    return (
        f"{choice.part} {int(choice.fold)}: {choice.choice} {choice.weights} "
        f"(training {name} = {choice.training_objective:.4f}, inner estimate {choice.inner_objective:.4f}; "
        f"held out {choice.held_out_objective:.4f} against components alone {alone})"
    )


WEIGHTS_COLUMNS = [
    "fold",
    "part",
    "choice",
    "component",
    "weight",
    "at_grid_edge",
    "training_questions",
    "held_out_questions",
    "held_out_labelled",
    "objective",
    "training_objective",
    "inner_objective",
    "held_out_objective",
    "component_held_out_objective",
]


def weights_table(
    choices: Sequence[FoldChoice], components: Sequence[str], settings: LearnedFusionSettings
) -> pd.DataFrame:
    """One row per (fold, component): the fold's choice, the component's weight, held-out scores side by side.

    The table work/learned/<corpus>/<chunker>/<retriever>.csv, gathered into
    results/learned_fusion.csv: the weights' stability, and whether the
    fusion's held-out score (``held_out_objective``) carried against each
    component's own on the same questions (``component_held_out_objective``).
    """
    rows = [
        {
            "fold": choice.fold,
            "part": choice.part,
            "choice": choice.choice,
            "component": component,
            "weight": weight,
            "at_grid_edge": choice.at_grid_edge,
            "training_questions": choice.training_questions,
            "held_out_questions": choice.held_out_questions,
            "held_out_labelled": choice.held_out_labelled,
            "objective": f"{settings.objective}@{int(settings.objective_k)}",
            "training_objective": choice.training_objective,
            "inner_objective": choice.inner_objective,
            "held_out_objective": choice.held_out_objective,
            "component_held_out_objective": alone,
        }
        for choice in choices
        for component, weight, alone in zip(
            components, choice.weights, choice.component_held_out, strict=True
        )
    ]
    return pd.DataFrame(rows, columns=WEIGHTS_COLUMNS)
