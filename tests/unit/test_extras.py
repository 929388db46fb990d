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


def test_a_missing_system_package_skips_naming_it_and_its_command(monkeypatch):
    import pytest

    from tests import extras

    monkeypatch.setitem(
        extras.SYSTEM_PACKAGES, "nothing", (("no-such-program-x1",), "apt-get install nothing")
    )
    monkeypatch.delenv(extras.REQUIRE_SYSTEM_PACKAGES, raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        extras.require_system_package("nothing")
    assert "nothing" in str(skipped.value) and "apt-get install nothing" in str(skipped.value)
    assert "\n" not in str(skipped.value)
    monkeypatch.setenv(extras.REQUIRE_SYSTEM_PACKAGES, "1")
    with pytest.raises(pytest.fail.Exception, match="apt-get install nothing"):
        extras.require_system_package("nothing")


def test_a_present_system_package_neither_skips_nor_fails(monkeypatch):
    from tests import extras

    monkeypatch.setitem(extras.SYSTEM_PACKAGES, "shell", (("sh",), "apt-get install dash"))
    monkeypatch.setenv(extras.REQUIRE_SYSTEM_PACKAGES, "1")
    extras.require_system_package("shell")


def test_every_system_package_test_goes_through_tests_extras():
    """No test asserts a program is installed on its own (it would fail, not skip, on a fresh machine)."""
    own = [
        f"{path.relative_to(PROJECT)}"
        for path in (PROJECT / "tests").rglob("*.py")
        if re.search(r"assert shutil\.which\(", path.read_text(encoding="utf-8"))
    ]
    assert own == []
