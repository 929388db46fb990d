"""The one table of chunker and retriever kinds.

Every place that needs to know what a kind takes or how it is run reads this
table: the config plan (:mod:`rag.config`) fills defaults and checks bounds
from it, the workflow schedules a kind's rankings by its ``role``,
:mod:`rag.retrieval.retrievers` and :mod:`rag.retrieval.funnel` dispatch on the same roles, and a
test ties ``workflow/schemas/config.schema.yaml`` to it. Adding a kind starts
here. The module imports nothing from the rest of ``rag`` so that every other
module can read it.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

# A parameter without a default must be given in the entry.
REQUIRED = object()


@dataclass(frozen=True)
class Parameter:
    """One parameter of a kind: its type, default and bounds.

    ``nullable`` marks parameters whose null is a setting ("no reranking",
    "no cap"), not a missing value. Bounds are inclusive unless
    ``exclusive_minimum``; every number has a finite upper bound, so a value
    such as ``1e308`` is a config error, not an overflow in some job.
    """

    type: str  # integer, number, boolean, string, name (of a retriever), names
    default: object = REQUIRED
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] | None = None
    nullable: bool = False

    def problem(self, value: object) -> str | None:
        """Why ``value`` is not allowed, or None when it is."""
        if value is None:
            return None if self.nullable else "must not be null"
        if self.type in ("integer", "number"):
            numeric = isinstance(value, numbers.Real) and not isinstance(value, bool)
            if not numeric or (self.type == "integer" and not float(value).is_integer()):
                return f"must be {'an integer' if self.type == 'integer' else 'a number'}, got {value!r}"
            if not math.isfinite(value):
                return f"must be finite, got {value!r}"
            low = (
                ""
                if self.minimum is None
                else ("> " if self.exclusive_minimum else ">= ") + f"{self.minimum:g}"
            )
            high = "" if self.maximum is None else f"<= {self.maximum:g}"
            too_low = self.minimum is not None and (
                value <= self.minimum if self.exclusive_minimum else value < self.minimum
            )
            if too_low or (self.maximum is not None and value > self.maximum):
                return f"must be {' and '.join(filter(None, (low, high)))}, got {value!r}"
            return None
        if self.type == "boolean":
            return None if isinstance(value, bool) else f"must be true or false, got {value!r}"
        if self.type in ("string", "name"):
            if not isinstance(value, str):
                return f"must be a string, got {value!r}"
            if self.choices is not None and value not in self.choices:
                return f"must be one of {list(self.choices)}, got {value!r}"
            return None
        if self.type == "names":
            if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
                return f"must be a non-empty list of names, got {value!r}"
            return None
        raise AssertionError(f"unknown parameter type {self.type!r}")


@dataclass(frozen=True)
class Kind:
    """A chunker or retriever kind.

    ``role`` says how a retriever kind's rankings are made, and so which rule
    makes them: ``fitted`` kinds are fitted on chunk texts (rule rank),
    ``pretrained`` ones encode them with a pretrained model (rank_embedder),
    ``fused`` ones combine their components' rankings (fuse), ``approximate``
    ones index a dense base's vectors (rank_ivf), ``learned`` ones fuse their
    components with weights chosen by cross-validation (fuse_learned) and
    ``funnel`` ones rerank a first stage's candidates (funnel). ``dense`` kinds embed chunks and
    queries in one vector space, which an IVF index can hold.
    """

    name: str
    role: str
    parameters: dict[str, Parameter]
    dense: bool = False


_STEM = Parameter("boolean", False)
_HEADER = Parameter("boolean", True)
_WORDS = Parameter("integer", REQUIRED, minimum=1, maximum=100_000)
_COUNT = 1_000_000


def _by_name(*kinds: Kind) -> dict[str, Kind]:
    """The kinds keyed by their names, in table order, so that each name is written once."""
    return {kind.name: kind for kind in kinds}


CHUNKER_KINDS: dict[str, Kind] = _by_name(
    Kind(
        "fixed",
        "chunker",
        {
            "words": _WORDS,
            "overlap": Parameter("integer", 0, minimum=0, maximum=100_000),
            "header": _HEADER,
        },
    ),
    Kind("sentences", "chunker", {"max_words": _WORDS, "header": _HEADER}),
    Kind("sections", "chunker", {"header": _HEADER}),
)

RETRIEVER_KINDS: dict[str, Kind] = _by_name(
    Kind(
        "bm25",
        "fitted",
        {
            "k1": Parameter("number", 1.5, minimum=0, maximum=100),
            "b": Parameter("number", 0.75, minimum=0, maximum=1),
            "idf": Parameter("string", "lucene", choices=("lucene", "classic")),
            "stem": _STEM,
        },
    ),
    Kind(
        "tfidf",
        "fitted",
        {"normalize": Parameter("boolean", True), "sublinear": Parameter("boolean", True), "stem": _STEM},
    ),
    Kind(
        "lsa",
        "fitted",
        {
            "dimensions": Parameter("integer", 128, minimum=1, maximum=10_000),
            "min_df": Parameter("integer", 2, minimum=1, maximum=_COUNT),
            "stem": _STEM,
        },
        dense=True,
    ),
    # 256 tokens is the limit all-MiniLM-L6-v2 was trained with; text picks the
    # chunk with its "title › section" header (indexed) or without (plain).
    Kind(
        "embedder",
        "pretrained",
        {
            "model": Parameter("string", "all-MiniLM-L6-v2", choices=("all-MiniLM-L6-v2",)),
            "batch_size": Parameter("integer", 32, minimum=1, maximum=4096),
            "max_tokens": Parameter("integer", 256, minimum=2, maximum=512),
            "text": Parameter("string", "indexed", choices=("indexed", "plain")),
            # numpy on the CPU, or torch on a GPU when present (rag.retrieval.dense.sentence_embeddings).
            "device": Parameter("string", "cpu", choices=("cpu", "cuda", "auto")),
        },
        dense=True,
    ),
    Kind(
        "rrf",
        "fused",
        {
            "components": Parameter("names"),
            "constant": Parameter("number", 60, minimum=0, maximum=_COUNT),
        },
    ),
    Kind("score_sum", "fused", {"components": Parameter("names")}),
    # Weighted fusion whose weights are chosen by cross-validation on the
    # labelled questions (rag.evaluation.learned_fusion; rule fuse_learned).
    Kind(
        "learned",
        "learned",
        {
            "components": Parameter("names"),
            "fusion": Parameter("string", "minmax", choices=("rrf", "minmax", "zscore")),
            "constant": Parameter("number", 60, minimum=0, maximum=_COUNT),
            "folds": Parameter("integer", 5, minimum=2, maximum=100),
            "seed": Parameter("integer", 0, minimum=0, maximum=2**32 - 1),
            "steps": Parameter("integer", 10, minimum=1, maximum=100),
            "objective": Parameter("string", "ndcg", choices=("ndcg", "recall", "mrr")),
            "objective_k": Parameter("integer", 10, minimum=1, maximum=_COUNT),
        },
    ),
    Kind(
        "ivf",
        "approximate",
        {
            "base": Parameter("name"),
            "lists": Parameter("integer", 16, minimum=1, maximum=_COUNT),
            "probes": Parameter("integer", 4, minimum=1, maximum=_COUNT),
            "seed": Parameter("integer", 0, minimum=0, maximum=2**32 - 1),
        },
    ),
    Kind(
        "funnel",
        "funnel",
        {
            "first": Parameter("name"),
            "rerank": Parameter("name", None, nullable=True),
            "candidates": Parameter("integer", 30, minimum=1, maximum=_COUNT),
            "diversity": Parameter("integer", None, minimum=1, maximum=_COUNT, nullable=True),
        },
    ),
)

# Keys every retriever entry may carry besides its kind's parameters.
COMMON_RETRIEVER_KEYS = ("kind", "chunkers", "optional")


def kinds_with(role: str | None = None, *, dense: bool | None = None) -> tuple[str, ...]:
    """The retriever kinds of a role and/or density, in table order."""
    return tuple(
        name
        for name, kind in RETRIEVER_KINDS.items()
        if (role is None or kind.role == role) and (dense is None or kind.dense == dense)
    )


def defaults(kinds: dict[str, Kind]) -> dict[str, dict[str, object]]:
    """Kind -> parameter -> default (None for a required parameter)."""
    return {
        name: {key: (None if p.default is REQUIRED else p.default) for key, p in kind.parameters.items()}
        for name, kind in kinds.items()
    }


def parameter_problem(kind: str, key: str, value: object) -> str | None:
    """Why ``value`` is not allowed for a retriever or chunker kind's parameter, or None."""
    table = RETRIEVER_KINDS if kind in RETRIEVER_KINDS else CHUNKER_KINDS
    return table[kind].parameters[key].problem(value)
