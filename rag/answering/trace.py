"""Per-request traces: one JSON line joins a request, its retrieval and its generation.

The production contract asks for one trace per request with the fields
below (docs/trace.md is the schema). A trace is written for every answer the
pipeline asks of a language model or of an offline generator
(``work/traces/``) and for every
``rag ask --trace FILE``. It holds hashes and ids, never text: the actor and
the query are hashed, the documents are named by chunk id, and a trace joins
the tables through those ids and the question id. Text (the question, the
prompt's sources and the answer) is added only when asked for
(``--trace-text``; ``include_text``). Nothing here ever sees an endpoint's
key: the generator is named by its entry name and model.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence

from rag.answering.caller_sources import CallerSources
from rag.retrieval.filters import Caller

TRACE_VERSION = 1
# The fields of every trace, in the order they are written (docs/trace.md).
TRACE_FIELDS: tuple[str, ...] = (
    "trace_version",
    "request_id",
    "actor",
    "tenant",
    "query",
    "question_id",
    "filters",
    "index_version",
    "candidates",
    "scores",
    "ranker_versions",
    "selected",
    "citations",
    "generator",
    "tokens",
    "latency",
    "cache",
    "abstention",
)
# "none": no response cache is involved (an offline generator's answer).
CACHE_STATES = ("hit", "miss", "none")


def hashed(text: str) -> str:
    """A short SHA-256 digest of a text: enough to join and to compare, not to read it back."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def canonical_digest(value: object) -> str:
    """The digest of a JSON value in canonical form (sorted keys): a version of a record."""
    return hashed(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str))


def _number(value: float | None) -> float | None:
    if value is None or not math.isfinite(float(value)):
        return None
    return round(float(value), 6)


def answer_trace(
    *,
    caller: Caller,
    query: str,
    question_id: str | None,
    index_version: str,
    candidates: Sequence[str],
    scores: Sequence[float],
    ranker_versions: Mapping[str, str],
    selected: Sequence[str],
    citations: Sequence[str],
    generator: Mapping[str, str],
    tokens: Mapping[str, int | None],
    latency: Mapping[str, float | None],
    cache: str,
    abstention: str | None,
    actor: str | None = None,
    text: Mapping[str, object] | None = None,
) -> dict:
    """One trace as a dict in :data:`TRACE_FIELDS` order (plus ``text`` when given).

    ``caller`` is who the request ran as: its name is hashed into ``actor``
    (unless ``actor``, the person or service, is given) and its view is the
    ``filters``; ``candidates`` and ``scores`` are the ranking the prompt's
    chunks were chosen from, ``selected`` the chunks in the prompt and
    ``citations`` the chunks the answer cites. ``latency`` is seconds per
    stage (None for a stage another job ran). ``text`` (question, sources,
    answer) is only for a trace asked to hold text.
    """
    if cache not in CACHE_STATES:
        raise ValueError(f"cache must be one of {CACHE_STATES}, got {cache!r}")
    if len(candidates) != len(scores):
        raise ValueError(f"{len(candidates)} candidates but {len(scores)} scores")
    filters = caller.view().to_config()
    record = {
        "trace_version": TRACE_VERSION,
        "request_id": "",
        "actor": hashed(actor if actor is not None else f"caller:{caller.name}"),
        "tenant": caller.tenant,
        "query": hashed(query),
        "question_id": question_id,
        "filters": filters,
        "index_version": index_version,
        "candidates": list(candidates),
        "scores": [_number(score) for score in scores],
        "ranker_versions": dict(sorted(ranker_versions.items())),
        "selected": list(selected),
        "citations": list(citations),
        "generator": dict(generator),
        "tokens": dict(tokens),
        "latency": {stage: _number(seconds) for stage, seconds in latency.items()},
        "cache": cache,
        "abstention": abstention,
    }
    # The request's identity: what was asked, as whom, of which index and
    # model; the same request traced twice has the same id.
    identity = {key: record[key] for key in ("actor", "query", "filters", "index_version", "generator")}
    record["request_id"] = canonical_digest({**identity, "selected": record["selected"]})
    if text is not None:
        record["text"] = dict(text)
    return record


def trace_lines(traces: Iterable[Mapping]) -> str:
    """Traces as JSON lines (one per trace, keys in the order written, ASCII only)."""
    return "".join(json.dumps(trace, ensure_ascii=True, separators=(",", ":")) + "\n" for trace in traces)


def cited_chunk_ids(cited_numbers: Iterable[int], selected: Sequence[str]) -> list[str]:
    """The chunk ids an answer's source numbers name (1-based, numbers outside the prompt dropped)."""
    return [selected[number - 1] for number in cited_numbers if 1 <= number <= len(selected)]


def trace_problems(trace: Mapping) -> list[str]:
    """Why a dict is not a trace of this schema (missing or unknown fields), or [] when it is."""
    problems = [f"missing field {name!r}" for name in TRACE_FIELDS if name not in trace]
    problems += [f"unknown field {name!r}" for name in trace if name not in (*TRACE_FIELDS, "text")]
    if trace.get("trace_version") not in (None, TRACE_VERSION):
        problems.append(f"trace_version {trace.get('trace_version')!r}, expected {TRACE_VERSION}")
    if "cache" in trace and trace["cache"] not in CACHE_STATES:
        problems.append(f"cache {trace['cache']!r}, expected one of {CACHE_STATES}")
    return problems


def abstention_reason(abstained: bool, closed_book: bool, selected: Sequence[str]) -> str | None:
    """Why an answer gave nothing: no readable chunk reached the prompt, or the generator declined."""
    if not closed_book and not selected:
        return "no chunk the caller may read was retrieved"
    if abstained:
        return "the generator abstained"
    return None


def source_versions(sources: object | None) -> tuple[str, dict[str, str]]:
    """The index version and the ranker versions of a caller's sources (closed book: none read)."""
    versions = sources.versions if sources is not None else {}
    index_version = canonical_digest(versions.get("index")) if versions else "closed-book"
    rankers = {name: canonical_digest(record) for name, record in (versions.get("ranker") or {}).items()}
    return index_version, rankers


def llm_answer_traces(
    frame: object,
    questions: Sequence,
    sources: object | None,
    generator: Mapping[str, str],
    caller: Caller | None = None,
) -> list[dict]:
    """One trace per row of a language model's answer table (work/llm_answers/), in row order.

    ``sources`` (:class:`rag.answering.caller_sources.CallerSources`, None
    closed book) holds the caller, the (chunk ids, scores) each prompt was
    chosen from, and the chunk set's and ranker's versions; closed book,
    ``caller`` names who asked. The retrieval ran in another job, so its
    latency is None here.
    """
    caller = sources.caller if sources is not None else caller
    rankings = sources.rankings if sources is not None else {}
    texts = {question.question_id: question.text for question in questions}
    index_version, rankers = source_versions(sources)
    traces = []
    for row in frame.itertuples(index=False):
        selected = row.source_chunk_ids.split() if row.source_chunk_ids else []
        numbers = [int(number) for number in str(row.cited_sources or "").split()]
        candidates, scores = rankings.get(row.question_id, ((), ()))
        traces.append(
            answer_trace(
                caller=caller,
                query=texts[row.question_id],
                question_id=row.question_id,
                index_version=index_version,
                candidates=list(candidates),
                scores=list(scores),
                ranker_versions=rankers,
                selected=selected,
                citations=cited_chunk_ids(numbers, selected),
                generator=generator,
                tokens={"prompt": int(row.prompt_tokens), "completion": int(row.completion_tokens)},
                latency={"retrieval": None, "generation": float(row.seconds)},
                cache="hit" if row.cached else "miss",
                abstention=abstention_reason(bool(row.abstained), row.retriever == "none", selected),
            )
        )
    return traces


# An offline generator asks no endpoint: no response cache, no completion
# tokens, and no wall-clock value, so that a trace file is the same bytes on
# every run of the same configuration.
OFFLINE_CACHE = "none"
OFFLINE_LATENCY: Mapping[str, None] = {"retrieval": None, "generation": None}


def _optional_count(value: object) -> int | None:
    """A count from a nullable table column: None when missing."""
    import pandas as pd

    return None if pd.isna(value) else int(value)


def offline_answer_traces(frame: object, questions: Sequence, sources: object) -> list[dict]:
    """One trace per row of an offline generator's answer table (work/answers/), in row order.

    ``sources`` (:class:`rag.answering.caller_sources.CallerSources`) holds
    the caller, its prefiltered rankings and the versions read. A prompt holds
    the first ``sources`` chunks of the ranking (rag.answering.prompts.build_prompt
    keeps the longest prefix that fits), so ``selected`` is that prefix and
    the one cited source number names a chunk of it. ``tokens`` are the
    prompt's word-and-punctuation count and its cl100k count (None without
    tiktoken); the generator is the row's reader name.
    """
    texts = {question.question_id: question.text for question in questions}
    index_version, rankers = source_versions(sources)
    traces = []
    for row in frame.itertuples(index=False):
        candidates, scores = sources.rankings.get(row.question_id, ((), ()))
        selected = list(candidates[: int(row.sources)])
        cited = _optional_count(row.cited_source)
        traces.append(
            answer_trace(
                caller=sources.caller,
                query=texts[row.question_id],
                question_id=row.question_id,
                index_version=index_version,
                candidates=list(candidates),
                scores=list(scores),
                ranker_versions=rankers,
                selected=selected,
                citations=cited_chunk_ids([] if cited is None else [cited], selected),
                generator={"name": row.reader},
                tokens={
                    "prompt": int(row.prompt_tokens),
                    "prompt_cl100k": _optional_count(row.prompt_tokens_cl100k),
                },
                latency=OFFLINE_LATENCY,
                cache=OFFLINE_CACHE,
                abstention=abstention_reason(bool(row.abstained), False, selected),
            )
        )
    return traces


def summary_answer_traces(
    frame: object, questions: Sequence, caller: Caller, summaries: Sequence
) -> list[dict]:
    """One trace per row of an answer table from lead summaries (work/answers/{corpus}/lead_summaries*).

    Every question's prompt holds the same sources: the lead summaries of the
    documents ``caller`` may read, in order, unranked (so each score is None).
    The index version is a digest of the summaries' chunk ids and texts, and
    no ranker was used.
    """
    ids = [chunk.chunk_id for chunk in summaries]
    index = {"lead_summaries": [[chunk.chunk_id, hashed(chunk.text)] for chunk in summaries]}
    ranking = (ids, [math.nan] * len(ids))
    rankings = {question.question_id: ranking for question in questions}
    chunks = {chunk.chunk_id: chunk for chunk in summaries}
    sources = CallerSources(caller, chunks, frozenset(ids), rankings, {"index": index})
    return offline_answer_traces(frame, questions, sources)
