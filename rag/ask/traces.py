"""The trace of one ``rag ask`` request (rag.answering.trace, docs/trace.md), from its report."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from rag.answering.trace import abstention_reason, answer_trace, canonical_digest
from rag.answering.verification import parse_citations
from rag.ask.index import AnswerReport, QuestionIndex
from rag.retrieval.filters import Caller


def index_version(index: QuestionIndex) -> str:
    """The index a request searched: its options and chunk ids (the chunk ids digest the text)."""
    return canonical_digest(
        {"options": index.options.as_dict(), "chunks": [c.chunk_id for c in index.chunks]}
    )


def report_trace(
    report: AnswerReport,
    index: QuestionIndex,
    caller: Caller,
    question: str,
    generator: str,
    latency: Mapping[str, float | None],
    cache: str = "none",
    include_text: bool = False,
    question_id: str | None = None,
) -> dict:
    """One request of ``rag ask`` as a trace: its fused candidates, prompt sources and cited chunks.

    ``question_id`` names a labelled question (the pipeline's measurement of
    ``rag ask``); None for a question typed at the command line.
    """
    selected = [chunk.chunk_id for chunk in report.prompt.sources.values()]
    numbers = [number for number in parse_citations(report.answer)[0] if number in report.prompt.sources]
    chosen = report.retrieval.chosen
    entries = index.entries
    text = None
    if include_text:
        text = {
            "question": question,
            "sources": [chunk.text for chunk in report.prompt.sources.values()],
            "answer": report.answer,
        }
    return answer_trace(
        caller=caller,
        query=question,
        question_id=question_id,
        index_version=index_version(index),
        candidates=[retrieved.chunk.chunk_id for retrieved in chosen],
        scores=[retrieved.fused_score for retrieved in chosen],
        ranker_versions={
            "lexical": canonical_digest(entries.lexical),
            "fused": canonical_digest(entries.fused),
        },
        selected=selected,
        citations=[report.prompt.sources[number].chunk_id for number in numbers],
        generator={"name": generator},
        tokens={"prompt": int(report.prompt.tokens), "completion": len(report.answer.split())},
        latency=latency,
        cache=cache,
        abstention=abstention_reason(report.abstained, False, selected),
        text=text,
    )


class TraceFileError(ValueError):
    """A --trace file that cannot be written safely; the message names the file and why."""


# Free space a trace file's disk must have before a model is asked (a trace line is a
# few kilobytes, with --trace-text a few tens).
TRACE_FREE_BYTES = 1 << 20


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.is_relative_to(folder.resolve())
    except OSError:
        return False


def open_trace_file(path: Path, inputs: Sequence[Path]) -> int:
    """A file descriptor to append ``rag ask``'s trace to, opened and checked before any model is asked.

    Refused, in one line naming the file: a symbolic link (O_NOFOLLOW), anything
    but a regular file once opened (a FIFO is opened without blocking, then
    refused, as are devices and directories), a file inside any folder of
    ``inputs`` or the same file as any file of ``inputs`` (the documents, the
    config, the cache: the next index would hold the trace), a file with other
    hard links (an input under another name), and a disk with
    less than :data:`TRACE_FREE_BYTES` free. The file is created (0600) or
    appended to (O_APPEND); :func:`append_trace` writes a whole line in one write.
    """
    shown = str(path)
    location = path.parent.resolve() / path.name
    for given in inputs:
        if given.is_dir() and _inside(location, given):
            raise TraceFileError(f"--trace {shown}: inside {given}, which rag ask reads; write it elsewhere")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        descriptor = os.open(path, flags, 0o600)
    except OSError as error:
        reasons = {errno.ELOOP: "a symbolic link; give the file itself", errno.ENXIO: "a FIFO, not a file"}
        reasons[errno.EISDIR] = "a directory, not a file"
        raise TraceFileError(
            f"--trace {shown}: {reasons.get(error.errno, error.strerror or error)}"
        ) from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise TraceFileError(f"--trace {shown}: not a regular file (a FIFO, device or socket)")
        if status.st_nlink > 1:
            raise TraceFileError(
                f"--trace {shown}: the file has other hard links (it may be an input under another name)"
            )
        for given in inputs:
            if given.is_file():
                other = given.stat()
                if (other.st_dev, other.st_ino) == (status.st_dev, status.st_ino):
                    raise TraceFileError(f"--trace {shown}: the same file as {given}, which rag ask reads")
        space = os.fstatvfs(descriptor)
        if space.f_bavail * space.f_frsize < TRACE_FREE_BYTES:
            raise TraceFileError(f"--trace {shown}: its disk is full (less than 1 MiB free)")
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def append_trace(descriptor: int, line: str, shown: str) -> None:
    """Append one whole line in one write (O_APPEND: writers never interleave a line), then close."""
    data = line.encode("ascii")
    try:
        written = os.write(descriptor, data)
        if written != len(data):
            raise TraceFileError(f"--trace {shown}: only {written} of {len(data)} bytes written (disk full?)")
    except OSError as error:
        raise TraceFileError(f"--trace {shown}: {error.strerror or error}") from None
    finally:
        os.close(descriptor)
