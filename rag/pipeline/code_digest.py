"""Code digests that follow the imports: what a pipeline rule's result depends on.

A rule must re-run when any code that shapes its output changes: its script
and every ``rag`` module the script imports, directly or through other
modules. A hand-kept list of modules drifts as soon as someone adds an
import, and the tables then silently describe old code. Here the list is
read from the sources themselves with ``ast``, so it cannot drift: every
``import rag.x``, ``from rag.x import y``, ``from rag import x`` and relative
import, at module level or inside a function (the lazy imports of short
jobs), counts; only imports under ``if TYPE_CHECKING:`` do not, because
they never run. ``rag/__init__.py`` is always part of the closure, because
Python runs it before any submodule.

Nothing is imported or executed: reading the sources is enough, and it keeps
the digest a pure function of the files. Parsing the package's modules is
most of a no-op run's digest work, so the imports found in each source are
kept in a small file keyed by the source's own SHA-256 (``use_import_cache``):
an edited module has a new key and is parsed again, so the cache can be stale
only in size, never in content.
"""

from __future__ import annotations

import ast
import atexit
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

PACKAGE = "rag"

# Source digest + importing module -> the dotted names its import statements
# name (before checking which are module files). Filled from the cache file,
# if one is in use, and by every parse.
_KNOWN_IMPORTS: dict[str, list[str]] = {}
_USED_KEYS: set[str] = set()


def _module_file(package_root: Path, module: str) -> Path | None:
    """The source file of ``rag.<module>`` (a dotted name below the package), or None."""
    parts = module.split(".")
    as_file = package_root.joinpath(*parts).with_suffix(".py")
    if as_file.is_file():
        return as_file
    as_package = package_root.joinpath(*parts, "__init__.py")
    return as_package if as_package.is_file() else None


def _below_package(name: str) -> str | None:
    """``rag.a.b`` -> ``a.b``; ``rag`` -> ``""``; anything else -> None."""
    if name == PACKAGE:
        return ""
    if name.startswith(PACKAGE + "."):
        return name[len(PACKAGE) + 1 :]
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _executed_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except the bodies of ``if TYPE_CHECKING:`` blocks, which never run."""
    nodes, pending = [], [tree]
    while pending:
        node = pending.pop()
        nodes.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return nodes


def imported_modules(source: str, package_root: Path, current: str | None = None) -> set[str]:
    """The ``rag`` modules (names below the package, e.g. ``"search"``) that ``source`` imports.

    ``current`` is the importing module's own name below the package (None
    for a script outside it), needed to resolve relative imports. ``from rag
    import x`` counts ``x`` only when it is a module file; otherwise it names
    an attribute of ``rag/__init__.py``, which is always in the closure anyway.
    """
    package_root = Path(package_root)
    return _resolve(_known_imports(source, current), lambda module: _module_file(package_root, module))


def _known_imports(source: str, current: str | None) -> list[str]:
    """The names ``source`` imports (``_named_imports``), parsed once per distinct source and kept."""
    key = hashlib.sha256(f"{current}\0{source}".encode()).hexdigest()
    _USED_KEYS.add(key)
    if key not in _KNOWN_IMPORTS:
        _KNOWN_IMPORTS[key] = sorted(_named_imports(source, current))
    return _KNOWN_IMPORTS[key]


def _resolve(names: list[str], module_file: Callable[[str], Path | None]) -> set[str]:
    """The modules among the imported names: ``base:name`` is a module only if its file exists."""
    found: set[str] = set()
    for name in names:
        base, _, attribute = name.partition(":")
        if base:
            found.add(base)
        if attribute:
            candidate = f"{base}.{attribute}" if base else attribute
            if module_file(candidate) is not None:
                found.add(candidate)
    return {module for module in found if module_file(module) is not None}


def _named_imports(source: str, current: str | None) -> set[str]:
    """What the import statements of ``source`` name below the package, as ``base`` or ``base:name``.

    ``from rag.a import b`` gives ``a`` and ``a:b`` (``b`` may be a module or
    an attribute: which one depends on the files, so it is decided later).
    """
    names: set[str] = set()
    for node in _executed_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                below = _below_package(alias.name)
                if below:
                    names.add(below)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if current is None:
                    continue
                anchor = current.split(".")[: -node.level]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = _below_package(node.module or "")
                if base is None:
                    continue
            if base:
                names.add(base)
            names.update(f"{base}:{alias.name}" for alias in node.names)
    return names


def use_import_cache(path: str | os.PathLike) -> None:
    """Read the imports found by earlier runs from ``path``, and write this run's back at exit.

    Only the entries this run used are written, so the file stays the size
    of the package. A missing or unreadable file is simply an empty cache;
    the file is replaced whole (written beside, then renamed), so a run cut
    short never leaves half of it.
    """
    path = Path(path)
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    for key, value in known.items():
        if isinstance(value, list) and all(isinstance(name, str) for name in value):
            _KNOWN_IMPORTS.setdefault(key, value)
    atexit.register(save_import_cache, path, known)


def save_import_cache(path: str | os.PathLike, before: Mapping | None = None) -> None:
    """Write the imports this process used to ``path`` (nothing when they equal ``before``)."""
    path = Path(path)
    used = {key: _KNOWN_IMPORTS[key] for key in sorted(_USED_KEYS) if key in _KNOWN_IMPORTS}
    if not used or used == before:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(used, sort_keys=True), encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        pass  # a cache that cannot be written only costs the next run its parse


class PackageFiles:
    """The package's files as one run of the workflow sees them: each looked up and read once.

    A digest walk over every rule visits the same modules dozens of times;
    the workflow keeps one of these for its whole start-up, while files do not
    change. Calls without one look at the disk afresh.
    """

    def __init__(self, package_root: str | os.PathLike) -> None:
        self.root = Path(package_root)
        self._paths: dict[str, Path | None] = {}
        self._data: dict[Path, bytes] = {}
        self._imports: dict[str, set[str]] = {}

    def module_file(self, module: str) -> Path | None:
        if module not in self._paths:
            self._paths[module] = _module_file(self.root, module)
        return self._paths[module]

    def data(self, path: Path) -> bytes:
        if path not in self._data:
            self._data[path] = Path(path).read_bytes()
        return self._data[path]

    def text(self, path: Path) -> str:
        return self.data(path).decode("utf-8")

    def module_imports(self, module: str) -> set[str]:
        """The ``rag`` modules that module ``module`` (a name below the package) imports."""
        if module not in self._imports:
            path = self.module_file(module)
            # A package's __init__ resolves relative imports against the package itself.
            current = f"{module}.__init__" if path.name == "__init__.py" else module
            self._imports[module] = _resolve(_known_imports(self.text(path), current), self.module_file)
        return self._imports[module]


def import_closure(script: Path, package_root: Path, files: PackageFiles | None = None) -> list[str]:
    """Every ``rag`` module ``script`` imports, transitively, sorted; ``"__init__"`` included."""
    files = files or PackageFiles(package_root)
    pending = list(_resolve(_known_imports(files.text(Path(script)), None), files.module_file))
    seen: set[str] = set()
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        pending.extend(files.module_imports(module))
    # Importing ``rag.a.b`` runs ``rag/a/__init__.py`` first, so a stage package's
    # own ``__init__`` is part of every closure that reaches into it.
    parents = {
        ".".join(module.split(".")[:depth]) for module in seen for depth in range(1, module.count(".") + 1)
    }
    return sorted(seen | {parent for parent in parents if files.module_file(parent)} | {"__init__"})


def closure_files(script: Path, package_root: Path, files: PackageFiles | None = None) -> list[Path]:
    """The source files of the closure, in a fixed order."""
    files = files or PackageFiles(package_root)
    return [
        files.root / "__init__.py" if module == "__init__" else files.module_file(module)
        for module in import_closure(script, package_root, files)
    ]


def script_digest(script: Path, package_root: Path, files: PackageFiles | None = None) -> str:
    """A short digest of a script and its whole ``rag`` import closure.

    Each file enters with its name, so moving code from one module to
    another also changes the digest.
    """
    script, package_root = Path(script), Path(package_root)
    files = files or PackageFiles(package_root)
    digest = hashlib.sha256()
    digest.update(b"script\0" + files.data(script) + b"\0")
    for path in closure_files(script, package_root, files):
        name = path.relative_to(package_root).as_posix()
        digest.update(name.encode() + b"\0" + files.data(path) + b"\0")
    return digest.hexdigest()[:16]
