"""The README's shell blocks as commands, for tests/unit/test_readme.py and tests/pipeline/test_readme_run.py.

The README is a script: each ```bash block runs as written, in order, in a
fresh clone. These helpers read the blocks and split them into commands (one
per ``&&``-joined part of a line, comments dropped) so that the tests can
check and run them.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
README = PROJECT / "README.md"

_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)


def shell_blocks(text: str) -> list[str]:
    """The bodies of the ```bash blocks of a Markdown text, in order."""
    return [match.group(1) for match in _BLOCK.finditer(text)]


def commands(block: str) -> list[list[str]]:
    """Each command of a block as its words: lines split at ``&&``, comments and blank lines dropped.

    A line that continues on the next (a trailing backslash) is joined first.
    """
    joined = re.sub(r"\\\n", " ", block)
    result = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in words:
            if word == "&&":
                if command:
                    result.append(command)
                command = []
            else:
                command.append(word)
        if command:
            result.append(command)
    return result


# The one command of the first block that a test harness may leave out: setting up
# the virtual environment (it installs every extra, and builds llama.cpp from source).
SETUP = re.compile(r"python3 -m venv \.venv && \.venv/bin/pip install [^&\n]*&& ")


def without_setup(block: str) -> str:
    """The block with its venv set-up left out (the harness prepares .venv); an error if it has none."""
    stripped, count = SETUP.subn("", block)
    if count != 1:
        raise ValueError(f"expected one venv set-up in the block, found {count}:\n{block}")
    return stripped
