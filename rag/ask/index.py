"""Answering one question over a folder of documents: the path behind ``rag ask``.

The batch pipeline measures every stage over a grid; an interactive question
needs one fixed setup that is fast to query. Each of ``rag ask``'s retrievers
is a named setup of the table of kinds, written as the pipeline's config
entries (:data:`rag.ask.setups.ASK_SETUPS`). The spec's sample project,
``bm25_lsa_ivf``, uses sentence chunks of at most 60 words with a title and
section header, BM25 next to 32-dimensional LSA searched through an IVF index
with 8 lists (3 probed), the two rankings fused by reciprocal rank fusion, and
the five best chunks as numbered sources; ``bm25_minilm`` (the dense extra)
fuses the stemmed BM25 of config.yaml with exact MiniLM search instead. The
entries are filled with their kinds' defaults by the config plan's own
:func:`rag.kinds.canonical_entry`, and the index is built, searched and fused
through the kinds' behaviour (:func:`rag.kinds.behaviour`), so ``rag ask``
ranks as the pipeline's entries of the same values rank. What the pipeline
has no use for stays here: a collection too small for the entries' LSA
dimensions or IVF lists gets fewer, with a note; chunks the caller may not
read are masked inside both searches (a prefilter, as the pipeline's caller
views are), so they are never scored, ranked or fused; the MiniLM vectors come through the
embedding cache. By default the reader of :mod:`rag.answering.reader`
answers (``extractive`` is the spec's generator). Every answer gets two
verdicts: faithful (the citation check) and responsive (it holds what the
question asks for).

Fitting is the slow part (the SVD and k-means), and it depends only on the
documents and a few index options, so the fitted index converts to plain
arrays and JSON (:func:`index_to_bundle`) that a cache can store under
:func:`cache_key` and load back (:func:`index_from_bundle`) without refitting.
Query-time options (probes, sources, threshold, budget) are not part of the
key: changing them reuses the same index.

Everything here is pure; reading the folder and the cache is the job of
rag.corpus.markdown_files and rag.formats.bundles, and printing is rag.cli's.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from rag.answering.extractive import (
    DEFAULT_COVERAGE_THRESHOLD,
    Abstention,
    BestSentence,
    ExtractiveAnswer,
    cite,
)
from rag.answering.prompts import Prompt, build_prompt
from rag.answering.reader import DEFAULT_WEIGHTS, ReaderWeights, Reading, Similarity, read_candidates
from rag.answering.verification import AnswerCheck, Verdicts, check_answer, verdicts
from rag.ask.generators import OFFLINE_GENERATORS, offline_kind, takes_similarity
from rag.ask.setups import ASK_SETUPS, SPEC_SETUP, AskSetup, ask_options
from rag.chunking import Chunk, ChunkerSpec, chunk_corpus, spec_from_config
from rag.corpus.documents import SKIPPABLE
from rag.corpus.folders import FolderReading, parse_files
from rag.documents.access_metadata import DEFAULT_ACCESS, DocumentDefaults, DocumentError
from rag.documents.blocks import Document
from rag.kinds import (
    CHUNKER_KINDS,
    RETRIEVER_KINDS,
    behaviour,
    canonical_entry,
    defaults,
)
from rag.retrieval.bm25 import BM25Index
from rag.retrieval.filters import Caller, readable
from rag.retrieval.ivf import IVFIndex, share_scanned
from rag.retrieval.lsa import LSAModel
from rag.retrieval.retrievers import ApproximateIndex, Retriever, build_ivf_retriever, query_embeddings
from rag.retrieval.search import Ranking, chunk_id_order, count_terms, top_k
from rag.text import analyze_entry

# Bumped whenever the bundle layout changes, so old cache entries are never misread.
INDEX_FORMAT = 4
# The retrievers of ``rag ask``, each a named setup of the table of kinds
# (rag.ask.setups.ASK_SETUPS): the spec's BM25 + LSA through IVF, and BM25 + exact
# MiniLM search (the dense extra). The index holds what its retriever needs.
SPEC_RETRIEVER = SPEC_SETUP
MINILM_RETRIEVER = "bm25_minilm"
RETRIEVERS = tuple(ASK_SETUPS)
# Embeds texts as unit rows (the MiniLM encoder through the embedding cache).
Embed = Callable[[list[str]], np.ndarray]

# The whole-number options' defaults, read from the spec setup's entries.
_SPEC_OPTIONS = ask_options(ASK_SETUPS[SPEC_SETUP])
DEFAULT_MAX_WORDS = _SPEC_OPTIONS["max_words"]
DEFAULT_DIMENSIONS = _SPEC_OPTIONS["dimensions"]
DEFAULT_LISTS = _SPEC_OPTIONS["lists"]
DEFAULT_PROBES = _SPEC_OPTIONS["probes"]
DEFAULT_SOURCES = _SPEC_OPTIONS["sources"]
DEFAULT_THRESHOLD = DEFAULT_COVERAGE_THRESHOLD
# How deep each retriever's list goes into the fusion: the evaluation depth of
# the pipeline. Deeper lists only add contributions below 1 / (60 + 100).
FUSION_DEPTH = 100

# Kind -> parameter -> default, as the config plan fills config.yaml's entries.
_RETRIEVER_PARAMETERS = defaults(RETRIEVER_KINDS)
_CHUNKER_PARAMETERS = defaults(CHUNKER_KINDS)
# The BM25 entries that can be fused (``IndexOptions.lexical``), by name: each
# setup's lexical component, the spec's unstemmed bm25 and the stemmed
# bm25_stem (Snowball, k1 0.9, b 0.4) of config.yaml.
LEXICAL_NAMES = tuple(dict.fromkeys(setup.lexical for setup in ASK_SETUPS.values()))


@dataclass(frozen=True)
class IndexOptions:
    """What shapes the fitted index, and hence the cache key.

    ``lists`` is the number of IVF lists asked for; an index over fewer
    chunks uses one list per chunk and says so in its notes. ``dense_model``
    names the sentence embedder of the ``bm25_minilm`` retriever (None: the
    spec's LSA through IVF); it is part of the cache key, so an index built
    for one model is never served for another. ``max_words``, ``dimensions``,
    ``lists`` and ``seed`` replace those values of the setup's chunker, lsa
    and ivf entries (:func:`setup_entries`); ``seed`` is the ivf entry's
    k-means seed, since the lsa kind fixes ARPACK's start vector itself.
    """

    max_words: int = DEFAULT_MAX_WORDS
    dimensions: int = DEFAULT_DIMENSIONS
    lists: int = DEFAULT_LISTS
    seed: int = 0
    dense_model: str | None = None
    # What the Markdown reader leaves out (rag.corpus.documents.SKIPPABLE), as a corpus's ``skip``.
    skip: tuple[str, ...] = SKIPPABLE
    # The BM25 entry that is fused, by name (LEXICAL_NAMES): None takes the
    # setup's own (bm25_stem beside MiniLM, the spec's bm25 beside LSA).
    lexical: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "skip", tuple(self.skip))
        if self.lexical is None:
            object.__setattr__(self, "lexical", self.setup.lexical)
        if self.lexical not in LEXICAL_NAMES:
            raise ValueError(f"lexical must be one of {list(LEXICAL_NAMES)}, got {self.lexical!r}")
        for name in ("max_words", "dimensions", "lists"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.dense_model is not None and not isinstance(self.dense_model, str):
            raise ValueError(f"dense_model must be a model name or None, got {self.dense_model!r}")

    def as_dict(self) -> dict[str, int | str | None]:
        return dataclasses.asdict(self)

    @property
    def retriever(self) -> str:
        """The setup's name: bm25_minilm with a dense model, else the spec's bm25_lsa_ivf."""
        return MINILM_RETRIEVER if self.dense_model is not None else SPEC_RETRIEVER

    @property
    def setup(self) -> AskSetup:
        return ASK_SETUPS[self.retriever]


@dataclass(frozen=True)
class SetupEntries:
    """The canonical entries an index is built and searched with, by their part in ``rag ask``.

    ``lexical`` is the fused BM25 and ``weights`` the BM25 whose idf the
    generators use (the same entry for the spec setup). ``dense`` is the LSA
    entry (spec) or the embedder entry (MiniLM); ``approximate`` the ivf entry
    over the LSA, None beside MiniLM. ``fused`` is the rrf entry.
    """

    chunker: dict[str, object]
    lexical: dict[str, object]
    weights: dict[str, object]
    dense: dict[str, object]
    approximate: dict[str, object] | None
    fused: dict[str, object]


def _canonical_retriever(setup_name: str, name: str) -> dict[str, object]:
    """A setup's retriever entry with its kind's defaults filled in, as config.yaml's are."""
    where = f"rag.ask.setups.ASK_SETUPS[{setup_name!r}].retrievers[{name!r}]"
    return canonical_entry(_RETRIEVER_PARAMETERS, ASK_SETUPS[setup_name].retrievers[name], where)


def lexical_entry(name: str) -> dict[str, object]:
    """The canonical BM25 entry of that name (one of LEXICAL_NAMES), from the setup that fuses it."""
    owner = next(setup_name for setup_name, setup in ASK_SETUPS.items() if setup.lexical == name)
    return _canonical_retriever(owner, name)


def setup_entries(options: IndexOptions) -> SetupEntries:
    """The options' setup as canonical entries, with the options' chunk size, dimensions, lists and seed.

    The options replace values of the setup's entries rather than adding to
    them, so that a size the collection cannot take is clipped later with a
    note (:func:`build_question_index`) instead of refused here.
    """
    setup_name, setup = options.retriever, options.setup
    size = CHUNKER_KINDS[setup.chunker["kind"]].size
    chunker = canonical_entry(
        _CHUNKER_PARAMETERS,
        {**setup.chunker, size: options.max_words},
        f"rag.ask.setups.ASK_SETUPS[{setup_name!r}].chunker",
    )
    dense = _canonical_retriever(setup_name, setup.dense)
    approximate = None
    if RETRIEVER_KINDS[dense["kind"]].role == "approximate":
        approximate = {**dense, "lists": options.lists, "seed": options.seed}
        dense = {**_canonical_retriever(setup_name, dense["base"]), "dimensions": options.dimensions}
    return SetupEntries(
        chunker=chunker,
        lexical=lexical_entry(options.lexical),
        weights=_canonical_retriever(setup_name, setup.weights),
        dense=dense,
        approximate=approximate,
        fused=_canonical_retriever(setup_name, setup.fused),
    )


def chunker_spec(options: IndexOptions) -> ChunkerSpec:
    """The setup's chunker entry as a spec: whole sentences, and each chunk names its body."""
    return spec_from_config(setup_entries(options).chunker)


# --------------------------------------------------------------------------
# Documents and the cache key
# --------------------------------------------------------------------------


def _content(content: str | bytes) -> str | bytes:
    return content


def read_documents(
    files: Sequence[tuple[str, str | bytes]],
    location: str = "",
    skip: Collection[str] = SKIPPABLE,
    source: str = "markdown",
    default_access: str = DEFAULT_ACCESS,
) -> FolderReading:
    """Parse (file name, text) pairs with the pipeline's parse of a folder, every problem at once.

    Each file goes through :func:`rag.corpus.folders.parse_files`, the parse
    of the pipeline's parse rule and of its plan, with the same ``skip`` and
    ``default_access`` settings, so ``rag ask`` and ``corpus_statistics.csv``
    see the same text. ``location`` is put in front of the file name in error
    messages (the folder, say), since the file name alone is also the default
    document id. Every file that fails, and every id two files declare (chunk
    ids derive from it), is one line of the one DocumentError raised.
    """
    named = [(f"{location}{name}", functools.partial(_content, text)) for name, text in files]
    reading = parse_files(named, source, tuple(skip), DocumentDefaults(access=default_access))
    if len(reading.problems) == 1:
        raise DocumentError(reading.problems[0])
    if reading.problems:
        raise DocumentError(
            f"{len(reading.problems)} problems in the documents:\n  " + "\n  ".join(reading.problems)
        )
    return reading


def parse_documents(
    files: Sequence[tuple[str, str | bytes]],
    location: str = "",
    skip: Collection[str] = SKIPPABLE,
    source: str = "markdown",
    default_access: str = DEFAULT_ACCESS,
) -> list[Document]:
    """The documents of :func:`read_documents`, sorted by id."""
    reading = read_documents(files, location, skip, source, default_access)
    return sorted(reading.documents, key=lambda document: document.doc_id)


def cache_key(files: Sequence[tuple[str, str | bytes]], options: IndexOptions, code_digest: str) -> str:
    """A digest of the documents' names and contents, the index options and the code.

    File names count because a file without an ``id`` takes its name as
    document id; the code digest makes an edited chunker or analyzer miss
    the cache instead of serving an index it would no longer build.
    """
    description = {
        "format": INDEX_FORMAT,
        "code": code_digest,
        "options": options.as_dict(),
        "documents": sorted(
            (name, hashlib.sha256(text if isinstance(text, bytes) else text.encode("utf-8")).hexdigest())
            for name, text in files
        ),
    }
    canonical = json.dumps(description, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------
# The index
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class QuestionIndex:
    """Chunks, their BM25 index, and their LSA embeddings filed in an IVF index or their
    MiniLM embeddings (``chunk_embeddings``, when ``options.dense_model`` is set).

    ``lsa`` and ``ivf`` are None with MiniLM embeddings, and when no term
    occurs in two chunks: LSA then has nothing to learn from and retrieval
    falls back to BM25 alone.
    ``notes`` say where the index differs from what the options asked for.
    """

    chunks: tuple[Chunk, ...]
    bm25: BM25Index
    lsa: LSAModel | None
    ivf: IVFIndex | None
    options: IndexOptions
    notes: tuple[str, ...] = ()
    chunk_embeddings: np.ndarray | None = None
    # Each document's access level, by id, and the words of the parsed documents
    # (counted as results/corpus_statistics.csv counts them).
    access: Mapping[str, str] = dataclasses.field(default_factory=dict)
    words: int = 0
    # The BM25 that ranks, when it is not ``bm25`` (whose unstemmed idf the
    # generators weigh question terms with): the stemmed one of bm25_stem.
    lexical_bm25: BM25Index | None = None
    # Each document's tenant and ACL, by id (shared and open when absent), and
    # the documents that state no access level (their ``access`` is the
    # fail-closed default; ``rag ask --default-access`` may say otherwise).
    tenants: Mapping[str, str] = dataclasses.field(default_factory=dict)
    acls: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    unstated: frozenset[str] = frozenset()
    # Each document's date updated, by id (absent: none), for a caller's as_of.
    updated: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # The lines the folder's parse printed ("note: ..."), kept so a cached index shows them again
    # without parsing the folder.
    reading_notes: tuple[str, ...] = ()

    @property
    def ranking_bm25(self) -> BM25Index:
        """The BM25 index that ranks chunks for the fusion."""
        return self.bm25 if self.lexical_bm25 is None else self.lexical_bm25

    @cached_property
    def entries(self) -> SetupEntries:
        """The canonical entries the index was built with, and is searched with."""
        return setup_entries(self.options)

    def lexical_terms(self, text: str) -> list[str]:
        """A question's terms as the ranking BM25 analyzes them."""
        return analyze_entry([text], self.entries.lexical)[0]

    @property
    def list_count(self) -> int:
        return self.ivf.list_count if self.ivf is not None else 0

    @cached_property
    def tie_order(self) -> np.ndarray:
        return chunk_id_order([chunk.chunk_id for chunk in self.chunks])

    @cached_property
    def idf(self) -> dict[str, float]:
        """BM25 idf by term: the weights the extractive generator's coverage uses."""
        return dict(zip(self.bm25.vocabulary.tolist(), self.bm25.idf.tolist(), strict=True))

    @property
    def word_count(self) -> int:
        return self.words

    @property
    def document_count(self) -> int:
        return len({chunk.doc_id for chunk in self.chunks})

    def withheld(self, access: Collection[str]) -> np.ndarray:
        """Per chunk, whether its document's access level is outside ``access``."""
        return np.array(
            [self.access.get(chunk.doc_id, DEFAULT_ACCESS) not in access for chunk in self.chunks], dtype=bool
        )

    def document_access(self, doc_id: str, default_access: str | None = None) -> str:
        """A document's access level; ``default_access`` stands in for one that states none."""
        if default_access is not None and doc_id in self.unstated:
            return default_access
        return self.access.get(doc_id, DEFAULT_ACCESS)

    def withheld_from(self, caller: Caller, default_access: str | None = None) -> np.ndarray:
        """Per chunk, whether ``caller`` may not read its document (level, tenant or ACL)."""
        return np.array(
            [
                not readable(
                    caller,
                    self.document_access(chunk.doc_id, default_access),
                    self.tenants.get(chunk.doc_id, ""),
                    self.acls.get(chunk.doc_id, ()),
                    updated=self.updated.get(chunk.doc_id),
                )
                for chunk in self.chunks
            ],
            dtype=bool,
        )

    def unstated_withheld(self, caller: Caller, default_access: str | None = None) -> int:
        """How many documents state no access level and are kept from ``caller`` by the default alone."""
        return sum(
            self.document_access(doc_id, default_access) not in caller.access
            for doc_id in self.unstated
            if doc_id in self.access
        )


def build_question_index(
    documents: Sequence[Document],
    options: IndexOptions,
    embed: Embed | None = None,
    unstated: Collection[str] = (),
) -> QuestionIndex:
    """Chunk the documents and fit BM25 and either LSA with the IVF index or, when
    ``options.dense_model`` is set, embed the chunks with ``embed``.

    Dimensions and lists that the collection is too small for are reduced to
    what it allows, with a note, rather than refused: a folder of two short
    notes should still be answerable.

    The BLAS runs single-threaded here: the SVD and k-means multiply small
    matrices, and a thread pool on a busy machine made the fit about ten
    times slower (2-4 s instead of 0.2-0.4 s on the bundled corpus).
    """
    # threadpoolctl limits only the BLAS libraries already loaded, and SciPy
    # loads its own OpenBLAS with scipy.linalg, so that comes first.
    import scipy.sparse.linalg  # noqa: F401

    index = _build_retrievers(documents, options, embed)
    access = {document.doc_id: document.access for document in documents}
    tenants = {document.doc_id: document.tenant for document in documents if document.tenant}
    acls = {document.doc_id: tuple(document.acl) for document in documents if document.acl}
    updated = {document.doc_id: document.updated for document in documents if document.updated}
    words = sum(len(block.text.split()) for document in documents for block in document.blocks)
    return dataclasses.replace(
        index,
        access=access,
        words=words,
        tenants=tenants,
        acls=acls,
        unstated=frozenset(unstated),
        updated=updated,
    )


def documents_without_access(
    files: Sequence[tuple[str, str | bytes]],
    location: str = "",
    skip: Collection[str] = SKIPPABLE,
    source: str = "markdown",
    closed: Sequence[Document] | None = None,
) -> set[str]:
    """The ids of the documents that state no access level: parsed with two defaults, they differ.

    ``closed``: the documents already parsed with the default "restricted"
    (:func:`read_documents`'s), so that only the second parse is paid.
    """
    if closed is None:
        closed = parse_documents(files, location, skip, source, default_access="restricted")
    closed = sorted(closed, key=lambda document: document.doc_id)
    opened = parse_documents(files, location, skip, source, default_access="public")
    return {a.doc_id for a, b in zip(closed, opened, strict=True) if a.access != b.access}


def index_chunks(documents: Sequence[Document], options: IndexOptions) -> list[Chunk]:
    """The chunks an index with ``options`` holds: its setup's chunker over the documents in id order.

    The texts it embeds are their ``indexed_text``s, which lets a job encode
    them ahead of the index (rag.answering.answers.measured_ask_texts).
    """
    chunker = setup_entries(options).chunker
    return chunk_corpus(sorted(documents, key=lambda document: document.doc_id), spec_from_config(chunker))


def _build_retrievers(
    documents: Sequence[Document], options: IndexOptions, embed: Embed | None
) -> QuestionIndex:
    from threadpoolctl import threadpool_limits

    entries = setup_entries(options)
    chunks = index_chunks(documents, options)
    texts = [chunk.indexed_text for chunk in chunks]
    bm25 = _build(entries.weights, texts)
    lexical = None if entries.lexical == entries.weights else _build(entries.lexical, texts)
    if options.dense_model is not None:
        if embed is None:
            raise ValueError(f"an index with {options.dense_model} embeddings needs an embed function")
        embeddings = np.asarray(embed(texts), dtype=np.float32)
        return QuestionIndex(tuple(chunks), bm25, None, None, options, (), embeddings, lexical_bm25=lexical)
    with threadpool_limits(1, user_api="blas"):
        lsa, ivf, notes = _build_lsa_and_ivf(entries, texts)
    return QuestionIndex(tuple(chunks), bm25, lsa, ivf, options, notes, lexical_bm25=lexical)


def _build(entry: Mapping[str, object], texts: Sequence[str]) -> object:
    """Fit the index a retriever entry describes with its kind's ``build`` behaviour, as the pipeline does."""
    return behaviour(entry["kind"], "build")(entry, texts)


def _build_lsa_and_ivf(
    entries: SetupEntries, texts: Sequence[str]
) -> tuple[LSAModel | None, IVFIndex | None, tuple[str, ...]]:
    """The LSA entry's model and the ivf entry's lists over it, each clipped to what the chunks allow.

    A collection too small for the entries' dimensions or lists gets fewer,
    with a note saying so, where the pipeline would refuse the entry: a
    folder of two short notes should still be answerable. With no term in
    ``min_df`` chunks LSA has nothing to learn, and retrieval uses BM25 alone.
    """
    lsa_entry, ivf_entry = entries.dense, entries.approximate
    minimum = lsa_entry["min_df"]
    frequency = count_terms(analyze_entry(texts, lsa_entry)).document_frequency
    shared_terms = int(np.count_nonzero(frequency >= minimum))
    if shared_terms == 0:
        note = (
            f"no term occurs in {minimum} or more of the {len(texts)} chunks, "
            "so LSA has nothing to learn: retrieval uses BM25 alone"
        )
        return None, None, (note,)
    notes: list[str] = []
    with warnings.catch_warnings():
        # The clipping warning is replaced by the note below.
        warnings.simplefilter("ignore", UserWarning)
        lsa = _build(lsa_entry, texts)
    if lsa.dimensions < lsa_entry["dimensions"]:
        notes.append(
            f"{lsa_entry['dimensions']} LSA dimensions asked for, but {len(texts)} chunks and "
            f"{shared_terms} shared terms allow only {lsa.dimensions}: using {lsa.dimensions}"
        )
    lists = min(ivf_entry["lists"], len(texts))
    if lists < ivf_entry["lists"]:
        notes.append(
            f"{ivf_entry['lists']} IVF lists asked for, but there are only {len(texts)} chunks: using {lists}"
        )
    approximate = build_ivf_retriever({**ivf_entry, "lists": lists}, Retriever(lsa_entry, lsa))
    return lsa, approximate.index.lists, tuple(notes)


def index_to_bundle(index: QuestionIndex) -> tuple[dict[str, dict], dict[str, object], dict[str, object]]:
    """The index as (array groups, JSON values, manifest) for :func:`rag.formats.bundles.write_bundle`."""
    arrays: dict[str, dict] = {"bm25": index.bm25.to_arrays()}
    if index.lsa is not None and index.ivf is not None:
        arrays["lsa"] = index.lsa.to_arrays()
        arrays["ivf"] = index.ivf.to_arrays()
    if index.chunk_embeddings is not None:
        arrays["dense"] = {"chunk_embeddings": index.chunk_embeddings}
    if index.lexical_bm25 is not None:
        arrays["lexical"] = index.lexical_bm25.to_arrays()
    values = {
        "chunks": [dataclasses.asdict(chunk) for chunk in index.chunks],
        "access": dict(index.access),
        "words": index.words,
        "tenants": dict(index.tenants),
        "acls": {doc_id: list(acl) for doc_id, acl in index.acls.items()},
        "unstated": sorted(index.unstated),
        "updated": dict(index.updated),
        "reading_notes": list(index.reading_notes),
    }
    manifest = {
        "format": INDEX_FORMAT,
        "options": index.options.as_dict(),
        "notes": list(index.notes),
        "chunk_count": len(index.chunks),
    }
    return arrays, values, manifest


def index_from_bundle(
    arrays: Mapping[str, Mapping], values: Mapping[str, object], manifest: Mapping[str, object]
) -> QuestionIndex:
    """Rebuild the index :func:`index_to_bundle` stored; ValueError if the pieces disagree."""
    if manifest.get("format") != INDEX_FORMAT:
        raise ValueError(f"index format {manifest.get('format')!r}, expected {INDEX_FORMAT}")
    try:
        chunks = tuple(Chunk(**row) for row in values["chunks"])
        options = IndexOptions(**manifest["options"])
        notes = tuple(str(note) for note in manifest["notes"])
        bm25 = BM25Index.from_arrays(arrays["bm25"])
        access, words = dict(values["access"]), int(values["words"])
        tenants = {str(doc_id): str(tenant) for doc_id, tenant in values.get("tenants", {}).items()}
        acls = {str(doc_id): tuple(map(str, acl)) for doc_id, acl in values.get("acls", {}).items()}
        unstated = frozenset(map(str, values.get("unstated", [])))
        updated = {str(doc_id): str(date) for doc_id, date in values["updated"].items()}
        reading_notes = values["reading_notes"]
        if not isinstance(reading_notes, list) or not all(isinstance(note, str) for note in reading_notes):
            raise TypeError("reading_notes is not a list of text")
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"incomplete index: {error}") from None
    lsa = LSAModel.from_arrays(arrays["lsa"]) if "lsa" in arrays else None
    ivf = IVFIndex.from_arrays(arrays["ivf"]) if "ivf" in arrays else None
    dense = np.asarray(arrays["dense"]["chunk_embeddings"], dtype=np.float32) if "dense" in arrays else None
    if (dense is None) != (options.dense_model is None):
        raise ValueError("the stored index and its options disagree on the dense model")
    lexical = BM25Index.from_arrays(arrays["lexical"]) if "lexical" in arrays else None
    entries = setup_entries(options)
    if (lexical is None) != (entries.lexical == entries.weights):
        raise ValueError("the stored index and its options disagree on the lexical retriever")
    sizes = {len(chunks), manifest.get("chunk_count"), bm25.n_chunks}
    if lsa is not None and ivf is not None:
        sizes |= {lsa.chunk_embeddings.shape[0], ivf.size}
    if dense is not None:
        sizes.add(dense.shape[0])
    if len(sizes) != 1:
        raise ValueError(f"the stored pieces disagree on the number of chunks: {sorted(map(str, sizes))}")
    return QuestionIndex(
        chunks,
        bm25,
        lsa,
        ivf,
        options,
        notes,
        dense,
        access,
        words,
        lexical,
        tenants,
        acls,
        unstated,
        updated,
        tuple(reading_notes),
    )


# --------------------------------------------------------------------------
# Retrieval
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrievalSettings:
    """The query-time options of retrieval: how many chunks become sources, how many IVF
    lists are probed, and the constant and depth of the fusion.

    One record, so that :func:`retrieve` and :func:`answer_question` share
    its defaults instead of each repeating them. None of these options
    shapes the fitted index, so none is part of the cache key: changing them
    reuses the same index.
    """

    sources: int = DEFAULT_SOURCES
    probes: int = DEFAULT_PROBES
    # None: the constant of the setup's fused entry.
    constant: float | None = None
    depth: int = FUSION_DEPTH


DEFAULT_RETRIEVAL = RetrievalSettings()


@dataclass(frozen=True)
class RetrievedChunk:
    """A chunk chosen as a source, with its place in the fused list and in each retriever's list.

    A rank of None means the retriever did not list the chunk at all: BM25
    when it shares no term with the question, IVF when it sits in a list that
    was not probed.
    """

    chunk: Chunk
    fused_rank: int
    fused_score: float
    bm25_rank: int | None
    dense_rank: int | None


@dataclass(frozen=True)
class Retrieval:
    """The chosen chunks of one question and how the two retrievers saw them.

    ``bm25_listed`` and ``dense_listed`` count the chunks each retriever put
    into the fusion; ``probes`` is the number of IVF lists actually probed
    (0 without an IVF index) and ``share_scanned`` the share of chunks the
    dense search scored (1.0 for exact MiniLM search), so a question that
    found little can be told apart from one whose search looked at little.
    """

    question: str
    chosen: tuple[RetrievedChunk, ...]
    bm25_listed: int
    dense_listed: int
    probes: int
    share_scanned: float
    notes: tuple[str, ...] = ()


def _search(
    index: object,
    entry: Mapping[str, object],
    question: str,
    depth: int,
    tie_order: np.ndarray,
    allowed: np.ndarray | None = None,
) -> Ranking:
    """One question's ranking by the entry's kind's ``search`` behaviour, as the pipeline ranks it.

    ``allowed`` (a boolean mask over the chunks, or None for all) is the
    search's prefilter: a chunk outside it is never scored.
    """
    return behaviour(entry["kind"], "search")(index, entry, [question], depth, tie_order, allowed)[0]


def _dense_ranking(
    index: QuestionIndex, question: str, probes: int, depth: int, allowed: np.ndarray | None = None
) -> tuple[Ranking, float]:
    """The ivf entry's ranking with ``probes`` lists, and the share of chunks it scanned.

    The LSA entry embeds the question and the probed lists' members are
    scored exactly, with the chunk-id tie order, as the pipeline's rank_ivf
    rule scores them; the share comes from the same choice of lists.
    """
    entries = index.entries
    base = Retriever(entries.dense, index.lsa)
    entry = {**entries.approximate, "lists": index.list_count, "probes": probes}
    ranking = _search(ApproximateIndex(base, index.ivf), entry, question, depth, index.tie_order, allowed)
    share = share_scanned(index.ivf, query_embeddings(base, [question]), probes)[0]
    return ranking, float(share)


def _ranks(ranking: Ranking) -> dict[int, int]:
    return {int(position): rank for rank, position in enumerate(ranking.positions, start=1)}


def _minilm_ranking(
    index: QuestionIndex, question: str, embed: Embed, depth: int, allowed: np.ndarray | None = None
) -> Ranking:
    """Exact cosine search of the chunk embeddings; scores rounded so ties fall to chunk id.

    Only the ``allowed`` chunks (all when None) are scored: the others get -inf,
    which :func:`rag.retrieval.search.top_k` never ranks.
    """
    query = np.asarray(embed([question]), dtype=np.float64)[0]
    vectors = index.chunk_embeddings
    if allowed is None:
        scores = np.round(vectors.astype(np.float64) @ query, 6)
    else:
        scores = np.full(len(vectors), -np.inf)
        scores[allowed] = np.round(vectors[allowed].astype(np.float64) @ query, 6)
    return top_k(scores, depth, index.tie_order)


def retrieve(
    index: QuestionIndex,
    question: str,
    settings: RetrievalSettings = DEFAULT_RETRIEVAL,
    embed: Embed | None = None,
    withheld: np.ndarray | None = None,
) -> Retrieval:
    """Fuse the BM25 ranking with the dense one by reciprocal rank fusion and keep the best chunks.

    ``settings`` say how many chunks to keep (``sources``), how many IVF
    lists to probe, and the fusion's constant and depth.

    The dense ranking is exact MiniLM search when the index holds MiniLM
    embeddings (``embed`` then embeds the question), else LSA through IVF,
    where more probes than the index has lists scan every list (with a note).
    ``withheld`` (a boolean mask over the chunks, :meth:`QuestionIndex.withheld`)
    marks chunks that must never be chosen: both searches leave them out before
    scoring (a prefilter), so the depth of each ranking is spent on chunks the
    caller may read and nothing about the withheld ones reaches the result.
    """
    sources, probes, depth = settings.sources, settings.probes, settings.depth
    if sources < 1 or probes < 1:
        raise ValueError(f"sources and probes must be positive, got {sources} and {probes}")
    notes: list[str] = []
    entries = index.entries
    terms = analyze_entry([question], entries.weights)[0]
    # A view that withholds nothing searches without a mask (the same ranking, less work).
    allowed = None if withheld is None or not np.any(withheld) else ~np.asarray(withheld, dtype=bool)
    bm25_ranking = _search(index.ranking_bm25, entries.lexical, question, depth, index.tie_order, allowed)
    dense_ranking, share, used_probes = Ranking.empty(), 0.0, 0
    if index.chunk_embeddings is not None:
        if embed is None:
            raise ValueError(
                f"the index holds {index.options.dense_model} embeddings: give an embed function"
            )
        dense_ranking, share = _minilm_ranking(index, question, embed, depth, allowed), 1.0
    elif index.ivf is not None:
        used_probes = min(probes, index.list_count)
        if used_probes < probes:
            notes.append(
                f"{probes} probes asked for, but the index has {index.list_count} lists: probing all"
            )
        dense_ranking, share = _dense_ranking(index, question, used_probes, depth, allowed)
    if not terms:
        notes.append("the question has no searchable terms (only stopwords or punctuation)")
    elif len(bm25_ranking) == 0 and len(dense_ranking) == 0:
        notes.append("no chunk shares a term with the question")
    rankings = [bm25_ranking, dense_ranking]
    fused_entry = (
        entries.fused if settings.constant is None else {**entries.fused, "constant": settings.constant}
    )
    fuse = behaviour(fused_entry["kind"], "fuse")
    fused = fuse(fused_entry, rankings, sources, index.tie_order)
    bm25_ranks, dense_ranks = _ranks(bm25_ranking), _ranks(dense_ranking)
    chosen = tuple(
        RetrievedChunk(
            chunk=index.chunks[position],
            fused_rank=rank,
            fused_score=float(score),
            bm25_rank=bm25_ranks.get(int(position)),
            dense_rank=dense_ranks.get(int(position)),
        )
        for rank, (position, score) in enumerate(zip(fused.positions, fused.scores, strict=True), start=1)
    )
    return Retrieval(
        question=question,
        chosen=chosen,
        bm25_listed=len(bm25_ranking),
        dense_listed=len(dense_ranking),
        probes=used_probes,
        share_scanned=share,
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------
# Answering
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class AnswerReport:
    """Everything ``rag ask`` shows: retrieval, prompt, answer, its check and both verdicts.

    ``reading`` is the full reading of an offline kind that has one (the
    reader's, rag.kinds ``reading``) and ``extractive`` the quoted sentence or
    abstention of every other offline kind, built from its ``read``
    (``best`` is what that returned); each is None for the language models.
    ``check`` and ``verdicts`` are None when the generator abstained, since an
    abstention makes no claim to check; ``withheld`` then judges the reader's
    best sentence, to show why it was not given.
    """

    retrieval: Retrieval
    prompt: Prompt
    answer: str
    extractive: ExtractiveAnswer | Abstention | None
    check: AnswerCheck | None
    reading: Reading | None = None
    verdicts: Verdicts | None = None
    withheld: Verdicts | None = None
    best: BestSentence | None = None

    @property
    def abstained(self) -> bool:
        if self.reading is not None:
            return not self.reading.answered
        return isinstance(self.extractive, Abstention)


# The offline generator kinds answer_question answers with (rag.ask.generators, from the table of kinds).
GENERATORS = OFFLINE_GENERATORS
# How many fused chunks a kind with ``candidates`` (the reader) reads before choosing the prompt's sources.
DEFAULT_POOL = 60


def rerank_by_reader(
    retrieval: Retrieval,
    idf: Mapping[str, float],
    sources: int,
    similarity: Similarity | None = None,
    weights: ReaderWeights = DEFAULT_WEIGHTS,
    pool_prompt: Prompt | None = None,
    candidates: Callable = read_candidates,
) -> Retrieval:
    """The ``sources`` chunks of the fused list whose best sentence the reader scores highest.

    Fusion ranks chunks by their words and embeddings as a whole; the reader
    scores single sentences for the question, type included, so reading a
    deeper pool and keeping the chunks with the best sentences brings up the
    one sentence that answers even when the chunk around it is about
    something else. Ties keep the fused order. ``pool_prompt`` is the prompt
    of every chunk of ``retrieval`` (:func:`pool_prompt_of`), when the caller has it already.
    ``candidates`` scores a prompt's sentences: the ``candidates`` behaviour of
    the generator kind that pools (rag.kinds), the reader's by default.
    """
    if not retrieval.chosen:
        return retrieval
    if pool_prompt is None:
        pool_prompt = pool_prompt_of(retrieval)
    best: dict[int, float] = {}
    for candidate in candidates(pool_prompt, idf, similarity, weights):
        number = candidate.source_number
        best[number] = max(best.get(number, -math.inf), candidate.score)
    order = sorted(
        range(len(retrieval.chosen)), key=lambda position: (-best.get(position + 1, -math.inf), position)
    )
    chosen = tuple(retrieval.chosen[position] for position in order[:sources])
    notes = (
        *retrieval.notes,
        f"the reader read the {len(retrieval.chosen)} best fused chunks and kept {len(chosen)}",
    )
    return dataclasses.replace(retrieval, chosen=chosen, notes=notes)


def pool_prompt_of(retrieval: Retrieval) -> Prompt:
    """The prompt of every chosen chunk of a retrieval: what the reader reads to rerank them."""
    return build_prompt(retrieval.question, [retrieved.chunk for retrieved in retrieval.chosen])


def _memoized(memo: dict | None, key: tuple, compute: Callable[[], object]) -> object:
    if memo is None:
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def answer_question(
    index: QuestionIndex,
    question: str,
    settings: RetrievalSettings = DEFAULT_RETRIEVAL,
    threshold: float = DEFAULT_THRESHOLD,
    budget: int | None = None,
    generate: Callable[[Prompt], str] | None = None,
    reader: str | None = "extractive",
    embed: Embed | None = None,
    similarity: Similarity | None = None,
    pool: int = DEFAULT_POOL,
    access: Collection[str] | None = None,
    weights: ReaderWeights = DEFAULT_WEIGHTS,
    memo: dict | None = None,
    caller: Caller | None = None,
    default_access: str | None = None,
) -> AnswerReport:
    """Retrieve with ``settings``, assemble the prompt within ``budget``, answer, check and judge.

    ``generate`` None answers offline with ``reader``, an offline generator
    kind of the table of kinds (:data:`rag.ask.generators.OFFLINE_GENERATORS`):
    its ``read`` behaviour's best sentence is the answer when its score reaches
    ``threshold`` (for ``extractive``, the spec's generator, the score is the
    idf coverage); a kind with a ``reading`` (the reader, :mod:`rag.answering.reader`)
    is read through it, with the MiniLM ``similarity`` when given and the kind
    takes one. Any other prompt-to-text function (the hosted model) is checked
    the same way. ``embed`` embeds the question for an index with MiniLM
    embeddings. A kind with ``candidates`` (the reader) first reads the ``pool``
    best fused chunks and keeps the ``settings.sources`` whose best sentence
    scores highest (:func:`rerank_by_reader`).
    ``access`` names the access levels whose documents may reach the prompt
    (None: every level); a chunk of any other document is never a source.
    ``caller``, when given, replaces ``access``: a chunk of a document the
    caller may not read (level, tenant or ACL; :func:`rag.retrieval.filters.readable`)
    is never a source, and ``default_access`` is the level of the documents
    that state none.
    ``weights`` are the reader's weights and rules (its defaults unless a
    rule's effect is being measured). ``memo``, a dict the caller keeps over
    the questions of one ``index`` and ``embed``, reuses retrievals and the
    reader's pool prompts: the jobs that measure ``rag ask`` answer each
    question with several generators, weights and thresholds.
    """
    kind = None if generate is not None else offline_kind(reader)
    if kind is None or not takes_similarity(reader):
        similarity = None
    withheld = None if access is None else index.withheld(access)
    allowed: object = None if access is None else tuple(sorted(access))
    if caller is not None:
        withheld = index.withheld_from(caller, default_access)
        allowed = (json.dumps(caller.view().to_config(), sort_keys=True), default_access)

    def retrieval_at(chosen: RetrievalSettings) -> Retrieval:
        return _memoized(
            memo,
            ("retrieval", question, chosen, allowed),
            lambda: retrieve(index, question, chosen, embed=embed, withheld=withheld),
        )

    if kind is not None and kind.candidates is not None:
        pooled = dataclasses.replace(settings, sources=max(settings.sources, pool))
        retrieval = retrieval_at(pooled)
        pool_prompt = None
        if retrieval.chosen:
            key = ("pool prompt", question, pooled, allowed)
            pool_prompt = _memoized(memo, key, lambda: pool_prompt_of(retrieval))
        candidates = behaviour(reader, "candidates")
        retrieval = rerank_by_reader(
            retrieval, index.idf, settings.sources, similarity, weights, pool_prompt, candidates
        )
    else:
        retrieval = retrieval_at(settings)
    prompt = build_prompt(question, [retrieved.chunk for retrieved in retrieval.chosen], budget=budget)
    extractive: ExtractiveAnswer | Abstention | None = None
    reading: Reading | None = None
    best: BestSentence | None = None
    if generate is not None:
        answer = generate(prompt)
        abstained = False
    elif kind.reading is not None:
        reading = behaviour(reader, "reading")(prompt, index.idf, threshold, similarity, weights)
        answer, abstained = reading.text, not reading.answered
    else:
        best = behaviour(reader, "read")(prompt, index.idf, similarity)
        extractive = quoted_or_abstained(best, threshold)
        answer, abstained = extractive.text, isinstance(extractive, Abstention)
    check = None if abstained else check_answer(answer, prompt.source_texts)
    labels = {number: chunk.label for number, chunk in prompt.sources.items()}
    judged = None if check is None else verdicts(check, answer, question, labels)
    withheld = None
    if reading is not None and reading.best is not None and not reading.answered:
        quoted = reading.best.text
        withheld = verdicts(check_answer(quoted, prompt.source_texts), quoted, question, labels)
    return AnswerReport(retrieval, prompt, answer, extractive, check, reading, judged, withheld, best)


def quoted_or_abstained(best: BestSentence | None, threshold: float) -> ExtractiveAnswer | Abstention:
    """An offline kind's answer from its ``read``: the best sentence quoted with its citation when its
    score reaches ``threshold``, else an abstention (for the extractive generator, whose score is its
    coverage, exactly :func:`rag.answering.extractive.extract_answer` at that threshold)."""
    if not isinstance(threshold, int | float) or threshold != threshold:
        raise ValueError(f"threshold must be a number, got {threshold!r}")
    if best is None or best.score < threshold:
        return Abstention(best_coverage=best.coverage if best is not None else 0.0, threshold=threshold)
    return ExtractiveAnswer(
        text=cite(best.sentence, best.source_number),
        source_number=best.source_number,
        sentence=best.sentence,
        coverage=best.coverage,
    )


def documents_and_question_sets(folder: str, development: str, heldout: Sequence[str]) -> tuple[list, dict]:
    """``rag ask``'s documents of ``folder`` and every question set by name, for the jobs that measure it.

    The development questions come first, then each held-out file under its
    file name, so every table reports the sets alike.
    """
    from rag.corpus.markdown_files import read_markdown_folder
    from rag.formats.files import read_yaml
    from rag.labels import parse_questions

    files = [(file.name, file.text) for file in read_markdown_folder(folder)]
    documents = parse_documents(files, location=f"{folder}/")
    named = [("development", development)] + [(Path(path).stem, path) for path in heldout]
    return documents, {name: parse_questions(read_yaml(path), path) for name, path in named}
