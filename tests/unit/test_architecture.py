"""The layout a newcomer relies on: stage packages import only backwards, and the map is current."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from rag.code_digest import imported_modules

PROJECT = Path(__file__).resolve().parents[2]
PACKAGE = PROJECT / "rag"
sys.path.insert(0, str(PROJECT / "docs"))
from architecture import STAGES  # noqa: E402


def stage_imports() -> list[tuple[str, str]]:
    """(importing module, imported module) for every rag import, both below the package."""
    pairs = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        for imported in imported_modules(path.read_text(encoding="utf-8"), PACKAGE, module):
            pairs.append((module, imported))
    return pairs


def test_stage_packages_import_only_earlier_stages():
    upward = [
        (module, imported)
        for module, imported in stage_imports()
        if module.split(".")[0] in STAGES
        and imported.split(".")[0] in STAGES
        and STAGES.index(imported.split(".")[0]) > STAGES.index(module.split(".")[0])
    ]
    assert upward == []
    # The check has something to check: later stages do import earlier ones.
    assert ("answering.reader", "retrieval.dense.embedder") in stage_imports()


def test_primitives_do_not_import_the_metrics():
    """Ablations live in rag.evaluation; a retrieval primitive never scores itself."""
    assert [
        pair
        for pair in stage_imports()
        if pair[0].startswith("retrieval") and pair[1].startswith("evaluation")
    ] == []


def test_figures_are_saved_at_the_edge():
    source = (PACKAGE / "plotting.py").read_text(encoding="utf-8")
    calls = {
        node.func.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }
    assert "savefig" not in calls and "subplots" in calls


def test_every_stage_has_a_package_with_a_docstring():
    for stage in STAGES:
        init = PACKAGE / stage / "__init__.py"
        assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), stage


@pytest.mark.parametrize(
    "script", sorted((PROJECT / "workflow" / "scripts").glob("*.py")), ids=lambda path: path.name
)
def test_scripts_are_thin(script):
    assert len(script.read_text(encoding="utf-8").splitlines()) <= 60


def test_the_architecture_document_is_current_and_names_every_result():
    result = subprocess.run(
        [sys.executable, str(PROJECT / "docs" / "architecture.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    text = (PROJECT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "| `results/metrics.csv` | rule `evaluate` |" in text
