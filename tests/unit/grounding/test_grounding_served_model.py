"""The grounding cases with a served model: the arithmetic against hand-computed values, then a stub server.

The pure tests give fixed token log-probabilities per prompt, chosen so the
retrieval prior is exactly (0.7, 0.3) and every mixture can be worked out on
paper. The stub server tests send the same cases through the real client,
its ``/completions`` echo requests and the response cache.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rag.grounding.cases import (
    ANSWER_COLUMNS,
    CASE_COLUMNS,
    MODELS,
    SWAP_COLUMNS,
    GroundingCase,
    RetrievedChunks,
    SwapCase,
    answer_rows,
    case_row,
    swap_rows,
)
from rag.grounding.served_model import (
    MISALIGNED_ECHO,
    NO_LOG_PROBABILITIES,
    TOKENS_DIFFER,
    ServedModel,
    continuation_after,
    run_served_case,
    run_served_swap,
    served_model,
    sources_prefix,
)
from rag.models.client import Endpoint, TextCompletion
from rag.models.response_cache import ResponseCache
from tests.extras import require_extra
from tests.fault_server import WORD_MODEL_STATED, WORD_MODEL_UNSTATED, reply, word_language_model

LOG_10 = math.log(10.0)
CASE = GroundingCase(
    name="pluto-day",
    question_id="pluto-rotation-period",
    prompt="A day on Pluto lasts",
    true_answer="6.387 Earth days.",
    wrong_answer="about 176 Earth days.",
    wrong_from="mercury",
)
# Scores log 0.7 and log 0.3 at temperature 1: the softmax prior is exactly (0.7, 0.3).
CHUNKS = RetrievedChunks(
    chunk_ids=("pluto-1", "mercury-1"),
    texts=("A day on Pluto lasts 6.387 Earth days.", "A day on Mercury lasts 176 Earth days."),
    scores=(math.log(0.7), math.log(0.3)),
)


def _logs(*probabilities: float) -> tuple[float, ...]:
    return tuple(math.log(probability) for probability in probabilities)


def fixed_model(
    table: dict[tuple[str, str], tuple[float, ...] | None], asked: list[str] | None = None
) -> ServedModel:
    """A model that knows only the (prefix, continuation) pairs of ``table``.

    It completes any prompt with "about 2 years", except one that starts with
    sources, which it completes with Pluto's day; ``asked`` records the prompts.
    """

    def complete(prompt: str) -> TextCompletion:
        if asked is not None:
            asked.append(prompt)
        if prompt.startswith("Sources:"):
            return TextCompletion(
                " 6.387 Earth days.", (" 6.387", " Earth", " days."), _logs(0.9, 0.9, 0.9), True
            )
        return TextCompletion(" about 2 years", (" about", " 2", " years"), _logs(0.5, 0.1, 0.2), True)

    return ServedModel(
        name="stub", score=lambda prefix, continuation: table[prefix, continuation], complete=complete
    )


def _table(true_chunks: tuple, wrong_chunks: tuple) -> dict:
    prompt, true, wrong = CASE.prompt, " " + CASE.true_answer, " " + CASE.wrong_answer
    both = sources_prefix(CHUNKS.texts, prompt)
    first, second = (sources_prefix([text], prompt) for text in CHUNKS.texts)
    return {
        (prompt, true): (-1.0, -2.0),
        (prompt, wrong): (-0.5, -0.5),
        (both, true): (-0.1, -0.2),
        (both, wrong): (-3.0, -3.0),
        (first, true): true_chunks[0],
        (second, true): true_chunks[1],
        (first, wrong): wrong_chunks[0],
        (second, wrong): wrong_chunks[1],
    }


def test_memory_sources_and_both_mixtures_match_hand_computed_values() -> None:
    table = _table((_logs(0.5, 0.5), _logs(0.1, 0.2)), (_logs(0.01, 0.01), _logs(0.5, 0.5)))
    result = run_served_case(fixed_model(table), CASE, CHUNKS, temperature=1.0)
    rows = {(row["model"], row["answer_kind"]): row for row in answer_rows(result)}
    # Memory alone prefers the wrong answer (-1 against -3), the sources the true one (-0.3 against -6).
    assert rows["memory", "true"]["log_likelihood"] == pytest.approx(-3.0)
    assert result.log10_odds["memory"] == pytest.approx(-2.0 / LOG_10)
    assert result.log10_odds["sources"] == pytest.approx(5.7 / LOG_10)
    # RAG-Sequence: 0.7 * 0.5 * 0.5 + 0.3 * 0.1 * 0.2;
    # RAG-Token: (0.7 * 0.5 + 0.3 * 0.1) * (0.7 * 0.5 + 0.3 * 0.2).
    assert math.exp(rows["rag_sequence", "true"]["log_likelihood"]) == pytest.approx(0.181)
    assert math.exp(rows["rag_token", "true"]["log_likelihood"]) == pytest.approx(0.38 * 0.41)
    assert math.exp(rows["rag_sequence", "wrong"]["log_likelihood"]) == pytest.approx(0.7e-4 + 0.075)
    assert math.exp(rows["rag_token", "wrong"]["log_likelihood"]) == pytest.approx(0.157**2)
    assert result.log10_odds["rag_token"] == pytest.approx(math.log10(0.38 * 0.41 / 0.157**2))
    assert rows["rag_token", "true"]["geometric_mean"] == pytest.approx(math.sqrt(0.38 * 0.41))
    assert all(row["note"] == "" and row["generator"] == "stub" for row in rows.values())
    assert list(answer_rows(result)[0]) == ANSWER_COLUMNS

    summary = case_row(result)
    assert list(summary) == CASE_COLUMNS
    assert summary["memory_completion"] == "about 2 years"
    assert summary["completion_tokens"] == 3
    assert summary["completion_log_likelihood"] == pytest.approx(math.log(0.01))
    # "2" occurs in neither chunk: the support check flags the answer from memory.
    assert summary["completion_unsupported_numbers"] == "2" and not summary["completion_supported"]
    assert summary["note"] == ""


def test_the_completion_with_sources_reads_the_numbered_chunks_and_is_checked() -> None:
    asked: list[str] = []
    table = _table((_logs(0.5, 0.5), _logs(0.1, 0.2)), (_logs(0.01, 0.01), _logs(0.5, 0.5)))
    result = run_served_case(fixed_model(table, asked), CASE, CHUNKS, temperature=1.0)
    # Memory's prompt alone, then the same prompt after both chunks, numbered as for the scores.
    assert asked == [CASE.prompt, sources_prefix(CHUNKS.texts, CASE.prompt)]
    assert "[1] A day on Pluto lasts 6.387 Earth days.\n[2] A day on Mercury lasts 176" in asked[1]
    assert asked[1].endswith("\n\n" + CASE.prompt)
    summary = case_row(result)
    assert summary["sources_completion"] == "6.387 Earth days."
    assert summary["sources_completion_finished"] is True
    assert summary["sources_completion_tokens"] == 3
    assert summary["sources_completion_support"] == 1.0
    assert summary["sources_completion_unsupported_numbers"] == ""
    assert summary["sources_completion_supported"] is True
    # Memory's columns keep their names and their own verdict.
    assert summary["memory_completion"] == "about 2 years" and not summary["completion_supported"]


def test_different_token_counts_leave_rag_token_out_and_keep_rag_sequence_exact() -> None:
    table = _table((_logs(0.5, 0.5), _logs(0.1, 0.2, 0.5)), (_logs(0.01, 0.01), _logs(0.5, 0.5)))
    result = run_served_case(fixed_model(table), CASE, CHUNKS, temperature=1.0)
    rows = {(row["model"], row["answer_kind"]): row for row in answer_rows(result)}
    assert math.exp(rows["rag_sequence", "true"]["log_likelihood"]) == pytest.approx(0.7 * 0.25 + 0.3 * 0.01)
    assert math.isnan(rows["rag_token", "true"]["log_likelihood"])
    assert rows["rag_token", "true"]["note"] == TOKENS_DIFFER
    assert rows["rag_token", "wrong"]["note"] == "" and math.isnan(result.log10_odds["rag_token"])
    assert case_row(result)["note"] == f"rag_token: {TOKENS_DIFFER}"


def test_a_server_without_log_probabilities_gives_nan_and_says_so() -> None:
    table = dict.fromkeys(_table(((), ()), ((), ())), None)
    result = run_served_case(fixed_model(table), CASE, CHUNKS, temperature=1.0)
    rows = answer_rows(result)
    assert all(math.isnan(row["log_likelihood"]) and row["note"] == NO_LOG_PROBABILITIES for row in rows)
    assert case_row(result)["note"] == f"{', '.join(MODELS)}: {NO_LOG_PROBABILITIES}"


def test_prompts_number_the_sources_and_put_one_space_before_the_answer() -> None:
    assert (
        sources_prefix(["first.", "second."], "Jupiter has")
        == "Sources:\n[1] first.\n[2] second.\n\nJupiter has"
    )
    assert continuation_after("Jupiter has", "95 moons.") == " 95 moons."
    assert continuation_after("Sources:\n[1] x\n\n", "95 moons.") == "95 moons."


# --------------------------------------------------------------------------
# Through the client, against a stub server
# --------------------------------------------------------------------------

STATED, UNSTATED = WORD_MODEL_STATED, WORD_MODEL_UNSTATED


def test_served_case_through_the_client_prefers_what_the_sources_state_and_is_cached(
    server, tmp_path
) -> None:
    server.script[:] = [word_language_model]
    live = Endpoint(base_url=server.url + "/v1", model="stub", identity="stub.gguf")
    # Known to the cache by its identity only: the live endpoint is started at the first miss, once.
    named = Endpoint(base_url="http://127.0.0.1:9/v1", model="stub", identity="stub.gguf")
    starts = []
    cache = ResponseCache(tmp_path)
    model = served_model("stub", named, cache, max_tokens=30, start=lambda: starts.append(1) or live)
    result = run_served_case(model, CASE, CHUNKS, temperature=1.0)
    assert starts == [1]
    # 2 answers x (memory, sources, 2 chunks) and two completions, from memory and with the sources.
    assert len(server.received) == 2 * 4 + 2
    assert all(request.path == "/v1/completions" for request in server.received)
    completions = [json.loads(request.body) for request in server.received]
    prompts = [body["prompt"] for body in completions if not body.get("echo")]
    assert prompts == [CASE.prompt, sources_prefix(CHUNKS.texts, CASE.prompt)]
    assert case_row(result)["sources_completion"] == "about 2 years"
    rows = {(row["model"], row["answer_kind"]): row for row in answer_rows(result)}
    # Closed book no answer word was said before: 3 and 4 tokens at 2 nats each.
    assert rows["memory", "true"]["log_likelihood"] == pytest.approx(3 * UNSTATED)
    assert rows["memory", "wrong"]["log_likelihood"] == pytest.approx(4 * UNSTATED)
    # After both chunks every word of either answer is stated but "about".
    assert rows["sources", "true"]["log_likelihood"] == pytest.approx(3 * STATED)
    assert rows["sources", "wrong"]["log_likelihood"] == pytest.approx(UNSTATED + 3 * STATED)
    # Per chunk: Pluto's chunk states all of the true answer; Mercury's all but "6.387."
    stated_first = np.exp([STATED] * 3)
    stated_second = np.exp([UNSTATED, STATED, STATED])
    sequence = 0.7 * stated_first.prod() + 0.3 * stated_second.prod()
    token = np.prod(0.7 * stated_first + 0.3 * stated_second)
    assert rows["rag_sequence", "true"]["log_likelihood"] == pytest.approx(math.log(sequence))
    assert rows["rag_token", "true"]["log_likelihood"] == pytest.approx(math.log(token))
    assert result.log10_odds["rag_sequence"] > result.log10_odds["memory"] > 0.0
    assert case_row(result)["completion_log_likelihood"] == pytest.approx(-1.5)
    # The cache is keyed by the stable name, never the ephemeral port.
    port = server.url.rsplit(":", 1)[1]
    assert all(port not in path.read_text() for path in tmp_path.glob("*.json"))

    server.script[:] = [reply(b"{}", status=500)]
    before = len(server.received)
    model = served_model("stub", named, cache, max_tokens=30, start=lambda: pytest.fail("nothing to ask"))
    again = run_served_case(model, CASE, CHUNKS, temperature=1.0)
    assert len(server.received) == before
    assert answer_rows(again) == answer_rows(result) and case_row(again) == case_row(result)


def test_served_swap_scores_both_sentences_after_each_chunk(server, tmp_path) -> None:
    server.script[:] = [word_language_model]
    endpoint = Endpoint(base_url=server.url + "/v1", model="stub")
    swap = SwapCase(
        "saturn-vs-jupiter-moons", "Saturn has 274 known moons and Jupiter has 95.", ("274", "95")
    )
    chunks = RetrievedChunks(
        ("saturn", "jupiter"),
        ("Saturn has 274 known moons.", "Jupiter has 95 confirmed moons."),
        CHUNKS.scores,
    )
    result = run_served_swap(served_model("stub", endpoint, None, 30), swap, chunks, temperature=1.0)
    rows = {(row["candidate"], row["model"]): row for row in swap_rows(result)}
    assert all(list(row) == SWAP_COLUMNS and row["generator"] == "stub" for row in rows.values())
    assert len(server.received) == 2 * 2
    prior = np.array([0.7, 0.3])
    for candidate, sentence in (("correct", swap.correct), ("swapped", swap.swapped)):
        table = np.exp([_stub_costs(f"Sources:\n[1] {text}\n\n", sentence) for text in chunks.texts])
        sequence, token = math.log(prior @ table.prod(axis=1)), float(np.log(prior @ table).sum())
        assert rows[candidate, "rag_sequence"]["log_likelihood"] == pytest.approx(sequence)
        assert rows[candidate, "rag_token"]["log_likelihood"] == pytest.approx(token)
    # Each number is stated by its own chunk: RAG-Token rates the correct sentence above RAG-Sequence.
    assert rows["correct", "rag_token"]["log10_ratio_to_rag_sequence"] > 0.0


def _stub_costs(prefix: str, continuation: str) -> list[float]:
    """The stub's cost of each word of ``continuation``, counted independently of the server."""
    said = set(prefix.split())
    costs = []
    for word in continuation.split():
        costs.append(STATED if word in said else UNSTATED)
        said.add(word)
    return costs


def test_a_bundled_generator_starts_its_server_with_logits_all_only_on_a_cache_miss(
    server, tmp_path, monkeypatch
) -> None:
    import contextlib

    from rag.answering import llm_answers
    from rag.grounding.served_model import generator_model
    from rag.kinds import GENERATOR_KINDS, defaults
    from rag.models import local_server

    server.script[:] = [word_language_model]
    started = []

    @contextlib.contextmanager
    def running(log, logprobs=False, alias=None):
        started.append((str(log), logprobs, alias))
        yield server.url + "/v1"

    monkeypatch.setattr(local_server, "running", running)
    monkeypatch.setattr(llm_answers, "endpoint_identity", lambda generator: "bundled:model.gguf")
    generator = llm_answers.generator_from_entry("smollm2", defaults(GENERATOR_KINDS)["llm"])
    assert generator.bundled
    cache = ResponseCache(tmp_path / "cache")
    for _ in range(2):
        with contextlib.ExitStack() as stack:
            model = generator_model(generator, cache, 30, tmp_path / "server.log", stack)
            result = run_served_case(model, CASE, CHUNKS, temperature=1.0)
    # Started once, for the first run's first miss, with the logits of every prompt token kept.
    assert started == [(str(tmp_path / "server.log"), True, "SmolLM2-135M-Instruct")]
    assert case_row(result)["generator"] == "smollm2"
    # The bundled server's echoed log-probabilities are misaligned: only the two completions are asked.
    assert len(server.received) == 2
    assert all(request.body and b'"echo"' not in request.body for request in server.received)
    assert {row["note"] for row in answer_rows(result)} == {MISALIGNED_ECHO}
    assert case_row(result)["memory_completion"] == "about 2 years"
    assert b"[1] A day on Pluto lasts 6.387 Earth days." in server.received[1].body
    assert case_row(result)["sources_completion"] == "about 2 years"
    assert all("bundled:model.gguf" in path.read_text() for path in (tmp_path / "cache").glob("*.json"))


# --------------------------------------------------------------------------
# The real bundled server (the llm extra), against the model run in-process
# --------------------------------------------------------------------------


def _bundled_or_skip():
    from rag.models import local_server

    require_extra("llm")
    return local_server


def _in_process_logprobs(model_path: str, text: str, start: int) -> tuple[list[float], list[float]]:
    """From llama.cpp's logits, computed here: each token of ``text`` from character ``start`` on,

    its log-probability given the tokens before it, and the value the server
    reports instead (the same token under the distribution after it).
    """
    from llama_cpp import Llama

    model = Llama(model_path=model_path, n_ctx=512, n_threads=1, logits_all=True, verbose=False)
    tokens = model.tokenize(text.encode("utf-8"), special=True)
    model.eval(tokens)
    scores = np.asarray(model.scores[: len(tokens)], dtype=float)
    peak = scores.max(axis=1, keepdims=True)
    log_softmax = scores - peak - np.log(np.exp(scores - peak).sum(axis=1, keepdims=True))
    right, reported, end = [], [], 0
    for position, token in enumerate(tokens):
        end += len(model.detokenize([token], prev_tokens=tokens[:position]))
        if end > len(text[:start].encode("utf-8")) and position > 0:
            right.append(float(log_softmax[position - 1, token]))
            reported.append(float(log_softmax[position, token]))
    return right, reported


@pytest.mark.pipeline
def test_the_bundled_server_misaligns_echoed_log_probabilities_but_not_completions(
    tmp_path, monkeypatch
) -> None:
    """Why the bundled model's grounding rows carry no scores; fails once llama-cpp-python is fixed."""
    local_server = _bundled_or_skip()
    from rag.models.client import Sampling, complete_text, continuation_logprobs

    for variable in ("http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    log = tmp_path / "server.log"
    prefix, continuation = "A day on Pluto lasts", " 6.387 Earth days."
    with local_server.running(log, logprobs=True) as base_url:
        endpoint = Endpoint(base_url, local_server.DEFAULT_MODEL, identity=local_server.identity())
        served = continuation_logprobs(endpoint, prefix, continuation, None)
        completion = complete_text(endpoint, prefix, Sampling(max_tokens=8), None)
    model_path = str(local_server.model_path())
    right, reported = _in_process_logprobs(model_path, prefix + continuation, len(prefix))
    assert served == pytest.approx(reported, abs=0.05)
    assert max(abs(a - b) for a, b in zip(served, right, strict=True)) > 1.0
    # A completion's log-probabilities are those of its tokens given what precedes them: the
    # first token's is compared (the completed text may be tokenised differently further on).
    expected, _ = _in_process_logprobs(model_path, prefix + completion.text, len(prefix))
    assert completion.logprobs and completion.logprobs[0] == pytest.approx(expected[0], abs=0.05)
    assert "/v1/completions" in log.read_text()
