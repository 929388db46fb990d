"""The ``rag`` command: ``rag ask`` and ``rag compare``.

Usage::

    rag ask "How long is a year on Venus?"
    rag ask "What does the runbook say about backups?" --documents notes/
    rag compare results results_ablation
    python -m rag ask --help

``rag ask`` is :mod:`rag.ask.cli` (options, index cache, report).

``rag compare BEFORE AFTER`` compares two results folders (the committed
``results/`` and an ablation's ``--config results=...`` folder, say): the
configurations added or removed with their headline metrics, every metric mean
that changed with both 95 % intervals, and every verdict of significance.csv
that flipped (rag.evaluation.compare_results). Provenance and timing columns
are ignored; a missing or damaged table is one line naming its file, row and column.

This module and :mod:`rag.ask.cli` are the only ones of the package that print.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from rag.ask.cli import AskError, add_ask_parser, ask, check_ask_arguments, shown_path
from rag.escaping import visible, visible_lines

PROGRAM = "rag"


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (still exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROGRAM,
        description="Retrieval-augmented question answering with verifiable citations.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_ask_parser(commands)
    compare = commands.add_parser(
        "compare",
        help="what changed between two results folders",
        description=(
            "Compare two results folders (e.g. results/ and an ablation's --config results=... folder): "
            "configurations added or removed with their headline metrics, metric means that changed with "
            "their 95 %% intervals, and flipped verdicts of significance.csv. Provenance and timing columns "
            "are ignored."
        ),
        epilog=(
            "Exit status: 0 compared, 2 usage error, 1 a folder without the tables or with a damaged table "
            "(one line naming the file, row and column)."
        ),
    )
    compare.add_argument("before", type=Path, metavar="BEFORE", help="the first results folder")
    compare.add_argument("after", type=Path, metavar="AFTER", help="the second results folder")
    compare.set_defaults(command_parser=compare)
    return parser


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    arguments = build_parser().parse_args(argv)
    if arguments.command == "ask":
        check_ask_arguments(arguments)
    return arguments


def compare(arguments: argparse.Namespace) -> int:
    """``rag compare``: print what changed between two results folders."""
    from rag.evaluation.compare_results import CompareError, compare_results

    try:
        comparison = compare_results(arguments.before, arguments.after)
    except CompareError as error:
        raise AskError(str(error)) from None
    print(visible("\n".join(comparison.lines(shown_path(arguments.before), shown_path(arguments.after)))))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rag`` script and of ``python -m rag``; returns the exit status."""
    arguments = parse_arguments(argv)
    try:
        return compare(arguments) if arguments.command == "compare" else ask(arguments)
    except AskError as error:
        # Several problems (every file of a folder that fails) print one per line, indented.
        lines = [" ".join(line.split()) for line in str(error).split("\n") if line.strip()]
        message = visible_lines("\n".join(lines))
        print(f"{PROGRAM} {arguments.command}: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROGRAM} {arguments.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
