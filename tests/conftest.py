"""Fixtures shared by the test files, and the ``pipeline`` marker.

``tests/unit/`` holds the tests of ``rag``'s functions; ``tests/pipeline/``
the tests that build the workflow end to end (and the SLURM run).
``.venv/bin/python -m pytest -m "not pipeline" -n 2`` is the everyday loop, under a
minute: it leaves out every slow test. A test is marked ``pipeline`` here, at
collection, when

* it lives in ``tests/pipeline/`` or its file is named ``test_pipeline_*.py``, or
* it uses the ``build_pipeline`` fixture, or
* the test function or one of its fixtures reaches a Snakemake runner of
  ``tests/workdir.py`` (``snakemake``, ``planned_jobs``, ``planned_outputs``,
  ``build``), directly or through functions of its own module,

so tests added later to those files are marked without anyone remembering to.
A unit file may keep its few Snakemake tests beside the units they exercise.
An explicit ``@pytest.mark.pipeline`` marks the other slow tests: those that
run the ``rag`` command in many subprocesses, load a heavy reference
implementation (sentence-transformers on torch, ranx's compiled kernels) or
take over ten seconds on their own.
As a safety net, ``tests.workdir.snakemake`` fails inside a test that is not
marked, naming the test.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import workdir
from tests.fault_server import FaultServer

PIPELINE_FOLDER = Path(__file__).resolve().parent / "pipeline"

SNAKEMAKE_RUNNERS = frozenset(
    {workdir.snakemake, workdir.planned_jobs, workdir.planned_outputs, workdir.build}
)

RUNNER_NAMES = frozenset(runner.__name__ for runner in SNAKEMAKE_RUNNERS)


def _code_names(code: types.CodeType) -> set[str]:
    """Global names a function (with its lambdas, comprehensions and inner functions) refers to."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _code_names(constant)
    return names


def _is_runner(value: object) -> bool:
    # Identity, not equality: module globals may be arrays, mocks or other odd objects.
    return any(value is runner for runner in SNAKEMAKE_RUNNERS)


def _reaches_snakemake(function: object, seen: set[int]) -> bool:
    if _is_runner(function):
        return True
    if not inspect.isfunction(function) or id(function) in seen:
        return False
    seen.add(id(function))
    module_globals = function.__globals__
    names = _code_names(function.__code__)
    for name in names:
        target = module_globals.get(name)
        if _is_runner(target):
            return True
        # ``workdir.snakemake(...)`` after ``from tests import workdir``.
        if target is workdir and names & RUNNER_NAMES:
            return True
        # Follow the helpers of the same test module (not library code).
        if inspect.isfunction(target) and target.__module__ == function.__module__:
            if _reaches_snakemake(target, seen):
                return True
    return False


def _drives_snakemake(item: pytest.Item) -> bool:
    if PIPELINE_FOLDER in item.path.parents or item.path.name.startswith("test_pipeline_"):
        return True
    if "build_pipeline" in getattr(item, "fixturenames", ()):
        return True
    seen: set[int] = set()
    functions = [getattr(item, "function", None)]
    fixture_info = getattr(item, "_fixtureinfo", None)
    if fixture_info is not None:
        for definitions in fixture_info.name2fixturedefs.values():
            functions += [definition.func for definition in definitions]
    return any(function is not None and _reaches_snakemake(function, seen) for function in functions)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("pipeline") is None and _drives_snakemake(item):
            item.add_marker(pytest.mark.pipeline)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    workdir.unmarked_test = None if item.get_closest_marker("pipeline") else item.nodeid
    try:
        return (yield)
    finally:
        workdir.unmarked_test = None


@pytest.fixture(scope="session")
def build_pipeline(tmp_path_factory: pytest.TempPathFactory):
    """Build the tiny project once per caller: ``build_pipeline(name, prepare=..., targets=...)``.

    Returns :class:`tests.workdir.Build` (project copy, workdir, Snakemake's output);
    module-scoped ``built`` fixtures call it so each file builds once.
    """

    def build(name: str, **options) -> workdir.Build:
        return workdir.build(tmp_path_factory.mktemp(name), **options)

    return build


@pytest.fixture(scope="module")
def single_threaded_blas() -> Iterator[None]:
    """One BLAS thread for a module's tests.

    On a loaded two-core machine OpenBLAS threads spin against each other and a
    300 x 800 SVD can take seconds instead of milliseconds. Use it with
    ``pytestmark = pytest.mark.usefixtures("single_threaded_blas")``.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


# Every variable through which urllib or a client could route a request to a proxy.
PROXY_VARIABLES = (
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    """A scripted :class:`tests.fault_server.FaultServer` on 127.0.0.1, reached with no proxy in between."""
    for variable in PROXY_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    running = FaultServer()
    yield running
    running.close()
