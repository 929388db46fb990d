"""No function of the rag package takes Snakemake's job object (issue 28).

The workflow scripts read their paths, wildcards and parameters from their
``snakemake`` object and hand plain values to rag; a function taking the
object itself would tie rag to Snakemake. The scan is by name: no parameter
of any function or lambda in rag is called ``snakemake``, and none is
called ``job`` and then used like a job (``job.input``, ``job.output``,
``job.params``, ``job.wildcards``, ``job.log``).
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "rag"
JOB_ATTRIBUTES = {"input", "output", "params", "wildcards", "log", "threads", "resources"}


def parameters(function):
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [argument for argument in (arguments.vararg, arguments.kwarg) if argument is not None]
    return [argument.arg for argument in every]


def used_as_a_job(function, name):
    return any(
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == name
        and node.attr in JOB_ATTRIBUTES
        for node in ast.walk(function)
    )


def snakemake_parameters():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            name = getattr(node, "name", "<lambda>")
            for parameter in parameters(node):
                if parameter == "snakemake" or (parameter == "job" and used_as_a_job(node, parameter)):
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {name}({parameter})")
    return found


def test_no_rag_function_takes_the_snakemake_object():
    assert snakemake_parameters() == []


def test_the_scan_finds_a_function_that_would(tmp_path, monkeypatch):
    """The scan itself: a function taking the object, by either name, is found."""
    package = tmp_path / "rag"
    package.mkdir()
    (package / "helpers.py").write_text(
        "def a(snakemake):\n    return snakemake\n\n"
        "def b(job):\n    return job.output.ranking\n\n"
        "def c(job):\n    return job + 1\n",
        encoding="utf-8",
    )
    monkeypatch.setitem(globals(), "PACKAGE", package)
    assert [line.split()[-1] for line in snakemake_parameters()] == ["a(snakemake)", "b(job)"]
