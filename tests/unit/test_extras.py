"""The skip policy of tests/extras.py holds: one mechanism, and the modules it checks are the code's."""

from __future__ import annotations

import re
import tomllib

from rag.models import local_server
from rag.retrieval.dense import sentence_embeddings
from tests.extras import EXTRA_MODULES
from tests.workdir import PROJECT

# A skip that names an extra without going through tests/extras.py.
OWN_SKIP = re.compile(r"importorskip\(|pytest\.skip\([^)]*extra")


def test_the_extras_are_the_ones_pyproject_declares():
    declared = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRA_MODULES) <= set(declared)


def test_the_dense_and_llm_modules_are_the_ones_the_code_checks():
    """A test skips exactly when the pipeline would leave the same kind out."""
    assert EXTRA_MODULES["dense"] == sentence_embeddings.required_packages("all-MiniLM-L6-v2")
    assert EXTRA_MODULES["llm"] == tuple(local_server.PACKAGES)


def test_every_skip_for_an_extra_goes_through_tests_extras():
    own = [
        f"{path.relative_to(PROJECT)}:{number}"
        for path in sorted((PROJECT / "tests").rglob("*.py"))
        if path.name != "extras.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OWN_SKIP.search(line)
    ]
    assert own == []
