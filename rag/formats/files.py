"""Writing files atomically, and the plain text formats (YAML, CSV, PNG) every stage uses.

Every writer goes through :func:`atomic_path`, so an interrupted job never
leaves a file that looks complete, and every table is written in a stable row
and column order so that the same inputs give byte-identical outputs.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    import pandas as pd


# A ``.partial`` file this old has no writer left (a job was killed mid-write).
PARTIAL_GRACE_SECONDS = 15 * 60


def _partials(target: Path) -> list[Path]:
    return list(target.parent.glob(f".{glob.escape(target.name)}.*.partial"))


def remove_stale_partials(
    target: str | os.PathLike, older_than_seconds: float = PARTIAL_GRACE_SECONDS
) -> int:
    """Remove the ``.partial`` files a killed writer of ``target`` left behind; returns how many.

    Only files older than ``older_than_seconds`` go: a younger one may belong to a
    writer still at work (two ``rag ask`` runs may write the same cache entry).
    """
    removed = 0
    now = time.time()
    for partial in _partials(Path(target)):
        with contextlib.suppress(OSError):
            if now - partial.stat().st_mtime >= older_than_seconds:
                partial.unlink()
                removed += 1
    return removed


# Inside a workflow job Snakemake runs one writer per output, so every partial
# file of an output is a leftover of a killed run, whatever its age; start_log
# sets this. Elsewhere (two ``rag ask`` runs may share a cache) the grace holds.
_ONE_WRITER_PER_OUTPUT = False


def one_writer_per_output() -> None:
    """Declare this process a workflow job: every partial file of an output is a leftover.

    :func:`rag.pipeline.jobs.start_log` calls it; elsewhere the grace period holds.
    """
    global _ONE_WRITER_PER_OUTPUT
    _ONE_WRITER_PER_OUTPUT = True


def _keep_mode(target: Path, temporary: Path) -> None:
    """A rewrite keeps the mode the user gave the existing file (``chmod 600`` survives)."""
    with contextlib.suppress(FileNotFoundError):
        os.chmod(temporary, stat.S_IMODE(target.stat().st_mode))


def _fsync(path: Path) -> None:
    """Flush a file's or a folder's data to disk: a rename counts only once its content is there."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it into place on success.

    The temporary file is created with mode 0666 less the umask, as ``open``
    would, so outputs get the permissions the user asked for (``mkstemp``
    would make every output private). Stale partials of the same target left
    by a killed writer are removed first.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(target, 0 if _ONE_WRITER_PER_OUTPUT else PARTIAL_GRACE_SECONDS)
    while True:
        temporary = target.parent / f".{target.name}.{secrets.token_hex(6)}.partial"
        try:
            os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
    try:
        yield temporary
        _keep_mode(target, temporary)
        _fsync(temporary)
        os.replace(temporary, target)
        _fsync(target.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


@dataclass(frozen=True)
class FolderCache:
    """A folder of downloaded texts, written atomically so a hit is always whole."""

    folder: str | os.PathLike

    def read(self, key: str) -> str | None:
        """The cached text, or None; a miss also removes the partial files of an interrupted write.

        The download jobs of one corpus run one at a time, so a partial file of
        a missing entry is always a leftover, whatever its age.
        """
        path = Path(self.folder) / key
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            remove_stale_partials(path, older_than_seconds=0)
            return None
        except (OSError, UnicodeDecodeError):
            self.remove(key)
            return None

    def write(self, key: str, text: str) -> None:
        write_text(Path(self.folder) / key, text)

    def remove(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (Path(self.folder) / key).unlink()


def write_yaml(path: str | os.PathLike, data: object) -> None:
    write_text(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


# libyaml's parser, where PyYAML was built with it: the same safe loading, about
# ten times faster, which matters to every short job that reads the questions.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: str | os.PathLike) -> object:
    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.load(handle, Loader=SAFE_LOADER)
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: not valid YAML: {' '.join(str(error).split())}") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text (byte {error.start})") from None
    except ValueError as error:  # PyYAML's own, for a date such as 2026-13-45
        raise ValueError(f"{path}: not valid YAML: {error}") from None


def write_csv(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """CSV with fixed float formatting, so reruns give byte-identical tables."""
    with atomic_path(path) as temporary:
        frame.to_csv(temporary, index=False, float_format="%.6f", lineterminator="\n")


def read_text_csv(path: str | os.PathLike, columns: Sequence[str], error: type[Exception]) -> pd.DataFrame:
    """A hand-written CSV read as text (no value guessed as a number or a missing value), its columns checked.

    An unreadable file or a missing column raises ``error`` with one line naming the file.
    """
    import pandas as pd

    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError, UnicodeDecodeError) as problem:
        raise error(f"{path}: not a readable CSV file ({problem})") from None
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise error(f"{path}: missing column {missing[0]!r}")
    return frame


# No "Software" chunk: matplotlib's version would otherwise enter every PNG.
PNG_METADATA = {"Software": None}


def write_figure(figure, path: str | Path) -> None:
    """Save a matplotlib figure as PNG and close it; fixed DPI and metadata keep the bytes stable."""
    import matplotlib.pyplot as plt

    figure.savefig(path, format="png", dpi=120, metadata=PNG_METADATA)
    plt.close(figure)


def write_sweep(table, settings: Mapping, columns: Sequence[str], path: str | os.PathLike, log) -> None:
    """A parameter sweep's table with the settings that name it as its first ``columns``,
    logged whole (settings and rows) and written as CSV."""
    for column in reversed(columns):
        table.insert(0, column, settings[column])
    log.info("%s\n%s", settings, table.to_string(index=False))
    write_csv(table, path)


# A YAML loader that refuses a key given twice, shared by the plan (rag.pipeline.config) and rag ask.
def _config_error() -> type:
    from rag.kinds import ConfigError

    return ConfigError


MERGE_TAG = "tag:yaml.org,2002:merge"


class UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """A YAML loader that refuses a mapping key given twice (PyYAML keeps the last silently)."""

    path = "config.yaml"


def _construct_unique_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[object, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == MERGE_TAG:
            raise _config_error()(
                f"{loader.path}, line {key_node.start_mark.line + 1}: a YAML merge key (<<); "
                "write the keys out in full"
            )
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise _config_error()(
                f"{loader.path}, line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                f"(first given on line {seen[key] + 1}); YAML would silently keep only the last"
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def read_unique_yaml(path: str | Path) -> object:
    """A YAML file (a question file) read as configs are: a key given twice or a merge key is an error."""
    path = Path(path)
    loader = UniqueKeyLoader(path.read_text(encoding="utf-8"))
    loader.path = str(path)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
