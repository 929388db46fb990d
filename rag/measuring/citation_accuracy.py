"""Citation accuracy and the citation check, measured against claim-level hand labels.

The labels (resources/answer_labels/claim_answers.csv and claims.csv) split
each labelled answer into its claims and say, for every citation marker a
claim carries, whether the cited source ``supports`` the claim, is
``related`` (about the same body or attribute but does not state it) or
``unrelated``. From them:

- *citation accuracy*: the share of citation markers whose source supports
  their claim;
- *citation coverage*: the share of answers given (refusals left out) whose
  every claim is supported by some source it cites;
- an answer is *unsupported* when one of its claims is not supported by any
  source it cites (a claim without a marker included): the truth the
  citation check is held to.

Where no labels exist the same two shares come from the citation check
(:func:`rag.answering.verification.check_claim`), marked ``source = check``.
Every share carries a Wilson score interval (:func:`wilson_interval`).

The check's precision and recall at flagging unsupported answers
(:func:`citation_check_table`) are reported per split: the development
labels were used to design the check, the held-out ones only to measure it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from rag.answering.verification import check_answer, check_claim, parse_citations, split_claims
from rag.formats.files import read_text_csv

ANSWERS_PATH = "resources/answer_labels/claim_answers.csv"
CLAIMS_PATH = "resources/answer_labels/claims.csv"

SPLITS = ("development", "heldout")
CORRECTNESS = ("correct", "partly", "wrong")
SUPPORT = ("supports", "related", "unrelated")
REFUSAL = "0"  # the claim number of a refusal, which claims nothing
SETUP_KEYS = ["corpus", "questions", "generator", "chunker", "retriever", "k"]
ANSWER_COLUMNS = (
    "item",
    "split",
    "table",
    *SETUP_KEYS,
    "question_id",
    "answerable",
    "question",
    "reference",
    "answer",
    "cited",
    "cited_chunks",
    "correctness",
)
CLAIM_COLUMNS = ("item", "claim", "text", "correctness", "citations", "note")
# The rules the check table compares: the check as the pipeline runs it, held to
# the question (anchored), and the same check without the question (lexical).
ANCHORED = "anchored"
LEXICAL = "lexical"
LEVEL = 0.95
_MARK = re.compile(r"(\d+):([a-z]+)")


class ClaimLabelError(ValueError):
    """A claim-label file is not usable; one line naming the file, line and column."""


@dataclass(frozen=True)
class ClaimLabels:
    answers: pd.DataFrame
    claims: pd.DataFrame


def no_labels() -> ClaimLabels:
    """No labelled answer: every share then comes from the check."""
    return ClaimLabels(pd.DataFrame(columns=list(ANSWER_COLUMNS)), pd.DataFrame(columns=list(CLAIM_COLUMNS)))


def wilson_interval(successes: int, trials: int, level: float = LEVEL) -> tuple[float, float]:
    """The Wilson score interval of a binomial share; (nan, nan) for no trials."""
    if trials <= 0:
        return math.nan, math.nan
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes of {trials} trials")
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + level / 2)
    share = successes / trials
    denominator = 1 + z * z / trials
    centre = (share + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _share(name: str, successes: int, trials: int) -> dict[str, float]:
    low, high = wilson_interval(successes, trials)
    return {
        name: successes / trials if trials else math.nan,
        f"{name}_low": low,
        f"{name}_high": high,
    }


def _read(path, columns: Sequence[str]) -> pd.DataFrame:
    return read_text_csv(path, columns, ClaimLabelError)


def parse_marks(value: str) -> list[tuple[int, str]]:
    """``"1:supports 3:related"`` as [(1, "supports"), (3, "related")]; ValueError if malformed."""
    marks = []
    for part in value.split():
        match = _MARK.fullmatch(part)
        if match is None or match.group(2) not in SUPPORT:
            raise ValueError(f"{part!r} is not source:verdict with a verdict of {SUPPORT}")
        marks.append((int(match.group(1)), match.group(2)))
    return marks


def read_claim_labels(answers_path=ANSWERS_PATH, claims_path=CLAIMS_PATH) -> ClaimLabels:
    """Both label files, checked against each other.

    Items unique; every claim's item labelled; values from the label sets;
    every marker an answer carries labelled on some claim and no claim
    labelling a source the answer does not cite.
    """
    answers = _read(answers_path, ANSWER_COLUMNS)
    claims = _read(claims_path, CLAIM_COLUMNS)
    repeated = answers.index[answers["item"].duplicated()]
    if len(repeated):
        raise ClaimLabelError(f"{answers_path}: line {int(repeated[0]) + 2}: item repeats")
    for column, allowed in (("split", SPLITS), ("correctness", CORRECTNESS)):
        bad = answers.index[~answers[column].isin(allowed)]
        if len(bad):
            raise ClaimLabelError(f"{answers_path}: line {int(bad[0]) + 2}: {column} is not one of {allowed}")
    cited = {}
    for index, row in answers.iterrows():
        try:
            cited[row["item"]] = {int(number) for number in row["cited"].split()}
        except ValueError:
            raise ClaimLabelError(
                f"{answers_path}: line {index + 2}: cited {row['cited']!r} is not numbers"
            ) from None
    labelled: dict[str, set[int]] = {item: set() for item in cited}
    seen: set[tuple[str, str]] = set()
    for index, row in claims.iterrows():
        where = f"{claims_path}: line {index + 2}"
        if row["item"] not in cited:
            raise ClaimLabelError(f"{where}: item {row['item']!r} is not in {answers_path}")
        if not row["claim"].isdigit() or (row["item"], row["claim"]) in seen:
            raise ClaimLabelError(f"{where}: claim {row['claim']!r} is not a new number for its item")
        seen.add((row["item"], row["claim"]))
        if row["correctness"] not in CORRECTNESS:
            raise ClaimLabelError(f"{where}: correctness {row['correctness']!r} is not one of {CORRECTNESS}")
        try:
            marks = parse_marks(row["citations"])
        except ValueError as error:
            raise ClaimLabelError(f"{where}: citations: {error}") from None
        for number, _ in marks:
            if number not in cited[row["item"]]:
                raise ClaimLabelError(f"{where}: source [{number}] is not cited by the answer")
            labelled[row["item"]].add(number)
    for item, numbers in cited.items():
        if not numbers <= labelled[item]:
            unlabelled = min(numbers - labelled[item])
            raise ClaimLabelError(f"{claims_path}: item {item}: marker [{unlabelled}] has no label")
    return ClaimLabels(answers, claims)


def answer_support(labels: ClaimLabels) -> pd.DataFrame:
    """Per labelled answer: refused, claims, supported claims, markers, supporting markers,
    and ``unsupported`` (a claim no cited source supports) and ``covered`` (every claim
    supported), both False for a refusal."""
    rows = []
    by_item = dict(tuple(labels.claims.groupby("item", sort=False)))
    for answer in labels.answers.itertuples(index=False):
        claims = by_item.get(answer.item)
        if claims is None:
            continue
        stated = claims[claims["claim"] != REFUSAL]
        marks = [parse_marks(value) for value in stated["citations"]]
        supported = [any(verdict == "supports" for _, verdict in claim) for claim in marks]
        refused = stated.empty
        rows.append(
            {
                "item": answer.item,
                "split": answer.split,
                **{key: getattr(answer, key) for key in SETUP_KEYS},
                "question_id": answer.question_id,
                "refused": refused,
                "claims": len(stated),
                "supported_claims": sum(supported),
                "markers": sum(len(claim) for claim in marks),
                "supporting_markers": sum(verdict == "supports" for claim in marks for _, verdict in claim),
                "unsupported": not refused and not all(supported),
                "covered": not refused and all(supported),
            }
        )
    columns = ["item", "split", *SETUP_KEYS, "question_id", "refused", "claims", "supported_claims"]
    columns += ["markers", "supporting_markers", "unsupported", "covered"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["k"] = frame["k"].astype(int)
    return frame


# --------------------------------------------------------------------------
# The check, run on an answer as the pipeline runs it
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Sources:
    """An answer's prompt sources: number to text and number to label (title › section)."""

    texts: Mapping[int, str]
    labels: Mapping[int, str]


def check_flags(answer: str, sources: Sources, question: str | None) -> bool:
    """Whether the check flags the answer: some claim not supported by its cited sources."""
    return not check_answer(answer, sources.texts, question=question, labels=sources.labels).supported


def check_markers(answer: str, sources: Sources, question: str | None) -> tuple[int, int]:
    """The check's reading of each marker: (markers, markers whose source alone passes the claim)."""
    markers = passed = 0
    for sentence in split_claims(answer):
        cited, claim = parse_citations(sentence)
        for number in cited:
            markers += 1
            alone = f"{claim} [{number}]"
            passed += check_claim(alone, sources.texts, question=question, labels=sources.labels).supported
    return markers, passed


def citation_check_table(
    labels: ClaimLabels,
    sources_of: Callable[[pd.Series], Sources],
) -> pd.DataFrame:
    """The check's precision and recall at flagging unsupported answers, against the labels.

    Over the labelled answers given with sources (refusals and closed-book
    answers left out: a closed-book answer cites nothing and is flagged by
    construction). One row per split, rule (anchored: as the pipeline runs
    it; lexical: without the question) and setup, then one pooled row per
    split, rule and generator and over every generator (``questions`` = ``all``;
    ``generator`` = ``all`` for the latter). ``citing`` counts the answers with
    a marker: an answer that cites nothing is unsupported and flagged by
    construction. Intervals: Wilson.
    ``sources_of`` gives a labelled answer's prompt sources.
    """
    support = answer_support(labels).set_index("item")
    answers = {row["item"]: row for _, row in labels.answers.iterrows()}
    given = support[~support["refused"] & (support["retriever"] != "none")]
    records = []
    for item, truth in given.iterrows():
        answer = answers[item]
        sources = sources_of(answer)
        for rule, question in ((ANCHORED, answer["question"]), (LEXICAL, None)):
            records.append(
                {
                    "split": truth["split"],
                    "rule": rule,
                    **{key: truth[key] for key in SETUP_KEYS},
                    "unsupported": bool(truth["unsupported"]),
                    "flagged": check_flags(answer["answer"], sources, question),
                    "citing": truth["markers"] > 0,
                }
            )
    frame = pd.DataFrame(records, columns=["split", "rule", *SETUP_KEYS, "unsupported", "flagged", "citing"])
    rows = []
    for keys, group in frame.groupby(["split", "rule", *SETUP_KEYS], sort=True):
        rows.append(_check_row(dict(zip(["split", "rule", *SETUP_KEYS], keys, strict=True)), group))
    for (split, rule, generator), group in frame.groupby(["split", "rule", "generator"], sort=True):
        pooled = {"split": split, "rule": rule, **dict.fromkeys(SETUP_KEYS, "all"), "generator": generator}
        rows.append(_check_row(pooled, group))
    for (split, rule), group in frame.groupby(["split", "rule"], sort=True):
        pooled = {"split": split, "rule": rule, **dict.fromkeys(SETUP_KEYS, "all")}
        rows.append(_check_row(pooled, group))
    return pd.DataFrame(rows, columns=CHECK_COLUMNS)


CHECK_COLUMNS = ["split", "rule", *SETUP_KEYS, "answers", "citing", "unsupported", "flagged"]
CHECK_COLUMNS += ["flagged_unsupported"]
CHECK_COLUMNS += [f"{name}{part}" for name in ("precision", "recall") for part in ("", "_low", "_high")]
ACCURACY_COLUMNS = [*SETUP_KEYS, "source", "answers", "markers", "supporting_markers"]
ACCURACY_COLUMNS += ["accuracy", "accuracy_low", "accuracy_high", "covered", "coverage", "coverage_low"]
ACCURACY_COLUMNS += ["coverage_high"]


def _check_row(keys: dict, group: pd.DataFrame) -> dict:
    unsupported = group["unsupported"].to_numpy(bool)
    flagged = group["flagged"].to_numpy(bool)
    hits = int((unsupported & flagged).sum())
    return {
        **keys,
        "answers": len(group),
        "citing": int(group["citing"].sum()),
        "unsupported": int(unsupported.sum()),
        "flagged": int(flagged.sum()),
        "flagged_unsupported": hits,
        **_share("precision", hits, int(flagged.sum())),
        **_share("recall", hits, int(unsupported.sum())),
    }


def citation_accuracy_table(
    judged: pd.DataFrame,
    labels: ClaimLabels,
    sources_of: Callable[[pd.Series], Sources],
    question_of: Callable[[pd.Series], str | None],
) -> pd.DataFrame:
    """Citation accuracy and coverage per model and setting, from the labels and from the check.

    ``judged`` is the per-answer table (results/llm_answers_judged.csv).
    Every setup gets a ``check`` row over all its answers given (the check's
    reading of each marker and answer); a setup with labelled answers also
    gets a ``labels`` row over those. Use the ``labels`` row where there is one.
    """
    rows = []
    for keys, setup in judged.groupby(SETUP_KEYS, sort=True):
        given = setup[~setup["abstained"].astype(bool)]
        markers = passed = covered = 0
        for _, row in given.iterrows():
            sources = sources_of(row)
            question = question_of(row)
            counted, supporting = check_markers(row["answer"], sources, question)
            markers += counted
            passed += supporting
            covered += not check_flags(row["answer"], sources, question)
        rows.append(_accuracy_row(keys, "check", len(given), markers, passed, covered))
    support = answer_support(labels)
    for keys, setup in support.groupby(SETUP_KEYS, sort=True):
        given = setup[~setup["refused"]]
        rows.append(
            _accuracy_row(
                keys,
                "labels",
                len(given),
                int(given["markers"].sum()),
                int(given["supporting_markers"].sum()),
                int(given["covered"].sum()),
            )
        )
    table = pd.DataFrame(rows, columns=ACCURACY_COLUMNS)
    return table.sort_values([*SETUP_KEYS, "source"], kind="stable", ignore_index=True)


def _accuracy_row(keys, source: str, answers: int, markers: int, supporting: int, covered: int) -> dict:
    return {
        **dict(zip(SETUP_KEYS, keys, strict=True)),
        "source": source,
        "answers": answers,
        "markers": markers,
        "supporting_markers": supporting,
        **_share("accuracy", supporting, markers),
        "covered": covered,
        **_share("coverage", covered, answers),
    }


# --------------------------------------------------------------------------
# The labels beside the per-answer table
# --------------------------------------------------------------------------

ROW_KEYS = [*SETUP_KEYS, "question_id"]


def _row_key(row) -> tuple:
    return tuple(str(row[key]) for key in ROW_KEYS)


def labels_of_table(labels: ClaimLabels, judged: pd.DataFrame, path: str = ANSWERS_PATH) -> ClaimLabels:
    """The labelled answers whose setup and question are rows of ``judged``, each answer
    text checked to be that row's word for word (a stale label is refused in one line).
    Labels of setups the table does not hold (another configuration) are left out."""
    answers = {_row_key(row): row["answer"] for _, row in judged.iterrows()}
    keep = []
    for index, row in labels.answers.iterrows():
        key = _row_key(row)
        if key not in answers:
            continue
        if answers[key] != row["answer"]:
            raise ClaimLabelError(
                f"{path}: line {index + 2}: item {row['item']}: the answer differs from the table's "
                f"{'/'.join(key)} (labels of another run)"
            )
        keep.append(index)
    kept = labels.answers.loc[keep]
    claims = labels.claims[labels.claims["item"].isin(set(kept["item"]))]
    return ClaimLabels(kept.reset_index(drop=True), claims.reset_index(drop=True))


def chunk_sources(chunk_ids: Sequence[str], chunks: Mapping[str, tuple[str, str]]) -> Sources:
    """Sources numbered from 1 in prompt order; ``chunks`` maps a chunk id to (text, label).
    An id the chunks lack (shown as ``-``) is left out, so citing it is a missing citation."""
    texts, labels = {}, {}
    for number, chunk_id in enumerate(chunk_ids, start=1):
        if chunk_id in chunks:
            texts[number], labels[number] = chunks[chunk_id]
    return Sources(texts, labels)


def labelled_sources(answer: pd.Series, chunks: Mapping[str, tuple[str, str]]) -> Sources:
    """A labelled answer's cited sources, from its ``cited`` numbers and ``cited_chunks`` ids."""
    numbers = [int(number) for number in str(answer["cited"]).split()]
    ids = str(answer["cited_chunks"]).split()
    texts, labels = {}, {}
    for number, chunk_id in zip(numbers, ids, strict=True):
        if chunk_id in chunks:
            texts[number], labels[number] = chunks[chunk_id]
    return Sources(texts, labels)


def describe_check(table: pd.DataFrame) -> list[str]:
    """Log lines: the pooled precision and recall per split and rule (every generator)."""
    pooled = table[table["generator"] == "all"]
    return [
        f"{row.split} labels, {row.rule} check: {row.flagged_unsupported} of {row.flagged} flagged "
        f"answers unsupported, {row.flagged_unsupported} of {row.unsupported} unsupported flagged "
        f"({row.answers} answers)"
        for row in pooled.itertuples(index=False)
    ]


def preferred_rows(table: pd.DataFrame) -> pd.DataFrame:
    """One row per setup: the labels' where the setup has labelled answers, else the check's."""
    has_labels = table[table["source"] == "labels"].set_index(SETUP_KEYS).index
    keys = table.set_index(SETUP_KEYS).index
    keep = (table["source"] == "labels") | ~keys.isin(has_labels)
    return table[keep.to_numpy()].reset_index(drop=True)
