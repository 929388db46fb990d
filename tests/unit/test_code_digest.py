"""Code digests follow the imports: editing a module re-runs exactly the rules whose scripts reach it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from rag.pipeline.code_digest import PackageFiles, import_closure, imported_modules, script_digest
from tests.workdir import copy_project, make_workdir, planned_jobs, read_config, snakemake, write_config

PROJECT = Path(__file__).resolve().parents[2]
RULES = PROJECT / "workflow" / "rules"
SCRIPTS = PROJECT / "workflow" / "scripts"
PACKAGE = PROJECT / "rag"


def rule_scripts() -> dict[str, tuple[str, str | None]]:
    """rule name -> (its script, the script its code digest names), read from the .smk files."""
    found = {}
    for path in sorted(RULES.glob("*.smk")):
        blocks = re.split(r"^\s*rule (\w+):", path.read_text(), flags=re.MULTILINE)
        for name, body in zip(blocks[1::2], blocks[2::2], strict=True):
            script = re.search(r'script:\s*\n\s*"\.\./scripts/(\w+\.py)"', body)
            if script is None:
                continue
            digest = re.search(r'code=script_digest\("(\w+\.py)"\)', body)
            found[name] = (script.group(1), digest.group(1) if digest else None)
    return found


RULE_SCRIPTS = rule_scripts()


def test_every_rule_with_a_script_digests_that_script():
    assert len(RULE_SCRIPTS) > 30
    wrong = {rule: pair for rule, pair in RULE_SCRIPTS.items() if pair[0] != pair[1]}
    assert wrong == {}
    assert "rag_digest" not in "".join(path.read_text() for path in RULES.glob("*.smk"))


@pytest.mark.parametrize(
    ("script", "module"),
    [
        # The drifts the hand-kept lists had (issue 14), now found from the imports.
        ("funnel_ablation.py", "retrieval.funnel"),
        ("parse_wikipedia.py", "corpus.sources"),
        ("lock_wikipedia.py", "corpus.sources"),
        ("evidence_cuts.py", "labels"),
        ("route.py", "provenance"),
        ("funnel.py", "retrieval.filters"),
        # Reached only through another module: retrievers imports lsa, lsa imports tfidf.
        ("rank.py", "retrieval.tfidf"),
    ],
)
def test_closures_hold_the_modules_the_hand_kept_lists_missed(script, module):
    assert module in import_closure(SCRIPTS / script, PACKAGE)


def write_package(root: Path, modules: dict[str, str]) -> Path:
    package = root / "rag"
    for name, source in modules.items():
        path = package / f"{name.replace('.', '/')}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return package


def test_every_import_form_is_followed_and_type_checking_imports_are_not(tmp_path):
    package = write_package(
        tmp_path,
        {
            "__init__": "VERSION = 1\n",
            "a": "from rag.b import thing\n",
            "b": "import numpy\nfrom . import c\nthing = 1\n",
            "c": "def lazy():\n    import rag.d\n",
            "d": "from rag import e, VERSION\n",
            "e": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rag import hidden\n",
            "hidden": "",
            "alone": "",
            "sub.__init__": "from .inner import x\n",
            "sub.inner": "from ..alone import y\nx = 1\n",
        },
    )
    script = tmp_path / "script.py"
    script.write_text("import json\nfrom rag.a import thing\n")
    assert import_closure(script, package) == ["__init__", "a", "b", "c", "d", "e"]
    script.write_text("from rag import sub\n")
    assert import_closure(script, package) == ["__init__", "alone", "sub", "sub.inner"]
    assert imported_modules("from rag import VERSION\nimport os\n", package) == set()


def test_a_digest_changes_with_every_file_of_the_closure_and_no_other(tmp_path):
    package = write_package(tmp_path, {"__init__": "", "a": "from rag import b\n", "b": "", "other": ""})
    script = tmp_path / "script.py"
    script.write_text("from rag import a\n")
    before = script_digest(script, package)
    for changed in (script, package / "a.py", package / "b.py", package / "__init__.py"):
        original = changed.read_text()
        changed.write_text(original + "# edit\n")
        assert script_digest(script, package) != before, changed.name
        changed.write_text(original)
    (package / "other.py").write_text("# edit\n")
    assert script_digest(script, package) == before


@pytest.mark.pipeline  # slow (20 s): it re-digests every rule once per module
def test_editing_any_module_changes_exactly_the_digests_of_the_rules_that_reach_it(tmp_path):
    """Walk every rule and every rag module: the digest moves iff the module is in the script's closure."""
    package = tmp_path / "rag"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    scripts = sorted({script for script, _ in RULE_SCRIPTS.values()})
    closures = {script: set(import_closure(SCRIPTS / script, package)) for script in scripts}
    before = {script: script_digest(SCRIPTS / script, package) for script in scripts}
    modules = sorted(path.relative_to(package).with_suffix("").as_posix() for path in package.rglob("*.py"))
    for module in modules:
        path = package / f"{module}.py"
        original = path.read_bytes()
        path.write_bytes(original + b"\n# an edit\n")
        changed = {script for script in scripts if script_digest(SCRIPTS / script, package) != before[script]}
        path.write_bytes(original)
        name = module.replace("/", ".").removesuffix(".__init__")
        assert changed == {script for script in scripts if name in closures[script]}, module
    # Some modules are reached by no rule (the command line's helpers): closures are not "everything".
    assert any(not any(module in closure for closure in closures.values()) for module in modules)


# --------------------------------------------------------------------------- with Snakemake itself

FUNNEL = {"kind": "funnel", "first": "bm25", "rerank": None, "candidates": 5}


def outputs_by_rule(workdir: Path, snakefile: Path) -> dict[str, str]:
    """output file -> the rule that makes it, from a dry run of the whole DAG."""
    result = snakemake(workdir, "-n", "--forceall", "--cores", "1", snakefile=snakefile)
    found = {}
    for block in re.split(r"^(?:local)?rule ", result.stdout + result.stderr, flags=re.MULTILINE)[1:]:
        rule = block.split(":", 1)[0]
        outputs = re.search(r"^\s+output: (.*)$", block, flags=re.MULTILINE)
        if outputs:
            for output in outputs.group(1).split(", "):
                found[output.strip()] = rule
    return found


@pytest.fixture(scope="module")
def built_with_funnel(tmp_path_factory):
    root = tmp_path_factory.mktemp("digest")
    project = copy_project(root / "project")
    workdir = make_workdir(root / "work")
    config = read_config(workdir)
    config["retrievers"]["funnel_bm25_5"] = FUNNEL
    config["funnel_ablation"] = {"ks": [1, 5]}
    write_config(workdir, config)
    snakefile = project / "Snakefile"
    snakemake(workdir, "--cores", "2", snakefile=snakefile)
    assert planned_jobs(workdir, snakefile) == {}
    return project, workdir, snakefile


def edited(project: Path, workdir: Path, snakefile: Path, module: str) -> dict[str, int]:
    """Append a comment to a rag module: the dry run's job counts per rule."""
    path = project / "rag" / module
    original = path.read_text()
    try:
        path.write_text(original + "\n# a comment added by hand\n")
        return planned_jobs(workdir, snakefile)
    finally:
        path.write_text(original)


# A dry run also schedules every rule downstream of a changed one (its inputs
# will be updated), so these checks show what a user sees; which rules' own
# digests change is checked module by module without Snakemake above.


def test_editing_funnel_schedules_funnel_ablation(built_with_funnel):
    jobs = edited(*built_with_funnel, "retrieval/funnel.py")
    assert "funnel_ablation" in jobs and "funnel" in jobs
    assert "chunk" not in jobs and "rank" not in jobs


def test_editing_filters_schedules_funnel(built_with_funnel):
    jobs = edited(*built_with_funnel, "retrieval/filters.py")
    assert "funnel" in jobs
    assert "rank" not in jobs and "chunk" not in jobs


def test_editing_text_schedules_exactly_the_rules_whose_scripts_reach_it(built_with_funnel):
    project, workdir, snakefile = built_with_funnel
    in_dag = set(outputs_by_rule(workdir, snakefile).values())
    expected = {
        rule
        for rule in in_dag
        if rule in RULE_SCRIPTS and "text" in import_closure(SCRIPTS / RULE_SCRIPTS[rule][0], PACKAGE)
    }
    assert expected
    assert set(edited(project, workdir, snakefile, "text.py")) - {"all"} == expected
    closures = [set(import_closure(SCRIPTS / script, PACKAGE)) for script, _ in RULE_SCRIPTS.values()]
    unreached = next(
        path.name for path in sorted(PACKAGE.glob("*.py")) if not any(path.stem in c for c in closures)
    )
    assert edited(project, workdir, snakefile, unreached) == {}


def small_package(root: Path, a_source: str) -> tuple[Path, Path]:
    package = root / "rag"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(a_source)
    (package / "b.py").write_text("X = 1\n")
    (package / "c.py").write_text("Y = 2\n")
    script = root / "job.py"
    script.write_text("from rag import a\n")
    return package, script


def test_the_import_cache_is_keyed_by_content_so_an_edit_is_never_stale(tmp_path):
    import json

    from rag.pipeline import code_digest

    package, script = small_package(tmp_path, "from rag import b\n")
    cache = tmp_path / "cache" / "imports.json"
    code_digest.use_import_cache(cache)
    assert import_closure(script, package) == ["__init__", "a", "b"]
    code_digest.save_import_cache(cache)
    assert json.loads(cache.read_text())  # written whole, with this run's entries

    # A later run reads the cache; the edited module has a new key and is parsed again.
    (package / "a.py").write_text("from rag import c\n")
    code_digest.use_import_cache(cache)
    assert import_closure(script, package) == ["__init__", "a", "c"]


def test_an_unreadable_import_cache_is_an_empty_one(tmp_path):
    from rag.pipeline import code_digest

    package, script = small_package(tmp_path, "import rag.b\n")
    cache = tmp_path / "imports.json"
    cache.write_text("{not json")
    code_digest.use_import_cache(cache)
    assert import_closure(script, package) == ["__init__", "a", "b"]


def test_one_package_walk_for_every_rule_gives_the_same_digests():
    files = PackageFiles(PACKAGE)
    scripts = sorted(SCRIPTS.glob("*.py"))
    assert [script_digest(script, PACKAGE, files) for script in scripts] == [
        script_digest(script, PACKAGE) for script in scripts
    ]


@pytest.mark.parametrize(
    "table", sorted(PROJECT.glob("results/**/provenance.csv")), ids=lambda path: path.parent.name
)
def test_the_committed_provenance_names_the_code_of_this_checkout(table):
    """Every code digest a committed provenance table names is one this checkout's scripts give.

    A code change committed after the results were regenerated leaves the
    tables describing old code; the README's clean-tree check then fails
    only at the end of the pipeline tests. This finds it in a second.
    """
    import pandas as pd

    files = PackageFiles(PACKAGE)  # one walk of the package for every script
    current = {script_digest(path, PACKAGE, files) for path in SCRIPTS.glob("*.py")}
    named = set()
    for cell in pd.read_csv(table, dtype=str)["code_digest"].dropna():
        named.update(cell.split("+"))
    assert named, f"{table.name} names no code digest"
    assert named <= current, f"{table} names code this checkout does not have: {sorted(named - current)}"
