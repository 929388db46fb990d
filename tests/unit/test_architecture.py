"""The layout a newcomer relies on: stage packages import only backwards, and the map is current."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from rag.pipeline.code_digest import imported_modules
from tests.extras import needs

PROJECT = Path(__file__).resolve().parents[2]
PACKAGE = PROJECT / "rag"
sys.path.insert(0, str(PROJECT / "docs"))
from architecture import LAYERS, STAGES, import_circles, package_imports  # noqa: E402

SCRIPTS = PROJECT / "workflow" / "scripts"


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


def layer_of(module: str) -> int:
    """The rank of ``module``'s layer in docs/architecture.py's LAYERS (the longest covering name decides)."""
    covering = [
        (len(member), rank)
        for rank, (_, members) in enumerate(LAYERS)
        for member in members
        if module == member or module.startswith(member + ".")
    ]
    assert covering, f"rag.{module} is in no layer of docs/architecture.py's LAYERS"
    return max(covering)[1]


def test_every_import_points_down_the_layers_even_inside_functions():
    """A module imports only from its own layer or a lower one; function-local imports count."""
    pairs = stage_imports()
    upward = [(module, imported) for module, imported in pairs if layer_of(imported) > layer_of(module)]
    assert upward == []
    # The check sees imports hidden inside functions: rag ask's command line imports its index lazily.
    source = (PACKAGE / "ask" / "cli.py").read_text(encoding="utf-8")
    top_level = {node.module for node in ast.parse(source).body if isinstance(node, ast.ImportFrom)}
    assert "rag.ask.index" not in top_level
    assert ("ask.cli", "ask.index") in pairs


def test_no_module_imports_itself_through_others_even_inside_functions():
    """No import circle, at module level or inside functions: each module can be read before its importers."""
    pairs = [(module, imported) for module, imported in stage_imports() if module != imported]
    assert import_circles(pairs) == []


def test_no_package_imports_itself_through_others():
    """No cycle between packages (a subpackage of rag or a top-level module is one node): documents
    sit below both the readers and the labels, so rag.corpus and rag.labels do not import each other."""
    pairs = [(module, imported) for module, imported in stage_imports() if module != imported]
    assert import_circles(package_imports(pairs)) == []
    # The check has something to check: both import the documents, and the corpus imports the labels.
    assert {("corpus", "documents"), ("labels", "documents"), ("corpus", "labels")} <= set(
        package_imports(pairs)
    )
    assert import_circles(package_imports([("corpus.beir", "labels"), ("labels", "corpus.documents")])) == [
        ["corpus", "labels"]
    ]


def test_the_circle_finder_finds_a_circle_through_a_function_level_import():
    assert import_circles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]) == [["a", "b", "c"]]
    assert import_circles([("a", "b"), ("b", "c")]) == []


def test_an_upward_import_inside_a_function_is_caught(tmp_path):
    """The checker itself: a corpus module that imports retrieval in a function body is upward."""
    (tmp_path / "corpus").mkdir()
    (tmp_path / "retrieval").mkdir()
    for name in ("corpus/__init__.py", "retrieval/__init__.py", "retrieval/search.py"):
        (tmp_path / name).write_text("")
    lazy = "def f():\n    from rag.retrieval.search import Ranking\n"
    imported = imported_modules(lazy, tmp_path, "corpus.documents")
    assert imported == {"retrieval.search"}
    assert layer_of("retrieval.search") > layer_of("corpus.documents")


def test_every_module_is_in_a_layer():
    modules = [".".join(path.relative_to(PACKAGE).with_suffix("").parts) for path in PACKAGE.rglob("*.py")]
    assert all(layer_of(module) >= 0 for module in modules)


def test_only_workflow_scripts_import_the_snakemake_helpers():
    """rag.pipeline.jobs is the workflow side (starting and ending jobs); nothing in rag imports it."""
    assert [module for module, imported in stage_imports() if imported == "pipeline.jobs"] == []
    users = [
        path.name
        for path in sorted(SCRIPTS.glob("*.py"))
        if "pipeline.jobs" in imported_modules(path.read_text(encoding="utf-8"), PACKAGE)
    ]
    assert "rank.py" in users and len(users) == len(list(SCRIPTS.glob("*.py")))


def test_scripts_import_only_modules_that_exist():
    """Every rag import of every script resolves to a module or a name it defines (no stale paths)."""
    import importlib

    missing = []
    for path in sorted(SCRIPTS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rag"):
                module = importlib.import_module(node.module)
                missing += [
                    f"{path.name}: {node.module}.{alias.name}"
                    for alias in node.names
                    if not hasattr(module, alias.name)
                ]
    assert missing == []


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


# The map lists the rules of the bundled config's plan, which leaves out what an absent extra runs.
@needs("dense")
@needs("llm")
def test_the_architecture_document_is_current_and_names_every_result():
    result = subprocess.run(
        [sys.executable, str(PROJECT / "docs" / "architecture.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    text = (PROJECT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "| `results/metrics.csv` | rule `evaluate` |" in text
