"""``rag ask``'s generators, read from the table of kinds (:data:`rag.kinds.GENERATOR_KINDS`).

Every generator kind with a ``read`` behaviour (an ``offline`` one) answers
``rag ask --generator KIND`` offline, at the threshold its kind's policy
gives (:func:`threshold_policy`); one with a ``candidates`` behaviour first
reads a deeper pool of fused chunks (rag.ask.index), and one with a
``reading`` is printed with the parts of its score. Language-model kinds run
as named entries (``--generator llm``, or an entry of ./config.yaml) through
their ``generate`` behaviour. So a generator kind added as the pipeline adds
one (its module, its entry in rag/kinds.py, its schema block and its test)
reaches ``rag ask`` with no name written here: nothing in rag/ask compares a
generator's name with a kind's (tests/unit/ask/test_ask_generator_kinds.py).

Plain data and the table of kinds only, so that the command's help and usage
errors read it without importing numpy.
"""

from __future__ import annotations

import math

from rag.kinds import EXTRACTIVE_THRESHOLD, GENERATOR_KINDS, Kind

# The generator kinds rag ask answers with offline, in table order.
OFFLINE_GENERATORS = tuple(name for name, kind in GENERATOR_KINDS.items() if kind.read is not None)
# The threshold policies of the table (rag.kinds.Kind.threshold).
CONFIGURED = "configured"
CROSS_VALIDATED = "cross_validated"
# The suffix of a kind's name in the measured tables when it adds the MiniLM
# similarity to its score (results/reader_thresholds.csv, results/verdicts.csv).
SIMILARITY_SUFFIX = "_minilm"
# The threshold of a kind without a policy: it answers whenever its prompt has a sentence.
NO_THRESHOLD = -math.inf


def offline_kind(name: str) -> Kind:
    """The table's entry of an offline generator kind; ValueError naming the offline kinds otherwise."""
    if name not in OFFLINE_GENERATORS:
        raise ValueError(f"unknown offline generator {name!r}; choose one of {list(OFFLINE_GENERATORS)}")
    return GENERATOR_KINDS[name]


def takes_similarity(name: str) -> bool:
    """Whether an offline kind adds the MiniLM similarity to its score (it has a ``similarity`` parameter)."""
    return "similarity" in offline_kind(name).parameters


def threshold_policy(name: str) -> str | None:
    """Where an offline kind's default threshold comes from: configured, cross-validated, or None (none)."""
    return offline_kind(name).threshold


def fixed_threshold(name: str) -> float | None:
    """An offline kind's default threshold when it needs no table: the configured one
    (:data:`rag.kinds.EXTRACTIVE_THRESHOLD`) or none at all (:data:`NO_THRESHOLD`); None for a
    cross-validated kind, whose threshold is read from the pipeline's results."""
    policy = threshold_policy(name)
    if policy == CROSS_VALIDATED:
        return None
    return EXTRACTIVE_THRESHOLD if policy == CONFIGURED else NO_THRESHOLD


def measured_name(name: str, similarity: bool) -> str:
    """The name under which ``rag ask``'s generator (with the MiniLM ``similarity`` or not) is measured:
    an offline kind that takes the similarity and adds it is measured as ``<kind>_minilm``, every other
    generator under its own name."""
    adds = similarity and name in OFFLINE_GENERATORS and takes_similarity(name)
    return f"{name}{SIMILARITY_SUFFIX}" if adds else name


def measured_generators() -> tuple[tuple[str, str, float | None, bool], ...]:
    """The generators measured on ``rag ask``'s path (results/answers_heldout.csv, verdicts.csv).

    Each is (name in the tables, the kind rag ask runs, its threshold, whether
    it adds the MiniLM similarity); the threshold is None for a cross-validated
    kind (the chosen one of that name). Every offline kind that abstains (one
    with a threshold policy), in table order, and after each kind that takes a
    similarity the same kind with it.
    """
    measured = []
    for name in OFFLINE_GENERATORS:
        if threshold_policy(name) is None:
            continue
        measured.append((name, name, fixed_threshold(name), False))
        if takes_similarity(name):
            measured.append((measured_name(name, True), name, None, True))
    return tuple(measured)
