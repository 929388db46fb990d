"""``rag ask``: answer one question from a folder of documents, with checked citations.

Usage::

    rag ask "How long is a year on Venus?"
    rag ask "Who discovered Uranus?" --retriever bm25_lsa_ivf --probes 8
    rag ask "What does the runbook say about backups?" --documents notes/
    python -m rag ask --help

``rag ask`` reads every ``*.md`` file of a folder (by default the bundled
solar-system documents in ``resources/solar_system/documents``), cuts them into
sentence chunks of at most ``--max-words`` words, and indexes the chunks twice:
with BM25, and with a dense retriever chosen by ``--retriever``:
``bm25_minilm`` (the default when the dense extra is installed) embeds them
with MiniLM and searches exactly, beside the grid's ``bm25_stem`` (Snowball
stemming, k1 0.9, b 0.4); ``bm25_lsa_ivf`` (the spec's setup, the
default without the extra) files ``--dimensions``-dimensional LSA embeddings
in an IVF index of ``--lists`` lists, ``--probes`` of them scanned. The two
rankings are fused by reciprocal rank fusion, and the command prints

* the ``--sources`` best chunks, each with its fused rank and score and its
  rank in the BM25 and in the IVF list ("-" when that retriever did not list it);
* the prompt: instruction, numbered sources and question, cut to ``--budget``
  tokens (words and punctuation marks) when a budget is given;
* the answer: one quoted sentence of the sources with its citation, chosen by
  the reader (``--generator reader``, rag.answering.reader: idf coverage, term proximity,
  the expected answer type, the subject, and with ``--similarity`` the MiniLM
  similarity, which measured worse on the labelled questions) or by
  the spec's extractive generator (``--generator extractive``, idf coverage
  alone), or an abstention when the best score is below ``--threshold``
  (``--generator hosted`` asks the model configured by RAG_LLM_BASE_URL,
  RAG_LLM_API_KEY and RAG_LLM_MODEL instead, see rag.models.hosted);
* the citation check of every sentence of the answer: does it cite an existing
  source, do 75 % of its terms and all of its numbers occur in what it cites;
* two verdicts in plain words: faithful (the citation check passed) and
  responsive (the answer holds the kind of value the question asks for, a
  name, a date, a temperature...). A faithful answer can still fail to answer.

The fitted index is cached in ``--cache`` (``.rag-cache`` in the current
directory by default), under a digest of the documents, the index options
(``--max-words``, ``--dimensions``, ``--lists``, the MiniLM model) and the
indexing code; MiniLM vectors are also kept by text in ``<cache>/embeddings``; the
first call builds it, later calls with the same documents and options load it
("index: cache hit") and answer in a fraction of the time. ``--probes``,
``--sources``, ``--threshold``, ``--budget`` and ``--generator`` act at query
time and reuse the cached index. The cache keeps the 8 most recently used
indexes, none unused for 30 days, and removes the rest when it adds one;
deleting the cache folder (``rm -r .rag-cache``) is always safe and is the way
to clear it. Document text is printed with control characters made visible
(``\x1b``, ``\u202e``), so a document cannot drive the terminal.

Exit status: 0 when a question was answered or the generator abstained, 2 for
a usage error (bad or inconsistent options), 1 for any other error (missing or
empty folder, a document that does not parse, a hosted model that fails). Errors
are one line on stderr.

The options, the index cache, the printed report and the generator choice are
here; :mod:`rag.cli` dispatches the ``rag`` command's subcommands to :func:`ask`.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rag.ask.generators import (
    CROSS_VALIDATED,
    NO_THRESHOLD,
    OFFLINE_GENERATORS,
    fixed_threshold,
    threshold_policy,
)
from rag.ask.setups import ASK_OPTIONS, ASK_SETUPS
from rag.escaping import visible
from rag.kinds import EXTRACTIVE_THRESHOLD

if TYPE_CHECKING:
    from rag.answering.verification import ClaimCheck
    from rag.ask.index import AnswerReport, IndexOptions, QuestionIndex
    from rag.retrieval.filters import Caller

# Started before the heavy imports, which happen inside the command, so the
# reported time includes them.
_STARTED = time.perf_counter()

BUNDLED_DOCUMENTS = Path("resources") / "solar_system" / "documents"
# The reader's default thresholds are read from the pipeline's cross-validation
# (rag.answering.reader.chosen_thresholds), found next to the package like the corpus.
CROSS_VALIDATED_THRESHOLDS = Path("results") / "reader_thresholds.csv"
DEFAULT_CACHE = Path(".rag-cache")
# The model named by RAG_LLM_BASE_URL, RAG_LLM_API_KEY and RAG_LLM_MODEL (rag.models.hosted).
HOSTED_GENERATOR = "hosted"
# The offline generator kinds of the table of kinds (rag.ask.generators), then the hosted model;
# the bundled models and ./config.yaml's llm entries are added by name (bundled_generators).
GENERATORS = (*OFFLINE_GENERATORS, HOSTED_GENERATOR)
# --generator llm (or smollm2, or any bundled entry of the project's config.yaml)
# asks the bundled model with the pipeline's settings; any other name is an llm
# entry of the generators section of ./config.yaml (docs/llm.md). The bundled
# names are reserved: a local entry cannot redefine them.
BUNDLED_GENERATOR_NAMES = ("llm", "smollm2")
# The pipeline's config, next to the package: its bundled entries are what rag ask runs.
PROJECT_CONFIG = Path("config.yaml")
LLM_CACHE_FOLDER = "llm"
RETRIEVERS = ("auto", "bm25_minilm", "bm25_lsa_ivf")
# The model of the bm25_minilm setup's dense entry (rag.ask.setups.ASK_SETUPS).
DENSE_MODEL = ASK_SETUPS["bm25_minilm"].retrievers[ASK_SETUPS["bm25_minilm"].dense]["model"]

# rag ask's whole-number options, read from the spec setup's entries in the
# table of kinds (plain data: `rag ask --help` and usage errors must not pay
# for numpy and scipy).
DEFAULTS = ASK_OPTIONS
# The abstention threshold of each offline generator by its kind's threshold policy
# (rag.kinds): the configured one, none (NO_THRESHOLD: it answers whenever its prompt has
# a sentence), or None for one chosen by cross-validation (the reader's depends on whether
# its MiniLM similarity is in the score; rag.answering.reader).
DEFAULT_THRESHOLDS = {name: fixed_threshold(name) for name in OFFLINE_GENERATORS}


def _cross_validated_threshold(generator: str) -> bool:
    """Whether an offline generator answers at a threshold the pipeline's cross-validation chose."""
    return generator in OFFLINE_GENERATORS and threshold_policy(generator) == CROSS_VALIDATED


# The whole-number options of ``rag ask``, each with its default in DEFAULTS.
INTEGER_OPTIONS = {
    "max_words": "word limit of a sentence chunk",
    "dimensions": "LSA dimensions",
    "lists": "IVF lists; at most one per chunk is used",
    "probes": "IVF lists scanned per question, at most --lists",
    "sources": "chunks placed in the prompt as numbered sources",
}
TEXT_PREVIEW_CHARACTERS = 110
# The index cache keeps the most recently used indexes only: every edit of a
# document folder adds an entry that nothing will read again.
CACHE_ENTRIES = 8
# MiniLM vectors of rag ask, by text, beside the index bundles (pruned by their own cache).
EMBEDDINGS_FOLDER = "embeddings"
CACHE_MAX_AGE_SECONDS = 30 * 24 * 3600.0


class AskError(Exception):
    """A problem the user can fix; printed as one line, exit status 1."""


def bundled_documents() -> Path:
    """The bundled corpus, found next to the package so it works from any directory."""
    return Path(__file__).resolve().parents[2] / BUNDLED_DOCUMENTS


def reader_threshold(similarity: bool, generator: str = "reader") -> float:
    """A cross-validated generator's threshold the pipeline's cross-validation chose (the reader's),
    with or without the MiniLM similarity."""
    from rag.answering.reader import read_chosen_thresholds
    from rag.ask.generators import measured_name

    path = Path(__file__).resolve().parents[2] / CROSS_VALIDATED_THRESHOLDS
    if not path.is_file():
        raise AskError(
            f"the reader's threshold is read from {CROSS_VALIDATED_THRESHOLDS} (the pipeline's "
            "cross-validation), which this installation does not have: pass --threshold"
        )
    try:
        return read_chosen_thresholds(path)[measured_name(generator, similarity)]
    except (ValueError, KeyError) as error:
        raise AskError(f"{error}: pass --threshold, or rebuild it with snakemake") from None


def _positive_integer(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def _score(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def add_ask_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``ask`` subcommand and its options to the ``rag`` command's subcommands."""
    ask = commands.add_parser(
        "ask",
        help="answer a question from a folder of Markdown documents",
        description=(
            "Answer a question from a folder of Markdown documents: BM25 fused with MiniLM "
            "(dense extra) or with LSA through an IVF index; the answer cites its sources, every "
            "citation is checked, and the answer is judged faithful and responsive."
        ),
        epilog=(
            "The fitted index is cached under a digest of the documents and of --max-words, "
            "--dimensions and --lists; the other options reuse it. "
            "Exit status: 0 answered or abstained, 2 usage error, 1 other error."
        ),
    )
    ask.add_argument("question", help="the question, in quotes")
    ask.add_argument(
        "--documents",
        metavar="FOLDER",
        type=Path,
        help=f"folder of *.md documents (default: the bundled {BUNDLED_DOCUMENTS.as_posix()})",
    )
    for key, help_text in INTEGER_OPTIONS.items():
        ask.add_argument(
            "--" + key.replace("_", "-"),
            type=_positive_integer,
            default=DEFAULTS[key],
            metavar="N",
            help=f"{help_text} (default: %(default)s)",
        )
    ask.add_argument(
        "--threshold",
        type=_score,
        default=None,
        metavar="X",
        help="score the quoted sentence must reach, else the generator abstains (default: "
        f"{EXTRACTIVE_THRESHOLD:g} for the extractive generator, a share of the question's idf weight; "
        "for the reader, the threshold its cross validation chose on the labelled questions)",
    )
    ask.add_argument(
        "--similarity",
        action="store_true",
        help="add the MiniLM similarity of question and sentence to the reader's score (with "
        "--retriever bm25_minilm; it measured worse on the labelled questions)",
    )
    ask.add_argument(
        "--retriever",
        choices=RETRIEVERS,
        default="auto",
        help="bm25_minilm: stemmed BM25 (k1 0.9, b 0.4) fused with exact MiniLM search (dense extra); "
        "bm25_lsa_ivf: the "
        "spec's BM25 fused with LSA through IVF; auto: bm25_minilm when the dense extra is "
        "installed (default: %(default)s)",
    )
    ask.add_argument(
        "--budget",
        type=_positive_integer,
        default=None,
        metavar="N",
        help="prompt budget in tokens (words and punctuation); the best-ranked sources that fit "
        "are kept (default: no limit)",
    )
    ask.add_argument(
        "--generator",
        type=_generator_name,
        default="reader",
        metavar="NAME",
        help="reader: quote the sentence that answers, offline; extractive: the spec's coverage "
        "generator, offline; hosted: the chat-completions model named by RAG_LLM_BASE_URL, "
        "RAG_LLM_API_KEY and RAG_LLM_MODEL; llm or smollm2: the bundled SmolLM2 (the llm extra); "
        "qwen or qwen_cited: the bundled Qwen2.5-Coder-1.5B (the llm-qwen extra); "
        "any other NAME: that llm entry of the generators section of ./config.yaml, its replies "
        "kept in <cache>/llm (default: %(default)s)",
    )
    ask.add_argument(
        "--cache",
        metavar="DIR",
        type=Path,
        default=DEFAULT_CACHE,
        help="folder for the fitted indexes (default: %(default)s in the current directory)",
    )
    ask.add_argument(
        "--access",
        type=_access_levels,
        default=None,
        metavar="LEVELS",
        help="access levels whose documents may reach the prompt, comma-separated, e.g. "
        "public,internal (default: public only; a document without an access key is restricted)",
    )
    add_caller_arguments(ask)
    ask.set_defaults(command_parser=ask)
    return ask


def add_caller_arguments(ask: argparse.ArgumentParser) -> None:
    """Who ``rag ask`` answers for, and where its trace goes (docs/contracts.md, docs/trace.md)."""
    ask.add_argument(
        "--caller",
        metavar="NAME",
        help="answer as this caller of the callers section of ./config.yaml (its tenant, groups and "
        "access levels); instead of --tenant, --group and --access",
    )
    ask.add_argument(
        "--tenant",
        metavar="NAME",
        type=_tenant_name,
        default="",
        help="the caller's tenant: documents of other tenants never reach the prompt "
        "(default: none, shared documents only)",
    )
    ask.add_argument(
        "--group",
        metavar="NAME",
        type=_group_name,
        action="append",
        default=[],
        help="a group the caller belongs to (repeat for several): a document with an ACL reaches the "
        "prompt only when its ACL names one of them (default: no group)",
    )
    ask.add_argument(
        "--default-access",
        type=_access_level,
        default=None,
        metavar="LEVEL",
        help="the access level of documents that state none (default: restricted, so they are left "
        "out unless --access includes restricted)",
    )
    ask.add_argument(
        "--trace",
        metavar="FILE",
        type=Path,
        help="append one JSON line describing this request to FILE (hashes and ids, no text; docs/trace.md)",
    )
    ask.add_argument(
        "--trace-text",
        action="store_true",
        help="with --trace: also write the question, the prompt's sources and the answer",
    )


def _principal(text: str, what: str) -> str:
    """A --tenant or --group value: one plain name, as the pipeline's callers take it
    (:func:`rag.retrieval.filters.principal_problem`); argparse names the flag in the error."""
    from rag.retrieval.filters import principal_problem

    if what == "group" and "," in text:
        raise argparse.ArgumentTypeError(
            f"{text!r} is a list; give one group per --group (repeat the flag for several)"
        )
    problem = principal_problem(text, what)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def _tenant_name(text: str) -> str:
    return text if text == "" else _principal(text, "tenant")


def _group_name(text: str) -> str:
    return _principal(text, "group")


def _access_level(text: str) -> str:
    """``--default-access``: one access level."""
    levels = _access_levels(text)
    if len(levels) != 1:
        raise argparse.ArgumentTypeError(f"expected one access level, got {text!r}")
    return levels[0]


def _access_levels(text: str) -> tuple[str, ...]:
    """``--access``: comma-separated access levels, each one of the corpus format's levels."""
    from rag.documents.access_metadata import ACCESS_LEVELS

    levels = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [level for level in levels if level not in ACCESS_LEVELS]
    if not levels or unknown:
        raise argparse.ArgumentTypeError(
            f"expected access levels among {', '.join(ACCESS_LEVELS)} separated by commas, got {text!r}"
        )
    return levels


def check_ask_arguments(arguments: argparse.Namespace) -> None:
    """Usage errors argparse cannot see: an empty question, more probes than lists, two callers."""
    if not arguments.question.strip():
        arguments.command_parser.error("the question is empty")
    if getattr(arguments, "caller", None) and (
        arguments.tenant or arguments.group or arguments.access is not None
    ):
        arguments.command_parser.error(
            "--caller names a caller of ./config.yaml with its own tenant, groups and access; "
            "give either --caller or --tenant, --group and --access"
        )
    if getattr(arguments, "trace_text", False) and getattr(arguments, "trace", None) is None:
        arguments.command_parser.error("--trace-text needs --trace FILE")
    if arguments.probes > arguments.lists:
        arguments.command_parser.error(
            f"--probes ({arguments.probes}) cannot exceed --lists ({arguments.lists}): "
            "a question can scan at most every list"
        )


# --------------------------------------------------------------------------
# Loading or building the index
# --------------------------------------------------------------------------


def shown_path(path: Path) -> str:
    """A path as the user would type it: relative to the current directory when inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix() or "."
    except ValueError:
        return str(path)


def _index_modules(dense: bool = False) -> list[object]:
    """The modules whose code decides what the cached index contains.

    They are the index's builders and every ``rag`` module those import
    (:func:`rag.pipeline.code_digest.import_closure`, the closure that also keys the
    pipeline's rules), so a module a builder comes to import later, such as
    the one that stores index arrays, changes the key without being listed
    here. ``question_answering`` assembles the index but also holds the
    answering steps, so it enters alone: its imports (the readers, prompts)
    do not shape the index.
    """
    import importlib

    import rag
    from rag import chunking
    from rag.ask import index as question_answering
    from rag.corpus import documents
    from rag.pipeline.code_digest import import_closure
    from rag.retrieval import bm25, ivf, lsa, tfidf

    builders = [documents, chunking, bm25, tfidf, lsa, ivf]
    if dense:
        from rag.retrieval.dense import embedder

        builders.append(embedder)
    package_root = Path(rag.__file__).parent
    names = {module.__name__.removeprefix("rag.") for module in builders}
    for module in builders:
        names.update(import_closure(Path(module.__file__), package_root))
    dotted = ["rag" if name == "__init__" else f"rag.{name}" for name in sorted(names)]
    modules = [importlib.import_module(name) for name in dotted]
    return [*modules, question_answering]


def _progress(line: str) -> None:
    """A progress line of a long step (building the index, encoding), on stderr as it happens."""
    print(f"rag ask: {visible(line, keep_newlines=False)}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class AskFolder:
    """A documents folder read once through the pipeline's parse: its files, documents and notes.

    ``unstated`` are the ids of the documents that state no access level;
    ``notes`` the parse's warnings (titles taken from a heading or file name,
    front matter keys no reader uses).
    """

    files: list[tuple[str, str | bytes]]
    documents: list
    unstated: frozenset[str]
    notes: tuple[str, ...] = ()


def folder_skip(folder: Path, configs: Sequence[Path] | None = None) -> tuple[str, ...]:
    """What the pipeline leaves out of ``folder``: the ``skip`` of the corpus entry of
    ./config.yaml (or the project's) whose documents are this folder, else the default of the
    folder's source (:func:`rag.corpus.folders.source_of_folder`).

    So ``rag ask`` on the bundled corpus reads it as the grid does (prose only),
    on a user's folder keeps the list items the pipeline would keep, and on a
    folder of PDFs keeps their tables.
    """
    import yaml

    from rag.corpus.documents import check_skipped
    from rag.corpus.folders import source_of_folder
    from rag.corpus.source_kinds import DEFAULT_SKIPPED
    from rag.documents.access_metadata import DocumentError

    source = source_of_folder(folder)

    if configs is None:
        configs = [Path("config.yaml"), Path(__file__).resolve().parents[2] / "config.yaml"]
    for path in configs:
        try:
            config = yaml.safe_load(path.read_text(encoding="utf-8"))
            corpora = config.get("corpora") or {}
            entries = [entry for entry in corpora.values() if entry.get("source") == source]
        except (OSError, UnicodeDecodeError, yaml.YAMLError, AttributeError):
            continue
        for entry in entries:
            documents = entry.get("documents")
            if isinstance(documents, str) and (path.parent / documents).resolve() == folder.resolve():
                try:
                    return check_skipped(entry.get("skip", DEFAULT_SKIPPED[source]), f"{path} skip")
                except (DocumentError, TypeError) as error:
                    raise AskError(str(error)) from None
    return DEFAULT_SKIPPED[source]


@dataclass(frozen=True)
class DocumentAccess:
    """What a caller's view reads of a document: its id, access level, tenant, ACL and date updated."""

    doc_id: str
    access: str
    tenant: str
    acl: tuple[str, ...]
    updated: str | None


def cached_folder(files: list[tuple[str, str | bytes]], index: QuestionIndex) -> AskFolder:
    """The folder as its cached index recorded it: each document's access metadata and the parse's
    notes, so a question over a folder already indexed parses nothing."""
    documents = [
        DocumentAccess(
            doc_id,
            access,
            index.tenants.get(doc_id, ""),
            tuple(index.acls.get(doc_id, ())),
            index.updated.get(doc_id),
        )
        for doc_id, access in sorted(index.access.items())
    ]
    return AskFolder(files, documents, frozenset(index.unstated), tuple(index.reading_notes))


def read_ask_files(folder: Path) -> tuple[str, list[tuple[str, str | bytes]]]:
    """The folder's source of the table of sources and its files (name, content), unparsed."""
    from rag.corpus.folders import read_folder_files
    from rag.corpus.markdown_files import FolderError

    try:
        return read_folder_files(folder)
    except FolderError as error:
        raise AskError(str(error)) from None


def read_ask_folder(
    folder: Path, skip: Sequence[str], read: tuple[str, list[tuple[str, str | bytes]]] | None = None
) -> AskFolder:
    """Every file of ``folder`` parsed as the pipeline parses it, by the folder's source of the table
    of sources (:func:`rag.corpus.folders.read_folder_files`); every problem in one AskError.

    ``read``: the folder's source and files, already read (:func:`read_ask_files`).
    """
    from rag.ask.index import documents_without_access, read_documents
    from rag.documents.access_metadata import DocumentError

    source, files = read if read is not None else read_ask_files(folder)
    location = f"{folder}{os.sep}"
    try:
        reading = read_documents(files, location, skip, source)  # default access: restricted
        unstated = documents_without_access(files, location, skip, source, closed=reading.documents)
    except DocumentError as error:
        raise AskError(str(error)) from None
    documents = sorted(reading.documents, key=lambda document: document.doc_id)
    notes = tuple(f"note: {line}" for line in reading.warnings(shown_path(folder)))
    return AskFolder(files, documents, frozenset(unstated), notes)


def index_key(options: IndexOptions, files: Sequence[tuple[str, str | bytes]]) -> str:
    """The cache entry of an index of ``files`` with ``options``, by this code's digest."""
    from rag.ask.index import cache_key
    from rag.formats.bundles import source_digest

    return cache_key(files, options, source_digest(_index_modules(options.dense_model is not None)))


def cached_index(
    cache: Path, options: IndexOptions, files: Sequence[tuple[str, str | bytes]]
) -> tuple[QuestionIndex | None, list[str]]:
    """The cached index of ``files`` with ``options`` and the line saying so; None where there is
    none (or it is unreadable: a note says so, and it is built again)."""
    from rag.ask.index import index_from_bundle
    from rag.formats.bundles import BundleError, read_bundle, touch_bundle

    entry = cache / index_key(options, files)
    started = time.perf_counter()
    try:
        bundle = read_bundle(entry)
        if bundle is not None:
            index = index_from_bundle(bundle.arrays, bundle.values, bundle.manifest)
            touch_bundle(entry)
            seconds = time.perf_counter() - started
            return index, [f"index: cache hit, loaded in {seconds:.2f} s from {shown_path(entry)}"]
    except (BundleError, ValueError) as error:
        return None, [f"note: the cached index in {shown_path(entry)} is unreadable ({error}); rebuilding it"]
    return None, []


def load_or_build_index(
    folder: Path,
    cache: Path,
    options: IndexOptions,
    embed: Callable | None = None,
    report: Callable[[str], None] = _progress,
    reading: AskFolder | None = None,
) -> tuple[QuestionIndex, list[str]]:
    """The index of ``folder`` from the cache, or built and cached; plus the lines to show about it.

    ``embed`` embeds the chunks when ``options.dense_model`` asks for MiniLM embeddings.
    Building can take minutes on a large folder: ``report`` hears when it
    starts, and the embedder reports its own progress. ``reading`` is the
    folder already read (:func:`read_ask_folder`, with ``options.skip``).
    """
    from rag.ask.index import build_question_index, index_to_bundle
    from rag.formats.bundles import (
        prune_bundles,
        write_bundle,
    )

    if reading is None:
        reading = read_ask_folder(folder, options.skip)
    files = reading.files
    index, lines = cached_index(cache, options, files)
    if index is not None:
        return index, lines
    entry = cache / index_key(options, files)
    started = time.perf_counter()
    report(f"index: not cached, building it from {len(files)} documents of {shown_path(folder)}")
    index = build_question_index(reading.documents, options, embed, reading.unstated)
    index = dataclasses.replace(index, reading_notes=tuple(reading.notes))
    seconds = time.perf_counter() - started
    try:
        write_bundle(entry, *index_to_bundle(index))
        lines.append(f"index: cache miss, built in {seconds:.2f} s and cached in {shown_path(entry)}")
        removed = prune_bundles(
            cache, CACHE_ENTRIES, CACHE_MAX_AGE_SECONDS, spare=entry, others=(EMBEDDINGS_FOLDER,)
        )
        if removed:
            lines.append(
                f"index: removed {len(removed)} older cached index(es) (the cache keeps {CACHE_ENTRIES})"
            )
    except OSError as error:
        lines.append(
            f"index: cache miss, built in {seconds:.2f} s; could not cache it in {shown_path(entry)} "
            f"({error.strerror or error})"
        )
    return index, lines


# --------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= TEXT_PREVIEW_CHARACTERS:
        return flat
    return flat[: TEXT_PREVIEW_CHARACTERS - 3].rsplit(" ", 1)[0] + " ..."


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


def access_line(
    index: QuestionIndex,
    access: Sequence[str],
    caller: Caller | None = None,
    default_access: str | None = None,
) -> str:
    """Which access levels (for a caller, tenant and groups too) reach the prompt, and what it left out."""
    if caller is None:
        others = int(index.withheld(access).sum())
        line = (
            f"Access: {', '.join(access)} (--access); {others} of {len(index.chunks)} chunks are of "
            "other levels"
        )
    else:
        others = int(index.withheld_from(caller, default_access).sum())
        line = (
            f"Access: {', '.join(caller.levels())} (--access); {others} of {len(index.chunks)} chunks are "
            f"of documents caller {caller.name!r} (tenant {caller.tenant or 'none'}, groups "
            f"{', '.join(sorted(caller.groups)) or 'none'}) may not read"
        )
    return line + " and are never searched (a prefilter inside both searches), so none can reach the prompt"


def unstated_access_line(index: QuestionIndex, caller: Caller, default_access: str | None) -> str | None:
    """A line when documents stating no access level are left out by the default alone: what to pass."""
    return _unstated_note(
        index.unstated_withheld(caller, default_access), index.document_count, caller, default_access
    )


def _unstated_note(count: int, documents: int, caller: Caller, default_access: str | None) -> str | None:
    from rag.documents.access_metadata import DEFAULT_ACCESS

    if not count:
        return None
    level = default_access or DEFAULT_ACCESS
    wider = ",".join([*caller.levels(), level])
    return (
        f"note: {count} of {documents} documents state no access level and count as {level}, "
        f"which this caller does not read, so none of their chunks can be retrieved; to include them pass "
        f"--access {wider}, or --default-access public, or give each an 'access:' line in its front matter"
    )


def nothing_readable(
    folder: Path, reading: AskFolder, caller: Caller, default_access: str | None, question: str
) -> list[str] | None:
    """The report when ``caller`` may read none of the folder's documents, or None when it may read one.

    Checked before the index is built, so nothing is encoded or fitted for
    chunks the caller could never be shown.
    """
    from rag.retrieval.filters import readable

    def level(document) -> str:
        unstated = default_access is not None and document.doc_id in reading.unstated
        return default_access if unstated else document.access

    documents = reading.documents
    if any(
        readable(caller, level(doc), doc.tenant, tuple(doc.acl), updated=doc.updated) for doc in documents
    ):
        return None
    unstated = sum(level(doc) not in caller.access for doc in documents if doc.doc_id in reading.unstated)
    note = _unstated_note(unstated, len(documents), caller, default_access)
    return [
        f"Question: {question}",
        f"Documents: {shown_path(folder)}: {len(documents)} documents, none of which caller "
        f"{caller.name!r} (access {', '.join(caller.levels())}, tenant {caller.tenant or 'none'}, groups "
        f"{', '.join(sorted(caller.groups)) or 'none'}) may read: nothing was indexed or encoded",
        *reading.notes,
        *([note] if note else []),
        "",
        "No chunk was retrieved.",
    ]


def ask_caller(arguments: argparse.Namespace) -> Caller:
    """Who ``rag ask`` answers for: --caller from ./config.yaml, else --tenant, --group and --access."""
    from rag.retrieval.filters import FilterError, parse_caller

    name = getattr(arguments, "caller", None)
    if name:
        callers = configured_callers(Path("config.yaml"))
        if name not in callers:
            raise AskError(
                f"--caller {name}: no such caller in the callers section of ./config.yaml; known: "
                f"{sorted(callers) or 'none'}"
            )
        return callers[name]
    access = arguments.access or ("public",)
    groups = list(getattr(arguments, "group", []))
    entry = {"tenant": getattr(arguments, "tenant", "") or "", "groups": groups, "access": list(access)}
    try:  # the flags were checked one by one; the caller is built by the pipeline's rule
        return parse_caller("command line", entry, "--tenant/--group/--access")
    except FilterError as error:
        raise AskError(str(error)) from None


def configured_callers(path: Path) -> dict[str, Caller]:
    """Every caller of ``path``'s callers section, refused as the pipeline refuses them.

    The file is read with the pipeline's loader (a key given twice, or a merge
    key, is an error naming the line), and every caller is checked, not
    only the one asked for: a config.yaml the pipeline would refuse is not
    half-used here. No file is no callers.
    """
    import yaml

    from rag.formats.files import read_unique_yaml
    from rag.kinds import ConfigError
    from rag.retrieval.filters import PUBLIC_CALLER, FilterError, parse_caller

    if not path.is_file():
        return {}
    try:
        config = read_unique_yaml(path)
    except ConfigError as error:
        raise AskError(str(error)) from None
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as error:
        problem = getattr(error, "strerror", None) or type(error).__name__
        raise AskError(f"{path}: cannot be read as YAML ({problem})") from None
    section = config.get("callers") if isinstance(config, dict) else None
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise AskError(f"{path}: its callers section is not a mapping")
    filters = config.get("filters") if isinstance(config.get("filters"), dict) else {}
    callers = {}
    for name, entry in sorted(section.items(), key=lambda item: str(item[0])):
        where = f"config['callers'][{name!r}]"
        if name in filters or name == PUBLIC_CALLER.name:
            raise AskError(f"{path}: {where}: the name is taken (a filter's, or the public caller's)")
        try:
            callers[name] = parse_caller(str(name), entry, where)
        except FilterError as error:
            raise AskError(f"{path}: {error}") from None
    return callers


def _threshold_provenance(threshold: float) -> str:
    """Where the reader's default threshold comes from, for documents other than the bundled ones."""
    return (
        f"note: the reader's threshold {threshold:.2f} was chosen on the bundled corpus's labelled "
        "questions (results/reader_thresholds.csv), not on these documents; it may not carry to them. "
        "Pass --threshold, or choose one on your own questions with the pipeline's answers section "
        "(docs/answers.md)"
    )


def _lexical_name(index: QuestionIndex) -> str:
    """The fused BM25 as the report names it: stemmed, with its k1 and b, or the spec's."""
    settings = index.entries.lexical
    stemmed = "stemmed " if settings["stem"] else ""
    return f"{stemmed}BM25, k1 {settings['k1']:g}, b {settings['b']:g}"


def format_retrieval(report: AnswerReport, index: QuestionIndex) -> list[str]:
    retrieval = report.retrieval
    constant = index.entries.fused["constant"]
    dense_column = "IVF"
    if index.chunk_embeddings is not None:
        dense = f"{index.options.dense_model} (exact cosine search, {retrieval.dense_listed} listed)"
        dense_column = "dense"
    elif index.ivf is not None:
        dense = (
            f"LSA ({index.lsa.dimensions} dimensions) through IVF, {retrieval.probes} of "
            f"{index.list_count} lists probed, {100 * retrieval.share_scanned:.1f} % of the chunks scanned "
            f"({retrieval.dense_listed} listed)"
        )
    else:
        dense = "no dense retriever"
    lines = [
        "Retrieval",
        f"  {_lexical_name(index)} ({retrieval.bm25_listed} chunks listed) and {dense};",
        f"  fused by reciprocal rank fusion, score = sum of 1 / ({constant:g} + rank).",
    ]
    lines += [f"  note: {note}" for note in retrieval.notes]
    if not retrieval.chosen:
        lines.append("  No chunk was retrieved.")
        return lines
    in_prompt = len(report.prompt.sources)
    lines.append(f"  {'source':>6}  {'fused':>8}  {'BM25':>4}  {dense_column:>5}  chunk")
    for position, retrieved in enumerate(retrieval.chosen, start=1):
        source = f"[{position}]" if position <= in_prompt else "(cut)"
        lines.append(
            f"  {source:>6}  {retrieved.fused_score:8.5f}  {_rank(retrieved.bm25_rank):>4}  "
            f"{_rank(retrieved.dense_rank):>5}  {retrieved.chunk.label}  ({retrieved.chunk.chunk_id[:10]})"
        )
        lines.append(f"  {'':>29}  {_preview(retrieved.chunk.text)}")
    return lines


def format_prompt(report: AnswerReport) -> list[str]:
    prompt = report.prompt
    budget = f", budget {prompt.budget}" if prompt.budget is not None else ""
    omitted = f"; {prompt.omitted} cut to fit" if prompt.omitted else ""
    count = len(prompt.sources)
    header = (
        f"Prompt ({count} source{'' if count == 1 else 's'}, {prompt.tokens} tokens counted as words and "
        f"punctuation{budget}{omitted})"
    )
    return [header, *(f"  | {line}" if line else "  |" for line in prompt.text.rstrip("\n").split("\n"))]


def format_answer(report: AnswerReport, generator: str, threshold: float) -> list[str]:
    from rag.answering.extractive import Abstention

    result, reading = report.extractive, report.reading
    if reading is not None:
        wanted = _expected_words(reading.answer_type.kinds)
        best = reading.best
        if best is None:
            header = "Answer (reader): abstained, the sources hold no sentence"
        elif not reading.answered:
            header = (
                f"Answer (reader): abstained, the best sentence scores {best.score:.2f}, below the "
                f"threshold {threshold:.2f}"
            )
        else:
            similarity = "" if best.similarity is None else f", MiniLM similarity {best.similarity:.2f}"
            header = (
                f"Answer (reader, quoted from source [{best.source_number}], score {best.score:.2f}, "
                f"threshold {threshold:.2f}; coverage {best.coverage:.2f}, proximity {best.proximity:.2f}"
                f"{similarity})"
            )
        header += f"\n  the question asks for {wanted}"
    elif isinstance(result, Abstention):
        header = (
            f"Answer ({generator}): abstained, the best sentence covers {result.best_coverage:.2f} "
            f"of the question's idf weight, below the threshold {threshold:.2f}"
        )
    elif result is not None:
        # An offline kind printed from its read (rag.ask.index.quoted_or_abstained): its score
        # is named when it is not the sentence's coverage, its threshold when it has one.
        best = report.best
        score = "" if best is None or best.score == best.coverage else f", score {best.score:.2f}"
        limit = "no threshold" if threshold == NO_THRESHOLD else f"threshold {threshold:.2f}"
        header = (
            f"Answer ({generator}, quoted from source [{result.source_number}], "
            f"coverage {result.coverage:.2f}{score}, {limit})"
        )
    else:
        header = f"Answer ({generator})"
    return [*header.split("\n"), *(f"  {line}" for line in report.answer.strip().splitlines())]


def _expected_words(kinds: tuple[str, ...]) -> str:
    from rag.answering.verification import expected_in_words

    return expected_in_words(kinds)


def _claim_lines(number: int, claim: ClaimCheck) -> list[str]:
    verdict = "passes" if claim.supported else "FAILS"
    cites = "cites " + ", ".join(f"[{source}]" for source in claim.cited) if claim.cited else "no citation"
    details = [
        cites,
        f"support {claim.support:.2f} ({claim.matched_terms} of {claim.term_count} terms found)",
    ]
    if claim.missing_citations:
        details.append("no such source: " + ", ".join(f"[{source}]" for source in claim.missing_citations))
    if claim.unsupported_numbers:
        details.append("numbers not in the cited sources: " + ", ".join(claim.unsupported_numbers))
    return [f"  claim {number}: {verdict}; " + "; ".join(details), f"    {claim.sentence}"]


def format_check(report: AnswerReport) -> list[str]:
    from rag.answering.verification import DEFAULT_SUPPORT_THRESHOLD

    header = (
        "Citation check (a claim passes when it cites an existing source, at least "
        f"{DEFAULT_SUPPORT_THRESHOLD:.0%} of its terms occur in the cited sources, and so does every number)"
    )
    check = report.check
    if check is None:
        return [header, "  nothing to check: the generator abstained"]
    lines = [header]
    for number, claim in enumerate(check.claims, start=1):
        lines += _claim_lines(number, claim)
    if not check.claims:
        lines.append("  the answer has no sentence to check")
    lines.append(f"  {check.supported_claims} of {len(check.claims)} claims pass")
    return lines


def format_verdicts(report: AnswerReport, measured: Sequence[str] = ()) -> list[str]:
    """The two checks, each saying what it measured, and how often answers passing both were right.

    ``measured`` are the lines of :func:`rag.measuring.verdicts.measured_rate_lines`
    for this generator and retriever (results/verdicts.csv): the checks' worth
    printed beside them, so that two passes never read as "right".
    """
    from rag.answering.verification import describe_verdicts

    header = "Checks (what each measured; neither says the answer is right)"
    from rag.measuring.verdicts import NO_RATE_FOR_OWN_DOCUMENTS

    rates = []
    if list(measured) == [NO_RATE_FOR_OWN_DOCUMENTS]:
        rates = [f"  How often answers that passed both checks were right: {NO_RATE_FOR_OWN_DOCUMENTS}"]
    elif measured:
        rates = [
            "  How often answers that passed both checks were right, on the bundled corpus's "
            "held-out questions only (results/verdicts.csv; the development questions, on which "
            "thresholds were chosen, are left out):",
            *(f"    {line}" for line in measured),
        ]
    if report.verdicts is not None:
        return [header, *(f"  {line}" for line in describe_verdicts(report.verdicts)), *rates]
    # An abstention makes no claim: nothing is checked, not even the sentence it withheld.
    return [header, "  none: the generator abstained, so there is no answer to check"]


def measured_verdicts(generator: str, retriever: str, similarity: bool, bundled: bool = True) -> list[str]:
    """The measured-rate lines of ``rag ask``'s generator and retriever, from the checkout's results/.

    ``bundled``: the documents are the bundled corpus, the only ones the rates are measured on.
    """
    from rag.ask.generators import measured_name
    from rag.measuring.verdicts import measured_rate_lines, rag_ask_setup, read_verdicts

    table = (
        read_verdicts(Path(__file__).resolve().parents[2] / "results" / "verdicts.csv") if bundled else None
    )
    return measured_rate_lines(table, measured_name(generator, similarity), rag_ask_setup(retriever), bundled)


def is_bundled_folder(folder: Path) -> bool:
    """Whether ``folder`` is the bundled corpus (however it was named on the command line)."""
    try:
        return Path(folder).resolve() == bundled_documents().resolve()
    except OSError:
        return False


# --------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------


def _prompt_gate(caller: Caller, entry: object, tables: dict) -> Callable:
    """Each prompt's gate (rag.models.gate): the caller, the entry, the index's access metadata.

    ``tables["table"]`` is filled once the index is loaded; every source of the prompt is
    admitted by the caller's view before anything is sent.
    """
    from rag.models.gate import open_gate

    opened: list = []

    def gate_of(prompt: object):
        if not opened:
            opened.append(open_gate(caller=caller, entry=entry, table=tables["table"]))
        gate = opened[0]
        gate.admit([chunk.chunk_id for chunk in prompt.sources.values()])
        return gate

    return gate_of


def index_access(index: object, default_access: str | None) -> object:
    """The access metadata of ``rag ask``'s index, per chunk, as the gate reads a chunk table."""
    from rag.models.gate import ChunkAccess
    from rag.retrieval.filters import ChunkMetadata

    chunks = list(index.chunks)
    updated = getattr(index, "updated", {}) or {}
    metadata = ChunkMetadata.from_columns(
        [chunk.doc_id for chunk in chunks],
        [index.document_access(chunk.doc_id, default_access) for chunk in chunks],
        [() for _ in chunks],
        [updated.get(chunk.doc_id) for chunk in chunks],
        [index.tenants.get(chunk.doc_id, "") for chunk in chunks],
        [tuple(index.acls.get(chunk.doc_id, ())) for chunk in chunks],
    )
    return ChunkAccess({chunk.chunk_id: position for position, chunk in enumerate(chunks)}, metadata)


def _hosted_generator(caller: Caller, tables: dict) -> Callable:
    """The hosted model as a generator whose failures become one-line errors.

    Imported only when asked for: the extractive path needs no HTTP client.
    Its deadline (``RAG_LLM_TIMEOUT``) defaults to the pipeline's bundled
    entry's ``timeout``, as ``--generator llm`` uses it.
    """
    from rag.models.client import LlmError
    from rag.models.hosted import (
        HostedModelError,
        config_from_environment,
        hosted_entry,
        hosted_generator,
    )

    overrides = {}
    if not os.environ.get("RAG_LLM_TIMEOUT", "").strip():
        overrides["timeout_seconds"] = float(_bundled_entry()["timeout"])
    try:
        config = config_from_environment(**overrides)
        generate = hosted_generator(config, gate_of=_prompt_gate(caller, hosted_entry(config), tables))
    except ValueError as error:
        raise AskError(f"--generator hosted: {error}") from None

    def guarded(prompt: object) -> str:
        try:
            return generate(prompt)
        except (HostedModelError, LlmError) as error:
            raise AskError(f"--generator hosted: {error}") from None

    return guarded


def _llm_generator(name: str, cache: Path, caller: Caller, tables: dict) -> Callable:
    """An llm generator (the bundled model or a ./config.yaml entry) through the chat client and cache.

    The same path as the pipeline's llm jobs: the conversation of
    :func:`rag.answering.llm_answers.messages_for`, the response cache, and
    the bundled server started only when the reply is not cached. The entry
    passes the plan's checks first (:func:`llm_entry`).
    """
    from rag.answering import llm_answers
    from rag.kinds import behaviour
    from rag.models import local_server
    from rag.models.client import LlmError
    from rag.models.gate import model_entry
    from rag.models.response_cache import ResponseCache

    entry = llm_entry(name)
    generator = behaviour(entry["kind"], "generate")(name, entry)
    gate_of = _prompt_gate(caller, model_entry(name, entry, "generator"), tables)

    def generate(prompt: object) -> str:
        try:
            gate = gate_of(prompt)
        except LlmError as error:
            raise AskError(f"--generator {name}: {error}") from None
        messages = llm_answers.messages_for(
            prompt.question, list(prompt.sources.values()), generator.template
        )
        # A bundled model that is not installed still answers a cached prompt; an uncached one is
        # refused in one line by complete_with_cache (rag.answering.llm_answers), named below.
        complete = llm_answers.complete_with_cache(
            generator, ResponseCache(cache / LLM_CACHE_FOLDER), gate=gate
        )
        # The first call may start the bundled server (tens of seconds on a busy machine): say so.
        _progress(f"asking {name} (served from {cache / LLM_CACHE_FOLDER} when this prompt was asked before)")
        try:
            completion = complete([messages])[0]
            read = generator.read_reply(completion, len(prompt.sources))
            if read.problem:
                raise AskError(f"--generator {name}: {read.problem}")
            return read.text
        except (LlmError, local_server.LocalServerError, ValueError) as error:
            raise AskError(f"--generator {name}: {error}") from None

    return generate


def check_generator_may_receive(name: str, caller: Caller) -> None:
    """Refuse a generator off this machine that may not receive what ``caller`` reads (as planning does).

    A config.yaml llm entry declares ``may_receive``; the hosted generator
    (RAG_LLM_BASE_URL) receives public text only.
    """
    from rag.answering.config_checks import LLM_ROLE, generator_kinds_of
    from rag.kinds import GENERATOR_KINDS, defaults
    from rag.models.may_receive import endpoint_receives_too_much

    if name in OFFLINE_GENERATORS:
        return
    if name == HOSTED_GENERATOR:
        kind = generator_kinds_of(LLM_ROLE)[0]
        entry = {**defaults(GENERATOR_KINDS)[kind], "base_url": os.environ.get("RAG_LLM_BASE_URL", "")}
    else:
        entry = llm_entry(name)
    problem = endpoint_receives_too_much(name, entry, caller.name, caller.view().to_config())
    if problem:
        raise AskError(f"--generator {name}: {problem}")


def open_ask_trace(arguments: argparse.Namespace, folder: Path) -> int | None:
    """--trace FILE opened and checked (rag.ask.traces.open_trace_file) before any model is asked;
    never inside the documents, the cache or ./config.yaml."""
    from rag.ask.traces import TraceFileError, open_trace_file

    if arguments.trace is None:
        return None
    inputs = [
        Path(folder),
        Path(arguments.cache),
        Path("config.yaml"),
        Path(__file__).resolve().parents[2] / PROJECT_CONFIG,
    ]
    try:
        return open_trace_file(arguments.trace, inputs)
    except TraceFileError as error:
        raise AskError(str(error)) from None


def write_ask_trace(
    arguments: argparse.Namespace,
    report: AnswerReport,
    index: QuestionIndex,
    caller: Caller,
    index_lines: Sequence[str],
    answer_seconds: float,
    descriptor: int | None = None,
) -> None:
    """Append the request's trace to --trace FILE: hashes and ids, text only with --trace-text."""
    from rag.answering.trace import trace_lines
    from rag.ask.traces import report_trace

    trace = report_trace(
        report,
        index,
        caller,
        arguments.question,
        arguments.generator,
        {"answer": answer_seconds},
        cache="hit" if any("cache hit" in line for line in index_lines) else "miss",
        include_text=arguments.trace_text,
    )
    from rag.ask.traces import TraceFileError, append_trace

    if descriptor is None:
        descriptor = open_ask_trace(arguments, Path(arguments.documents or bundled_documents()))
    try:
        append_trace(descriptor, trace_lines([trace]), str(arguments.trace))
    except TraceFileError as error:
        raise AskError(str(error)) from None


def llm_entry(name: str) -> dict:
    """The canonical llm entry ``--generator NAME`` runs, checked as the plan checks it.

    A bundled name gives the pipeline's entry (its sampling and timeout); any
    other name an entry of ./config.yaml, which must pass
    :func:`rag.answering.config_checks.canonical_generators` and must not
    redefine a bundled name. Every problem is one :class:`AskError` line.
    """
    from rag.answering.config_checks import LLM_ROLE, role_of

    bundled = bundled_generators()
    configured = _configured_generators(strict=True)
    if name in configured:
        entry = _checked_entry(name, configured[name], f"--generator {name}: config.yaml")
        if role_of(entry) != LLM_ROLE:
            raise AskError(f"--generator {name}: config.yaml's entry {name!r} is not a language model")
        if name in bundled and entry != bundled[name]:
            raise AskError(
                f"--generator {name}: config.yaml's entry {name!r} redefines a bundled generator; the "
                f"bundled names ({', '.join(sorted(bundled))}) are reserved, so rename the entry"
            )
        return entry
    if name in bundled:
        return bundled[name]
    known = sorted({*GENERATORS, *bundled, *configured})
    raise AskError(f"--generator {name}: unknown generator; choose one of {known}")


def _checked_entry(name: str, entry: object, where: str) -> dict:
    from rag.answering.config_checks import canonical_generators
    from rag.kinds import ConfigError

    if not isinstance(entry, dict):
        raise AskError(f"{where}: the generators entry {name!r} is not a mapping")
    try:
        return canonical_generators({"generators": {name: entry}})[name]
    except ConfigError as error:
        raise AskError(f"{where}: {error}") from None


def _bundled_entry() -> dict:
    """The pipeline's entry of the bundled model (the first bundled one), else the llm kind's defaults."""
    return bundled_generators()[BUNDLED_GENERATOR_NAMES[0]]


def bundled_generators() -> dict[str, dict]:
    """The reserved names and the canonical entries they run: each bundled entry of the project's
    config.yaml (base_url ``bundled``), and ``llm`` for the first of them (the kind's defaults
    when the project's config has none)."""
    from rag.answering.config_checks import LLM_ROLE, generator_kinds_of, role_of
    from rag.kinds import BUNDLED_ENDPOINT, GENERATOR_KINDS, defaults

    section = _generators_section(Path(__file__).resolve().parents[2] / PROJECT_CONFIG, strict=False)
    found = {}
    for name, entry in sorted(section.items()):
        if (
            isinstance(entry, dict)
            and role_of(entry) == LLM_ROLE
            and entry.get("base_url", BUNDLED_ENDPOINT) == BUNDLED_ENDPOINT
        ):
            found[name] = _checked_entry(name, entry, f"the project's {PROJECT_CONFIG}")
    kind = generator_kinds_of(LLM_ROLE)[0]
    fallback = {"kind": kind, **defaults(GENERATOR_KINDS)[kind]}
    first = found.get("smollm2") or next(iter(found.values()), fallback)
    return {**{name: first for name in BUNDLED_GENERATOR_NAMES}, **found}


def _generator_name(value: str) -> str:
    """A --generator value: an offline or hosted one, the bundled model, or an llm entry of ./config.yaml."""
    try:
        known = {*GENERATORS, *bundled_generators(), *_configured_generators()}
    except AskError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if value not in known:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {value!r} (choose from {', '.join(sorted(known))})"
        )
    return value


def _configured_generators(strict: bool = False) -> dict:
    """The generators section of ./config.yaml, or nothing when there is none.

    ``strict``: a config.yaml that exists but cannot be read, or whose
    generators section is not a mapping, is an error rather than nothing.
    """
    return _generators_section(Path("config.yaml"), strict)


def _generators_section(path: Path, strict: bool) -> dict:
    import yaml

    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        if strict:
            problem = getattr(error, "strerror", None) or type(error).__name__
            raise AskError(f"{path}: cannot be read as YAML ({problem})") from None
        return {}
    section = config.get("generators") if isinstance(config, dict) else None
    if section is not None and not isinstance(section, dict) and strict:
        raise AskError(f"{path}: its generators section is not a mapping")
    return section if isinstance(section, dict) else {}


def _dense_installed() -> bool:
    from rag.retrieval.dense.sentence_embeddings import missing_packages

    return not missing_packages(DENSE_MODEL)


def _retriever(requested: str) -> str:
    """The retriever to use: ``auto`` becomes bm25_minilm with the dense extra, else bm25_lsa_ivf."""
    if requested == "auto":
        return "bm25_minilm" if _dense_installed() else "bm25_lsa_ivf"
    if requested == "bm25_minilm" and not _dense_installed():
        raise AskError('--retriever bm25_minilm needs the dense extra: pip install ".[dense]"')
    return requested


def ask(arguments: argparse.Namespace) -> int:
    from rag.answering.prompts import PromptBudgetError
    from rag.ask.index import IndexOptions, RetrievalSettings, answer_question

    generate = None
    folder = arguments.documents if arguments.documents is not None else bundled_documents()
    caller = ask_caller(arguments)
    # Every prompt passes the one gate (rag.models.gate) over the index's access metadata.
    tables: dict = {}
    if arguments.generator == HOSTED_GENERATOR:
        generate = _hosted_generator(caller, tables)
    elif arguments.generator not in OFFLINE_GENERATORS:
        generate = _llm_generator(arguments.generator, arguments.cache, caller, tables)
    check_generator_may_receive(arguments.generator, caller)
    trace_file = open_ask_trace(arguments, folder)  # before any model is asked
    retriever = _retriever(arguments.retriever)
    dense = retriever == "bm25_minilm"
    options = IndexOptions(
        max_words=arguments.max_words,
        dimensions=arguments.dimensions,
        lists=arguments.lists,
        dense_model=DENSE_MODEL if dense else None,
        skip=folder_skip(folder),
    )
    # A folder already indexed is not parsed again: its documents' access metadata and the parse's
    # notes come from the cached index (whose key is the files' contents).
    read = read_ask_files(folder)
    cached, cached_lines = cached_index(arguments.cache, options, read[1])
    reading = cached_folder(read[1], cached) if cached else read_ask_folder(folder, options.skip, read)
    refused = nothing_readable(folder, reading, caller, arguments.default_access, arguments.question)
    if refused is not None:
        print(visible("\n".join(refused)))
        return 0
    embedder = None
    if dense:
        from rag.answering.reader import CachedSentenceEmbedder

        embedder = CachedSentenceEmbedder(arguments.cache / EMBEDDINGS_FOLDER, DENSE_MODEL, report=_progress)
    embed = embedder.embed if embedder is not None else None
    # The MiniLM similarity made the reader worse on the labelled questions
    # (docs/answers.md), so it is used only when asked for.
    use_similarity = arguments.similarity and embedder is not None
    similarity = embedder.similarity if use_similarity else None
    threshold = arguments.threshold
    if threshold is None:
        if _cross_validated_threshold(arguments.generator):
            threshold = reader_threshold(use_similarity, arguments.generator)
        else:
            # A fixed threshold; the language models quote nothing and are not thresholded.
            threshold = DEFAULT_THRESHOLDS.get(arguments.generator, EXTRACTIVE_THRESHOLD)
    if cached is not None:
        index, index_lines = cached, cached_lines
    else:
        index, index_lines = load_or_build_index(folder, arguments.cache, options, embed, reading=reading)
    index_lines += reading.notes
    tables["table"] = index_access(index, arguments.default_access)
    answer_started = time.perf_counter()
    if (
        arguments.threshold is None
        and _cross_validated_threshold(arguments.generator)
        and arguments.documents is not None
    ):
        index_lines.append(_threshold_provenance(threshold))
    try:
        report = answer_question(
            index,
            arguments.question,
            RetrievalSettings(sources=arguments.sources, probes=arguments.probes),
            threshold=threshold,
            budget=arguments.budget,
            generate=generate,
            reader=arguments.generator if generate is None else None,
            embed=embed,
            similarity=similarity,
            caller=caller,
            default_access=arguments.default_access,
        )
    except PromptBudgetError as error:
        raise AskError(f"--budget {arguments.budget}: {error}") from None
    if embedder is not None:
        try:
            embedder.save()
        except OSError as error:
            index_lines.append(f"note: could not store new embeddings ({error.strerror or error})")

    answer_seconds = time.perf_counter() - answer_started
    if trace_file is not None:
        write_ask_trace(arguments, report, index, caller, index_lines, answer_seconds, trace_file)
    documents = len({chunk.doc_id for chunk in index.chunks})
    unstated = unstated_access_line(index, caller, arguments.default_access)
    lines = [
        f"Question: {arguments.question}",
        f"Documents: {shown_path(folder)}: {documents} documents, {index.word_count:,} words, "
        f"{len(index.chunks)} chunks of at most {options.max_words} words",
        *index_lines,
        access_line(index, caller.levels(), caller, arguments.default_access),
        *([unstated] if unstated else []),
        *(f"note: {note}" for note in index.notes),
        "",
        *format_retrieval(report, index),
        "",
        *format_prompt(report),
        "",
        *format_answer(report, arguments.generator, threshold),
        "",
        *format_check(report),
        "",
        *format_verdicts(
            report,
            measured_verdicts(
                arguments.generator, retriever, bool(use_similarity), bundled=is_bundled_folder(folder)
            ),
        ),
        "",
        f"Done in {time.perf_counter() - _STARTED:.2f} s (imports included, interpreter start-up not).",
    ]
    print(visible("\n".join(lines)))
    return 0
