"""A job's user error ends in one line, not a Python traceback.

Every workflow script starts its log with :func:`rag.pipeline.jobs.start_log`, which calls
:func:`install`. From then on an exception whose type the project defines (a
``ConfigError``, ``DocumentError``, ``WikipediaFetchError``, ``BeirFormatError``,
``LabelError``...) is a mistake in the user's input or a fault of a server: its
message already names the file, key, line or article, so the job writes that
one line (escaped, :mod:`rag.escaping`) to stderr and its log and exits with
status 1. Any other exception is a bug in the code and keeps its traceback.
"""

from __future__ import annotations

import logging
import sys
from types import TracebackType

from rag.escaping import visible_lines

EXIT_USER_ERROR = 1


def is_user_error(error: BaseException) -> bool:
    """Whether ``error`` is of a type the project defines for bad input or a failing server."""
    return any(kind.__module__.split(".")[0] == "rag" for kind in type(error).__mro__[:-1])


def one_line(error: BaseException) -> str:
    """The error's message, escaped and prefixed by its type's name: one line, or a report of
    several whose later lines are indented (:func:`rag.escaping.visible_lines`)."""
    return f"{type(error).__name__}: {visible_lines(str(error))}"


def install(log: logging.Logger | None = None) -> None:
    """Report the project's errors in one line for the rest of this process."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
        if not is_user_error(error):
            previous(kind, error, trace)
            return
        line = one_line(error)
        if log is not None:
            log.error("%s", line)
        print(f"Error: {line}", file=sys.stderr, flush=True)
        logging.shutdown()
        sys.exit(EXIT_USER_ERROR)

    sys.excepthook = hook
