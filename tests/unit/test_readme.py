"""The README as a script: its shell blocks parse, call the venv's programs by path and name what exists.

The slow half, running the first block in a fresh clone and checking that the
tree stays clean, is tests/pipeline/test_readme_run.py; the figures the README
quotes are checked against their tables by tests/unit/test_readme_benchmarks.py.
"""

from __future__ import annotations

import re
import subprocess
import tomllib

import pytest

from tests.readme_blocks import PROJECT, README, commands, shell_blocks, without_setup

BLOCKS = shell_blocks(README.read_text(encoding="utf-8"))
# Programs of the project's venv: called as .venv/bin/NAME, never from the PATH,
# so the README works without an activated venv.
VENV_PROGRAMS = {"snakemake", "rag", "pip", "pytest", "python"}
EXTRAS = set(tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def test_the_readme_has_its_shell_blocks_and_each_parses():
    assert len(BLOCKS) >= 4
    for block in BLOCKS:
        checked = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True)
        assert checked.returncode == 0, f"{checked.stderr}\n{block}"


def test_every_program_of_the_venv_is_called_by_its_path():
    for block in BLOCKS:
        for command in commands(block):
            program = command[0]
            assert program not in VENV_PROGRAMS, f"{' '.join(command)}: call .venv/bin/{program}"
            if program.startswith(".venv/bin/"):
                assert program.removeprefix(".venv/bin/") in VENV_PROGRAMS, program


def test_the_first_block_sets_up_everything_the_everyday_test_command_needs():
    first = BLOCKS[0]
    installs = [command for command in commands(first) if command[:2] == [".venv/bin/pip", "install"]]
    assert len(installs) == 1
    (requested,) = re.findall(r"-e \.\[([a-z,-]+)\]", " ".join(installs[0]))
    assert "test" in requested.split(",")  # pytest-xdist for -n 2
    assert "-c" in installs[0] and "constraints.txt" in installs[0]
    everyday = [".venv/bin/python", "-m", "pytest", "-m", "not pipeline", "-n", "2"]
    assert any(command == everyday for block in BLOCKS for command in commands(block))
    # The harness of the slow test can leave out the set-up and keep the rest.
    assert ".venv/bin/snakemake --cores 4" in without_setup(first)


def test_every_extra_named_exists():
    for block in BLOCKS:
        for extras in re.findall(r"\.\[([a-z,-]+)\]", block):
            assert set(extras.split(",")) <= EXTRAS, extras


def _created(command: list[str]) -> list[str]:
    """What a command of the README makes: cp's destination, mkdir's folders, an ablation's results."""
    if command[0] == "cp":
        return [command[-1]]
    if command[0] == "mkdir":
        return [word for word in command[1:] if not word.startswith("-")]
    return [word.split("=", 1)[1] for word in command if word.startswith("results=")]


def test_every_file_the_blocks_read_exists_or_an_earlier_command_made_it():
    created: list[str] = [".venv"]
    for block in BLOCKS:
        for command in commands(block):
            sources = command[1:-1] if command[0] == "cp" else command[1:]
            for word in sources:
                if word.startswith(("-", "~")) or "=" in word:
                    assert not word.startswith("~"), f"{' '.join(command)}: a path of one machine"
                    continue
                looks_like_path = "/" in word or re.search(r"\.(ya?ml|txt|csv|toml)$", word)
                if not looks_like_path or command[0] == "mkdir" or word.startswith(("http:", "file:")):
                    continue
                made = any(word == path or word.startswith(path.rstrip("/") + "/") for path in created)
                assert made or (PROJECT / word).exists(), f"{' '.join(command)}: {word} does not exist"
            created += _created(command)


@pytest.mark.parametrize("block", BLOCKS[:1])
def test_the_llm_build_and_how_to_skip_it_are_stated(block):
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert "llm" in block and "CMAKE_ARGS" in block
    assert "count on 5 to 15 minutes" in text and "To skip it, leave `llm` out of the brackets" in text


def test_ci_runs_the_readme_s_test_block_and_build_switches_exactly_as_written():
    ci = (PROJECT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    (test_block,) = [block for block in BLOCKS if block.strip().endswith(".venv/bin/python -m pytest")]
    assert test_block.strip() in ci
    (switches,) = [line for line in BLOCKS[0].splitlines() if line.startswith("export CMAKE_ARGS=")]
    assert switches in ci


PYTEST_OPTIONS = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
MARKERS = {line.split(":")[0].strip() for line in PYTEST_OPTIONS["markers"]}


def test_every_marker_expression_of_a_test_command_names_registered_markers():
    """A misspelt ``-m "not pipline"`` selects every test, slow ones included: each name must be a marker."""
    expressions = [
        command[position + 1]
        for block in BLOCKS
        for command in commands(block)
        if "pytest" in command
        for position, word in enumerate(command[:-1])
        if word == "-m" and position > command.index("pytest")
    ]
    assert "not pipeline" in expressions  # the fast tests: how to run only them
    for expression in expressions:
        names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expression)) - {"and", "or", "not"}
        assert names and names <= MARKERS, (expression, sorted(MARKERS))
