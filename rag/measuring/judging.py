"""Judges of answers, measured against hand labels: the deterministic one and language models.

The labels are the claim-level readings (resources/answer_labels/
claim_answers.csv and claims.csv, :func:`judged_labels`): every labelled
answer to an answerable question with a reference answer, SmolLM2's, the
offline readers' and Qwen's. Two questions are asked of each:

- *correct*: is the answer right, given the question and its reference
  answer? The hand labels say correct, partly correct or wrong; a judge is
  measured on "correct" against the rest: partly correct is never correct,
  and the table counts the partly labels a judge calls correct apart.
- *supported*: do the sources the answer cites hold what it says? An answer
  that cites nothing is not supported, by every judge and every label, so
  only answers that cite are asked.

The deterministic judge answers the first with
:func:`rag.measuring.correctness.judge_answer` and the second with the
citation check (:func:`rag.answering.verification.check_answer`). A model
judge is a ``judge`` entry of config['generators'] (rag/kinds.py), asked the
strongest way a small model can be asked:

- the judged texts are data: each placeholder of its prompts is filled with
  its text inside declared delimiters (``<answer>`` ... ``</answer>``, and
  ``<question>``, ``<reference>``, ``<sources>``), escaped so that no text
  can close or open one (:func:`data_block`); the system message says so;
- the verdict is a JSON-schema enum (:func:`verdict_schema`) sent as the
  ``response_format`` (``verdict: structured``), read strictly
  (:func:`parse_verdict`): a reply that is not exactly one verdict is
  :data:`NO_VERDICT`, counted in the table, never read by its first word;
- the verdict's probability comes from the server's log-probabilities of the
  verdict token's candidates where it gives them (:func:`verdict_probability`),
  and the probability above which a judge says yes is chosen by
  cross-validation on the development labels (:func:`choose_threshold`);
  the held-out labels are only measured.

Its requests go through the one client and its replies are cached like every
other. :func:`calibration_table` compares every judge's verdicts with the
labels, separately on the held-out labels (the report) and the development
labels (where the threshold was chosen, judged out of fold): agreement,
Cohen's kappa and the confusion counts, each with a seeded
percentile-bootstrap interval over the labelled answers. A judge that always
says "correct" (:data:`ALWAYS_CORRECT`) is in the table as the floor.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from rag.answering.llm_answers import EndpointEntry, endpoint_entry_fields
from rag.formats.files import read_text_csv
from rag.measuring.citation_accuracy import ClaimLabels, answer_support
from rag.models.client import Completion, Sampling

if TYPE_CHECKING:
    from rag.models.gate import Gate

# The hand labels and the chunks their cited chunk ids name.
LABELS_PATH = "resources/answer_labels/labels.csv"
LABELLED_CORPUS = "solar_system"
LABELLED_CHUNKER = "sentences100"
# The hand labels' values.
CORRECTNESS_LABELS = ("correct", "partly", "wrong")
SUPPORT_LABELS = ("yes", "no")
LABEL_COLUMNS = (
    "item",
    "table",
    "generator",
    "questions",
    "chunker",
    "retriever",
    "question_id",
    "question",
    "reference",
    "answer",
    "cited",
    "cited_chunks",
    "correctness",
    "supported",
    "reason",
)
# The labels of the development questions choose; the held-out files' only measure.
DEVELOPMENT = "development"
HELDOUT = "heldout"
# What a judge's verdict on one answer is called in the calibration table.
CORRECT_TASK = "correct"
SUPPORTED_TASK = "supported"
TASKS = (CORRECT_TASK, SUPPORTED_TASK)
# The verdicts a judge may give, per task (the JSON schema's enum), and the one that is "yes".
VERDICTS: dict[str, tuple[str, ...]] = {
    CORRECT_TASK: ("correct", "partly", "wrong"),
    SUPPORTED_TASK: ("supported", "unsupported"),
}
YES_VERDICT = {CORRECT_TASK: "correct", SUPPORTED_TASK: "supported"}
NOT_ASKED = {CORRECT_TASK: "wrong", SUPPORTED_TASK: "unsupported"}
# A reply that is not exactly one verdict: counted, and never a yes.
NO_VERDICT = "no verdict"
# A plain-text reply may say yes or no for the task's verdicts.
_PLAIN_WORDS: dict[str, dict[str, str]] = {
    task: {**{value: value for value in values}, "yes": YES_VERDICT[task], "no": NOT_ASKED[task]}
    for task, values in VERDICTS.items()
}
DETERMINISTIC = "deterministic"
ALWAYS_CORRECT = "always_correct"
# The judged texts' delimiters, one tag per placeholder (rag.kinds.JUDGE_CORRECT_USER).
DATA_TAGS = ("question", "reference", "answer", "sources")
# Threshold choice: the grid of probabilities, the folds (by question) and their seed.
THRESHOLD_GRID: tuple[float, ...] = tuple(round(0.05 * step, 2) for step in range(1, 20))
THRESHOLD_FOLDS = 5
THRESHOLD_SEED = 0

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
LEVEL = 0.95


def judged_labels(claim_labels: ClaimLabels) -> pd.DataFrame:
    """The labels the judges are measured against, in :data:`LABEL_COLUMNS`, from the claim readings.

    One row per labelled answer to an answerable question with a reference
    answer (what a correctness judge can be asked about). ``correctness`` is
    the answer's reading; ``supported`` is "yes" when every claim it makes is
    supported by a source it cites (rag.measuring.citation_accuracy's
    ``covered``), so an answer citing nothing, or refusing, is "no".
    ``reason`` joins the claims' notes.
    """
    answers = claim_labels.answers
    judged = answers[(answers["answerable"] == "True") & (answers["reference"].str.strip() != "")]
    covered = answer_support(claim_labels).set_index("item")["covered"]
    notes = claim_labels.claims.groupby("item", sort=False)["note"].agg(
        lambda values: "; ".join(value for value in values if value.strip())
    )
    frame = judged.assign(
        supported=[
            SUPPORT_LABELS[0] if covered.get(item, False) else SUPPORT_LABELS[1] for item in judged["item"]
        ],
        reason=[notes.get(item, "") for item in judged["item"]],
    )
    return frame[list(LABEL_COLUMNS)].reset_index(drop=True)


class LabelError(ValueError):
    """The hand-label file is not usable; one line naming the file, row and column."""


def read_labels(path) -> pd.DataFrame:
    """The hand labels, checked: every column there, values from the label sets, items unique."""
    frame = read_text_csv(path, LABEL_COLUMNS, LabelError)
    for column, allowed in (("correctness", CORRECTNESS_LABELS), ("supported", SUPPORT_LABELS)):
        bad = frame.index[~frame[column].isin(allowed)]
        if len(bad):
            row = int(bad[0]) + 2
            raise LabelError(
                f"{path}: line {row}: {column} {frame.at[bad[0], column]!r} is not one of {allowed}"
            )
    duplicated = frame.index[frame["item"].duplicated()]
    if len(duplicated):
        raise LabelError(
            f"{path}: line {int(duplicated[0]) + 2}: item {frame.at[duplicated[0], 'item']!r} repeats"
        )
    return frame


def parse_verdict(reply: str, task: str) -> str:
    """A judge's reply read strictly: one of :data:`VERDICTS` for ``task``, or :data:`NO_VERDICT`.

    The reply must be exactly the schema's object, ``{"verdict": "<value>"}``
    with no other key, or (a server that refused the schema) exactly one word:
    a verdict of the task, or yes/no, with at most a closing full stop.
    Anything else is no verdict: "Not correct.", "not supported", "I cannot
    say yes." and "correct, but..." are not read by any word they hold.
    """
    text = (reply or "").strip()
    allowed = VERDICTS[task]
    if text.startswith("{"):
        try:
            document = json.loads(text)
        except ValueError:
            return NO_VERDICT
        if isinstance(document, dict) and set(document) == {"verdict"} and document["verdict"] in allowed:
            return document["verdict"]
        return NO_VERDICT
    word = text[:-1] if text.endswith(".") else text
    return _PLAIN_WORDS[task].get(word.lower(), NO_VERDICT) if word.isalpha() else NO_VERDICT


def verdict_probability(completion: Completion, task: str) -> float | None:
    """P(yes) from the log-probabilities of the verdict token's candidates, or None.

    The verdict's first token is found in the reply's tokens; its candidates
    (the server's ``top_logprobs``, before any grammar) are read as the
    verdict they begin (quotes and spaces stripped; a candidate that begins
    none, or more than one, is left out), and the probability is the mass of
    the yes verdict over the mass of every verdict. None when the server gave
    no log-probabilities, the reply holds no verdict, or no candidate begins one.
    """
    verdict = parse_verdict(completion.text, task)
    tokens = completion.top_logprobs
    if verdict == NO_VERDICT or not tokens:
        return None
    where = _verdict_start(completion.text, verdict)
    if where is None:
        return None
    offset = 0
    for token, candidates in tokens:
        end = offset + len(token)
        if end > where:
            if token[: max(where - offset, 0)].strip(' "') != "":
                return None  # the verdict's first character shares a token with other text
            return _yes_share(candidates, task)
        offset = end
    return None


def _verdict_start(text: str, verdict: str) -> int | None:
    """Where the verdict's value starts in a structured reply (after its quote); None in plain text."""
    match = re.search(r'"verdict"\s*:\s*"', text)
    return match.end() if match is not None else None


def _yes_share(candidates: Sequence, task: str) -> float | None:
    mass = dict.fromkeys(VERDICTS[task], 0.0)
    for token, logprob in candidates:
        stem = str(token).strip(' "').lower()
        if not stem:
            continue
        begun = [value for value in VERDICTS[task] if value.startswith(stem)]
        if len(begun) == 1:
            mass[begun[0]] += math.exp(float(logprob))
    total = sum(mass.values())
    if total <= 0:
        return None
    return mass[YES_VERDICT[task]] / total


# --------------------------------------------------------------------------
# The judges
# --------------------------------------------------------------------------


VERDICT_FRAME_COLUMNS = [
    "item",
    "correct_verdict",
    "correct_probability",
    "supported_verdict",
    "supported_probability",
]


def deterministic_verdicts(labels: pd.DataFrame, chunk_texts: Mapping[str, str]) -> pd.DataFrame:
    """The deterministic judge on every labelled answer: the correctness judge and the citation check."""
    from rag.answering.llm_answers import is_abstention
    from rag.answering.verification import check_answer
    from rag.measuring.correctness import judge_answer

    rows = []
    for row in labels.itertuples(index=False):
        abstained = is_abstention(row.answer)
        outcome = judge_answer(row.answer, row.reference or None, True, abstained)
        sources = _cited_sources(row, chunk_texts)
        supported = bool(sources) and not abstained and check_answer(row.answer, sources).supported
        rows.append(_certain(row.item, bool(outcome.correct), bool(supported)))
    return pd.DataFrame(rows, columns=VERDICT_FRAME_COLUMNS)


def always_correct_verdicts(labels: pd.DataFrame) -> pd.DataFrame:
    """The floor: a judge that calls every answer correct and every citing answer supported."""
    rows = [_certain(row.item, True, bool(str(row.cited).split())) for row in labels.itertuples(index=False)]
    return pd.DataFrame(rows, columns=VERDICT_FRAME_COLUMNS)


def _certain(item: str, correct: bool, supported: bool) -> dict:
    return {
        "item": item,
        "correct_verdict": YES_VERDICT[CORRECT_TASK] if correct else NOT_ASKED[CORRECT_TASK],
        "correct_probability": float(correct),
        "supported_verdict": YES_VERDICT[SUPPORTED_TASK] if supported else NOT_ASKED[SUPPORTED_TASK],
        "supported_probability": float(supported),
    }


def _cited_sources(row, chunk_texts: Mapping[str, str]) -> dict[int, str]:
    """The cited source numbers and their chunk texts, as the answer's prompt numbered them."""
    numbers = [int(n) for n in str(row.cited).split() if n.isdigit()]
    chunks = str(row.cited_chunks).split()
    return {number: chunk_texts.get(chunk, "") for number, chunk in zip(numbers, chunks, strict=False)}


@dataclass(frozen=True)
class ModelJudge(EndpointEntry):
    """A ``judge`` entry of config['generators']: an endpoint, its sampling, prompts and verdict form."""

    name: str
    base_url: str
    model: str
    sampling: Sampling
    system: str
    correct_user: str
    supported_user: str
    key_variable: str | None = None
    concurrency: int = 1
    timeout_seconds: float = 120.0
    verdict: str = "structured"
    top_logprobs: int = 10

    # A judge's replies are read by parse_verdict, never turned into cited answer text
    # (rag.answering.llm_answers.complete_with_cache reads this).
    structured = False


def judge_from_entry(name: str, entry: Mapping) -> ModelJudge:
    """A :class:`ModelJudge` from a canonical ``judge`` entry."""
    return ModelJudge(
        name=name,
        system=entry["system"],
        correct_user=entry["correct_user"],
        supported_user=entry["supported_user"],
        verdict=str(entry.get("verdict", "structured")),
        top_logprobs=int(entry.get("top_logprobs", 10)),
        **endpoint_entry_fields(entry),
    )


def verdict_schema(task: str) -> dict:
    """The JSON schema of a verdict: ``{"verdict": <one of the task's verdicts>}`` and nothing else."""
    return {
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": list(VERDICTS[task])}},
        "required": ["verdict"],
        "additionalProperties": False,
    }


def verdict_format(judge: ModelJudge, task: str) -> dict | None:
    """The ``response_format`` of a judge's request for ``task``; None when it asks in plain text.

    The bundled llama-cpp-python server honours ``json_object`` with a
    ``schema`` (compiled to a grammar); other endpoints get the protocol's
    standard ``json_schema`` form, as for cited answers.
    """
    if judge.verdict != "structured":
        return None
    schema = verdict_schema(task)
    if judge.bundled:
        return {"type": "json_object", "schema": schema}
    return {
        "type": "json_schema",
        "json_schema": {"name": f"{task}_verdict", "strict": True, "schema": schema},
    }


# Brackets a model may read as the angle brackets of a data tag, as rag.answering.prompts
# lists them; after neutralize() no "<" or ">" is left in the data.
_TAG_LOOKALIKE = re.compile(
    r"[\u2039\u3008\u27e8\u00ab\u276e\u02c2\u2329\u29fc\u276c\u2770]\s*[/\u2215\u2044\u29f8]?\s*"
    rf"(?:{'|'.join(DATA_TAGS)})\s*[\u203a\u3009\u27e9\u00bb\u276f\u02c3\u232a\u29fd\u276d\u2771]",
    re.IGNORECASE,
)


def data_text(text: str) -> str:
    """Judged text made data: one line, ``<``, ``>`` and ``&`` escaped, no look-alike of a data tag."""
    from rag.answering.prompts import neutralize

    return _TAG_LOOKALIKE.sub(
        lambda match: "".join(f"&#{ord(c)};" if not c.isalnum() else c for c in match.group(0)),
        neutralize(str(text)),
    )


def data_block(tag: str, lines: Sequence[str]) -> str:
    """``<tag>``, each line as :func:`data_text`, ``</tag>``: what a judge prompt's placeholder holds."""
    if tag not in DATA_TAGS:
        raise ValueError(f"unknown data tag {tag!r}")
    body = "\n".join(data_text(line) for line in lines)
    return f"<{tag}>\n{body}\n</{tag}>"


def judge_conversations(
    labels: pd.DataFrame, judge: ModelJudge, chunk_texts: Mapping[str, str], gate: Gate | None = None
) -> dict[str, tuple[list[list[dict]], list[str]]]:
    """Per task, the conversations and the items they judge: correctness of every answer, support
    of the citing ones. Every judged text sits in its data block (:func:`data_block`).

    ``gate`` (rag.models.gate, opened for the caller of the judged answers)
    admits the cited chunks of every answer before any conversation is built.
    """
    if gate is not None:
        for row in labels.itertuples(index=False):
            gate.admit(str(row.cited_chunks).split())
    asked: dict[str, tuple[list[list[dict]], list[str]]] = {task: ([], []) for task in TASKS}
    for row in labels.itertuples(index=False):
        answer = data_block("answer", [row.answer])
        user = judge.correct_user.format(
            question=data_block("question", [row.question]),
            reference=data_block("reference", [row.reference]),
            answer=answer,
        )
        asked[CORRECT_TASK][0].append(_conversation(judge, user))
        asked[CORRECT_TASK][1].append(row.item)
        sources = _cited_sources(row, chunk_texts)
        if sources:
            shown = data_block("sources", [f"[{number}] {text}" for number, text in sources.items()])
            asked[SUPPORTED_TASK][0].append(
                _conversation(judge, judge.supported_user.format(answer=answer, sources=shown))
            )
            asked[SUPPORTED_TASK][1].append(row.item)
    return asked


def _conversation(judge: ModelJudge, user: str) -> list[dict]:
    return [{"role": "system", "content": judge.system}, {"role": "user", "content": user}]


Complete = Callable[[list[list[dict]]], list[Completion]]


def model_verdicts(
    labels: pd.DataFrame,
    judge: ModelJudge,
    chunk_texts: Mapping[str, str],
    complete: Complete | Mapping[str, Complete],
    gate: Gate | None = None,
) -> pd.DataFrame:
    """A model judge's verdicts and their probabilities on every labelled answer.

    ``complete`` asks a list of conversations, one function for both tasks
    or one per task (each task has its own verdict schema). An answer citing
    nothing is not asked about support: unsupported, probability 0.
    """
    asking = complete if isinstance(complete, Mapping) else dict.fromkeys(TASKS, complete)
    verdicts = {item: _certain(item, False, False) for item in labels["item"]}
    for item in verdicts:
        verdicts[item]["correct_verdict"] = NO_VERDICT
        verdicts[item]["correct_probability"] = math.nan
    for task, (conversations, items) in judge_conversations(labels, judge, chunk_texts, gate).items():
        if not conversations:
            continue
        completions = asking[task](conversations)
        if len(completions) != len(items):
            raise ValueError(f"{len(completions)} replies for {len(items)} questions to the judge")
        for item, completion in zip(items, completions, strict=True):
            verdict = parse_verdict(completion.text, task)
            probability = verdict_probability(completion, task)
            verdicts[item][f"{task}_verdict"] = verdict
            verdicts[item][f"{task}_probability"] = math.nan if probability is None else probability
    return pd.DataFrame(list(verdicts.values()), columns=VERDICT_FRAME_COLUMNS)


def asked_verdicts(
    labels: pd.DataFrame,
    judge: ModelJudge,
    chunk_texts: Mapping[str, str],
    cache,
    server_log,
    progress: Callable[[str], object],
    optional: bool,
    warn: Callable[[str], object],
    gate: Gate | None = None,
) -> pd.DataFrame | None:
    """A model judge's verdicts asked through the response cache and the one client, per task with
    its verdict schema and log-probabilities; None (with one warning) when an ``optional`` judge
    cannot answer here (its model not installed and its replies not cached, say)."""
    from rag.answering.llm_answers import complete_with_cache
    from rag.models.client import LlmError
    from rag.models.local_server import LocalServerError

    complete = {
        task: complete_with_cache(
            judge,
            cache,
            server_log,
            progress,
            gate=gate,
            reply_format=verdict_format(judge, task),
            top_logprobs=judge.top_logprobs or None,
        )
        for task in TASKS
    }
    try:
        return model_verdicts(labels, judge, chunk_texts, complete, gate)
    except (LlmError, LocalServerError) as error:
        if not optional:
            raise
        warn(f"judge {judge.name} left out of judge_calibration.csv (optional): {error}")
        return None


# --------------------------------------------------------------------------
# Saying yes: the verdict, or its probability above a cross-validated threshold
# --------------------------------------------------------------------------


def says_yes(verdicts: pd.DataFrame, task: str, threshold: float | None) -> np.ndarray:
    """Where a judge says yes: its probability at least ``threshold`` where it has one (and a
    threshold is given), else its verdict is the yes verdict. No verdict is never yes."""
    verdict = verdicts[f"{task}_verdict"].to_numpy(dtype=object)
    probability = verdicts[f"{task}_probability"].to_numpy(dtype=np.float64)
    yes = verdict == YES_VERDICT[task]
    if threshold is None or math.isnan(threshold):
        return yes.astype(bool)
    known = ~np.isnan(probability) & (verdict != NO_VERDICT)
    return np.where(known, probability >= threshold - 1e-12, yes).astype(bool)


def choose_threshold(labelled: Sequence[bool], probability: Sequence[float]) -> float:
    """The grid threshold (:data:`THRESHOLD_GRID`) whose yes/no agrees best with the labels by kappa.

    Answers without a probability are left out; ties go to the threshold
    nearest 0.5, then the lower. NaN when no answer has a probability.
    """
    labelled = np.asarray(labelled, dtype=bool)
    probability = np.asarray(probability, dtype=np.float64)
    known = ~np.isnan(probability)
    if not known.any():
        return math.nan
    best, best_key = math.nan, None
    for threshold in THRESHOLD_GRID:
        kappa = cohen_kappa(labelled[known], probability[known] >= threshold - 1e-12)
        key = (-1.0 if math.isnan(kappa) else round(kappa, 9), -abs(threshold - 0.5), -threshold)
        if best_key is None or key > best_key:
            best, best_key = threshold, key
    return float(best)


def cross_validated_yes(labels: pd.DataFrame, verdicts: pd.DataFrame, task: str) -> tuple[float, np.ndarray]:
    """The threshold chosen on every development label, and the development verdicts out of fold.

    The development labels are split into :data:`THRESHOLD_FOLDS` folds by
    question (seeded); each fold is judged at the threshold chosen on the
    others, so the development rows of the table measure the choice honestly.
    The returned threshold, chosen on all of them, judges the held-out labels.
    Both are None-free: a judge without probabilities gets NaN and its verdicts.
    """
    from rag.measuring.thresholds import fold_of_questions

    merged = labels[["item", "question_id", "questions"]].merge(verdicts, on="item", how="left")
    development = (merged["questions"] == DEVELOPMENT).to_numpy()
    truth = _truth(labels, task)
    probability = merged[f"{task}_probability"].to_numpy(dtype=np.float64)
    usable = development & ~np.isnan(probability)
    chosen = choose_threshold(truth[usable], probability[usable])
    yes = says_yes(merged, task, chosen)
    if math.isnan(chosen) or not development.any():
        return chosen, yes
    ids = merged["question_id"].to_numpy(dtype=object)
    folds = fold_of_questions(ids[development], THRESHOLD_FOLDS, THRESHOLD_SEED)
    fold = np.array(
        [folds.get(question, -1) if dev else -1 for question, dev in zip(ids, development, strict=True)]
    )
    for held in range(THRESHOLD_FOLDS):
        choosing = usable & (fold != held)
        threshold = choose_threshold(truth[choosing], probability[choosing])
        test = fold == held
        yes[test] = says_yes(merged[test], task, threshold)
    return chosen, yes


def _truth(labels: pd.DataFrame, task: str) -> np.ndarray:
    if task == CORRECT_TASK:
        return (labels["correctness"] == "correct").to_numpy(dtype=bool)
    return (labels["supported"] == "yes").to_numpy(dtype=bool)


# --------------------------------------------------------------------------
# Calibration: a judge against the hand labels
# --------------------------------------------------------------------------


def cohen_kappa(first: Sequence[bool], second: Sequence[bool]) -> float:
    """Cohen's kappa of two yes/no raters: (observed - chance agreement) / (1 - chance); NaN if undefined."""
    a = np.asarray(first, dtype=bool)
    b = np.asarray(second, dtype=bool)
    if a.size == 0:
        return math.nan
    observed = float(np.mean(a == b))
    chance = float(a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean()))
    if chance >= 1.0:
        return math.nan if observed < 1.0 else 0.0
    return (observed - chance) / (1.0 - chance)


def _interval(statistic: Callable[[np.ndarray, np.ndarray], float], a: np.ndarray, b: np.ndarray):
    """Percentile bootstrap interval of ``statistic`` over the labelled answers (seeded)."""
    if a.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    draws = rng.integers(0, a.size, size=(BOOTSTRAP_RESAMPLES, a.size))
    values = np.array([statistic(a[draw], b[draw]) for draw in draws], dtype=np.float64)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return math.nan, math.nan
    tail = (1.0 - LEVEL) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return _rounded(low), _rounded(high)


def _rounded(value: float) -> float:
    """Six decimals, and never a negative zero (so tables print 0.000000, not -0.000000)."""
    return round(float(value), 6) + 0.0


def _agreement(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(a == b))


def _thresholded(verdicts: pd.DataFrame, task: str) -> bool:
    """Whether a judge's verdicts carry probabilities to threshold (some strictly between 0 and 1)."""
    probability = verdicts[f"{task}_probability"].to_numpy(dtype=np.float64)
    known = probability[~np.isnan(probability)]
    return bool(((known > 0) & (known < 1)).any())


def calibration_rows(labels: pd.DataFrame, verdicts: pd.DataFrame, judge: str) -> list[dict]:
    """One row per task, label split (held-out first) and answer generator group ("all" and each)."""
    merged = labels.merge(verdicts, on="item", how="left", validate="one_to_one")
    if merged["correct_verdict"].isna().any() or len(verdicts) != len(labels):
        given = int(merged["correct_verdict"].notna().sum())
        raise ValueError(f"judge {judge!r}: verdicts for {given} of {len(labels)} labelled answers")
    split = np.where(merged["questions"] == DEVELOPMENT, DEVELOPMENT, HELDOUT)
    rows = []
    for task in TASKS:
        if _thresholded(verdicts, task):
            threshold, yes = cross_validated_yes(labels, verdicts, task)
        else:
            threshold, yes = math.nan, says_yes(merged, task, None)
        truth = _truth(labels, task)
        verdict = merged[f"{task}_verdict"].to_numpy(dtype=object)
        probability = merged[f"{task}_probability"].to_numpy(dtype=np.float64)
        partly = (
            (merged["correctness"] == "partly").to_numpy()
            if task == CORRECT_TASK
            else np.zeros(len(merged), bool)
        )
        for labels_of in (HELDOUT, DEVELOPMENT):
            in_split = split == labels_of
            if not in_split.any():
                continue
            groups = [("all", in_split)] + [
                (name, in_split & (merged["generator"] == name).to_numpy())
                for name in sorted(merged.loc[in_split, "generator"].unique())
            ]
            for group, index in groups:
                labelled, judged = truth[index], yes[index]
                kappa_low, kappa_high = _interval(cohen_kappa, labelled, judged)
                agree_low, agree_high = _interval(_agreement, labelled, judged)
                rows.append(
                    {
                        "judge": judge,
                        "task": task,
                        "labels": labels_of,
                        "answers_of": group,
                        "threshold": threshold,
                        "labelled": int(labelled.size),
                        "labelled_yes": int(labelled.sum()),
                        "labelled_partly": int(partly[index].sum()),
                        "judge_yes": int(judged.sum()),
                        "judge_partly": int((verdict[index] == "partly").sum()),
                        "judge_yes_label_partly": int((judged & partly[index]).sum()),
                        "no_verdict": int((verdict[index] == NO_VERDICT).sum()),
                        "with_probability": int(
                            (~np.isnan(probability[index]) & (verdict[index] != NO_VERDICT)).sum()
                        )
                        if not math.isnan(threshold)
                        else 0,
                        "both_yes": int((labelled & judged).sum()),
                        "judge_yes_label_no": int((~labelled & judged).sum()),
                        "judge_no_label_yes": int((labelled & ~judged).sum()),
                        "both_no": int((~labelled & ~judged).sum()),
                        "agreement": _rounded(_agreement(labelled, judged)),
                        "agreement_low": agree_low,
                        "agreement_high": agree_high,
                        "kappa": _rounded(cohen_kappa(labelled, judged)),
                        "kappa_low": kappa_low,
                        "kappa_high": kappa_high,
                    }
                )
    return rows


CALIBRATION_COLUMNS = [
    "judge",
    "task",
    "labels",
    "answers_of",
    "threshold",
    "labelled",
    "labelled_yes",
    "labelled_partly",
    "judge_yes",
    "judge_partly",
    "judge_yes_label_partly",
    "no_verdict",
    "with_probability",
    "both_yes",
    "judge_yes_label_no",
    "judge_no_label_yes",
    "both_no",
    "agreement",
    "agreement_low",
    "agreement_high",
    "kappa",
    "kappa_low",
    "kappa_high",
]


def calibration_table(labels: pd.DataFrame, verdicts_by_judge: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """results/judge_calibration.csv: every judge against the hand labels, in judge name order.

    The rows ``labels = heldout`` are the report; the ``development`` rows are
    the labels a judge's threshold was chosen on, each judged out of fold.
    ``threshold`` is empty for a judge without probabilities (its verdicts
    are read as they are: the deterministic judge, the always-correct floor,
    a model whose server gives no log-probabilities).
    """
    rows = []
    for judge in sorted(verdicts_by_judge):
        rows += calibration_rows(labels, verdicts_by_judge[judge], judge)
    return pd.DataFrame(rows, columns=CALIBRATION_COLUMNS)
