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
the digest a pure function of the files.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

PACKAGE = "rag"


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
    return set(_imported_modules(source, Path(package_root), current))


@functools.lru_cache(maxsize=4096)
def _imported_modules(source: str, package_root: Path, current: str | None) -> frozenset[str]:
    """Parsed once per distinct source: a digest walk over every rule reads the same modules often."""
    tree = ast.parse(source)
    found: set[str] = set()
    for node in _executed_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                below = _below_package(alias.name)
                if below:
                    found.add(below)
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
                found.add(base)
            for alias in node.names:
                candidate = f"{base}.{alias.name}" if base else alias.name
                if _module_file(package_root, candidate) is not None:
                    found.add(candidate)
    return frozenset(module for module in found if _module_file(package_root, module) is not None)


def import_closure(script: Path, package_root: Path) -> list[str]:
    """Every ``rag`` module ``script`` imports, transitively, sorted; ``"__init__"`` included."""
    pending = list(imported_modules(Path(script).read_text(encoding="utf-8"), package_root))
    seen: set[str] = set()
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        path = _module_file(package_root, module)
        # A package's __init__ resolves relative imports against the package itself.
        current = f"{module}.__init__" if path.name == "__init__.py" else module
        pending.extend(imported_modules(path.read_text(encoding="utf-8"), package_root, current))
    # Importing ``rag.a.b`` runs ``rag/a/__init__.py`` first, so a stage package's
    # own ``__init__`` is part of every closure that reaches into it.
    parents = {
        ".".join(module.split(".")[:depth]) for module in seen for depth in range(1, module.count(".") + 1)
    }
    return sorted(seen | {parent for parent in parents if _module_file(package_root, parent)} | {"__init__"})


def closure_files(script: Path, package_root: Path) -> list[Path]:
    """The source files of the closure, in a fixed order."""
    return [
        package_root / "__init__.py" if module == "__init__" else _module_file(package_root, module)
        for module in import_closure(script, package_root)
    ]


def script_digest(script: Path, package_root: Path) -> str:
    """A short digest of a script and its whole ``rag`` import closure.

    Each file enters with its name, so moving code from one module to
    another also changes the digest.
    """
    script, package_root = Path(script), Path(package_root)
    digest = hashlib.sha256()
    digest.update(b"script\0" + script.read_bytes() + b"\0")
    for path in closure_files(script, package_root):
        name = path.relative_to(package_root).as_posix()
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
