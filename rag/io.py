"""The file formats of the pipeline, in one place.

This is the only module of the package that touches files. Every writer goes
through :func:`atomic_path`, so an interrupted job never leaves a file that
looks complete, and every table is written in a stable row and column order so
that the same inputs give byte-identical outputs.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import secrets
import stat
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import yaml

from rag import job_errors
from rag.chunking import Chunk
from rag.corpus.documents import DEFAULT_ACCESS, Block, Document, section_name

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

# pandas and pyarrow are imported inside the functions that need them: loading
# them takes about half a second, which the `rag ask` command cannot afford on
# every question, and it only reads and writes numpy arrays and JSON.

PROVENANCE_KEY = b"rag.provenance"

BLOCK_COLUMNS = [
    "doc_id",
    "title",
    "version",
    "url",
    "updated",
    "tags",
    "access",
    "section",
    "block_index",
    "text",
    "start",
    "end",
]
CHUNK_COLUMNS = [
    "chunk_id",
    "doc_id",
    "version",
    "title",
    "section",
    "start",
    "end",
    "text",
    "header",
    "indexed_text",
    "n_words",
    "updated",
    "tags",
    "access",
]


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


def write_parquet(
    table: pd.DataFrame | pa.Table, path: str | os.PathLike, provenance: Mapping | None = None
) -> None:
    """Write a table with its provenance in the file's schema metadata.

    ``table`` is a pandas frame or a pyarrow table; the many short ranking
    jobs build pyarrow tables directly, because importing pandas would cost
    them more than their own work.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(table, pa.Table):
        table = pa.Table.from_pandas(table, preserve_index=False)
    if provenance is not None:
        metadata = dict(table.schema.metadata or {})
        metadata[PROVENANCE_KEY] = json.dumps(provenance, sort_keys=True).encode()
        table = table.replace_schema_metadata(metadata)
    with atomic_path(path) as temporary:
        pq.write_table(table, temporary)


class DamagedFileError(ValueError):
    """An intermediate file that exists but cannot be read back; the message names it."""


@contextlib.contextmanager
def _reading_table(path: str | os.PathLike) -> Iterator[None]:
    """Name the file in any failure to read it (pyarrow says "magic bytes not found" and no more).

    A missing file stays a FileNotFoundError; a damaged one (a truncated parquet
    or npz left by a crash outside :func:`atomic_path`) becomes one line that
    names it and says how to recover.
    """
    import zipfile

    try:
        yield
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except KeyError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        reason = " ".join(str(error).split())[:200] or type(error).__name__
        raise DamagedFileError(
            f"{path}: damaged or truncated file ({type(error).__name__}: {reason}); delete it and rerun"
        ) from None


def read_columns(path: str | os.PathLike, columns: Sequence[str]) -> dict[str, list]:
    """Some columns of a parquet table as Python lists, without pandas.

    ``ParquetFile`` rather than ``read_table``: the latter loads pyarrow's
    dataset layer, and with it pandas.
    """
    import pyarrow.parquet as pq

    with _reading_table(path), pq.ParquetFile(path) as parquet:
        return parquet.read(columns=list(columns)).to_pydict()


def read_provenance(path: str | os.PathLike) -> dict:
    import pyarrow.parquet as pq

    with _reading_table(path):
        metadata = pq.read_schema(path).metadata or {}
    raw = metadata.get(PROVENANCE_KEY)
    return json.loads(raw) if raw else {}


def write_csv(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """CSV with fixed float formatting, so reruns give byte-identical tables."""
    with atomic_path(path) as temporary:
        frame.to_csv(temporary, index=False, float_format="%.6f", lineterminator="\n")


# --------------------------------------------------------------------------
# Documents and chunks as tables
# --------------------------------------------------------------------------


def documents_to_frame(documents: Sequence[Document]) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for document in documents:
        for index, (block, (start, end)) in enumerate(
            zip(document.blocks, document.block_offsets(), strict=True)
        ):
            rows.append(
                {
                    "doc_id": document.doc_id,
                    "title": document.title,
                    "version": document.version,
                    "url": document.url,
                    "updated": document.updated,
                    "tags": list(document.tags),
                    "access": document.access,
                    "section": section_name(block.section),
                    "block_index": index,
                    "text": block.text,
                    "start": start,
                    "end": end,
                }
            )
    return pd.DataFrame(rows, columns=BLOCK_COLUMNS)


def documents_from_frame(frame: pd.DataFrame) -> list[Document]:
    from rag.corpus.documents import SECTION_SEPARATOR

    documents = []
    for doc_id, rows in frame.groupby("doc_id", sort=False):
        rows = rows.sort_values("block_index")
        first = rows.iloc[0]
        blocks = tuple(
            Block(tuple(section.split(SECTION_SEPARATOR)) if section else (), text)
            for section, text in zip(rows["section"], rows["text"], strict=True)
        )
        documents.append(
            Document(
                doc_id=str(doc_id),
                title=first["title"],
                version=first["version"],
                blocks=blocks,
                url=first["url"],
                updated=first["updated"],
                tags=tuple(first["tags"]),
                access=first["access"],
            )
        )
    return documents


def chunks_to_frame(chunks: Sequence[Chunk], documents: Sequence[Document]) -> pd.DataFrame:
    import pandas as pd

    by_id = {document.doc_id: document for document in documents}
    rows = []
    for chunk in chunks:
        document = by_id[chunk.doc_id]
        rows.append(
            {
                "chunk_id": chunk.chunk_id,
                "doc_id": chunk.doc_id,
                "version": document.version,
                "title": chunk.title,
                "section": chunk.section,
                "start": chunk.start,
                "end": chunk.end,
                "text": chunk.text,
                "header": chunk.header,
                "indexed_text": chunk.indexed_text,
                "n_words": len(chunk.text.split()),
                "updated": document.updated,
                "tags": list(document.tags),
                "access": document.access,
            }
        )
    return pd.DataFrame(rows, columns=CHUNK_COLUMNS)


def chunks_from_frame(frame: pd.DataFrame) -> list[Chunk]:
    return [
        Chunk(
            chunk_id=row.chunk_id,
            doc_id=row.doc_id,
            title=row.title,
            section=row.section,
            start=int(row.start),
            end=int(row.end),
            text=row.text,
            header=row.header,
        )
        for row in frame.itertuples(index=False)
    ]


def start_log(path: str | os.PathLike) -> logging.Logger:
    """A logger that writes to a rule's log file (and nowhere else)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    logger = logging.getLogger(f"rag.job.{path}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").addHandler(handler)
    job_errors.install(logger)
    global _ONE_WRITER_PER_OUTPUT
    _ONE_WRITER_PER_OUTPUT = True
    return logger


def finish_job() -> NoReturn:
    """End a workflow script that has written all its outputs, without Python's teardown.

    By its last line a script has renamed every output into place and closed
    its files; what would follow is the interpreter freeing every module and
    object one at a time, about a tenth of a second for the numpy, pyarrow
    and scipy a job loads. Over the ~150 jobs of a clean build that is a tenth
    of the build's CPU time. Logs and standard streams are flushed first. Only
    reached when the script succeeded: a failing script raises before it, and
    exits with Python's usual error status.
    """
    import sys

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def provenance(**parts: object) -> dict:
    """What made an artifact: the given parts plus the package version."""
    from rag import __version__

    return {"rag_version": __version__, **parts}


RANKING_COLUMNS = ["question_id", "rank", "chunk_id", "score"]


def write_ranking(
    path: str | os.PathLike,
    question_ids: Sequence[str],
    rankings: Sequence,
    chunk_ids: Sequence[str],
    *,
    chunk_set: Mapping,
    retriever: Mapping,
    code: str,
    stage: str,
    **parts: object,
) -> None:
    """Write one ranking file of any kind, with its whole record.

    The one writer every ranking kind (sparse, LSA, embedder, IVF, fusion,
    funnel, filtered) goes through: ``chunk_set`` is the chunk file's
    provenance, ``retriever`` the retriever's record
    (``rag.provenance.retriever_record`` or ``composite_record``), ``code``
    the rule's code digest, and ``parts`` anything more the kind records
    (a filter, nested first stages). ``rag.provenance.ranking_record``
    refuses a record without the chunk set, the retriever or the code, so no
    kind can write a ranking whose digest would not tell it apart.
    """
    from rag import __version__
    from rag.provenance import ranking_record

    record = {"rag_version": __version__, **ranking_record(chunk_set, retriever, code, stage, **parts)}
    write_parquet(rankings_to_table(question_ids, rankings, chunk_ids), path, record)


def job_filter(job: Any) -> dict | None:
    """The filter a job's ranking is kept within (its JSON ``filter`` parameter), or None.

    Scripts that serve a rule and its ``_filtered`` twin (fuse, funnel) read
    the filter here: only the filtered rule has the parameter.
    """
    encoded = getattr(job.params, "filter", None)
    return json.loads(encoded) if encoded else None


def write_job_ranking(
    job: Any,
    question_ids: Sequence[str],
    rankings: Sequence,
    chunk_ids: Sequence[str],
    retriever: Mapping,
    stage: str,
    **parts: object,
) -> None:
    """:func:`write_ranking` for a ranking rule's job (its ``snakemake`` object).

    Every ranking rule names its output ``ranking``, its chunk table
    ``chunks`` and its code digest ``code`` (workflow/rules), so the output
    path, the chunk set's provenance and the code digest are taken from the
    job here, once, rather than repeated in every ranking script, where one
    could record another file's provenance or leave out the code.
    """
    write_ranking(
        job.output.ranking,
        question_ids,
        rankings,
        chunk_ids,
        chunk_set=read_provenance(job.input.chunks),
        retriever=retriever,
        code=job.params.code,
        stage=stage,
        **parts,
    )


def rankings_to_table(question_ids: Sequence[str], rankings: Sequence, chunk_ids: Sequence[str]) -> pa.Table:
    """One row per (question, rank); an empty ranking simply has no rows."""
    import pyarrow as pa

    columns: dict[str, list] = {name: [] for name in RANKING_COLUMNS}
    for question_id, ranking in zip(question_ids, rankings, strict=True):
        count = len(ranking.positions)
        columns["question_id"].extend([str(question_id)] * count)
        columns["rank"].extend(range(1, count + 1))
        columns["chunk_id"].extend(chunk_ids[position] for position in ranking.positions)
        columns["score"].extend(float(score) for score in ranking.scores)
    return pa.table(columns, schema=ranking_schema())


def ranking_schema() -> pa.Schema:
    """Column types of a rankings table, fixed so that an empty table keeps them."""
    import pyarrow as pa

    return pa.schema(
        [
            ("question_id", pa.string()),
            ("rank", pa.int64()),
            ("chunk_id", pa.string()),
            ("score", pa.float64()),
        ]
    )


def _ranked_rows(columns: Mapping[str, Sequence], question_ids: Sequence[str]) -> dict[str, list[tuple]]:
    """question id -> its (rank, chunk id, score) rows, best first; every given question, no other."""
    rows: dict[str, list[tuple]] = {question_id: [] for question_id in question_ids}
    for row in zip(
        columns["question_id"], columns["rank"], columns["chunk_id"], columns["score"], strict=True
    ):
        if row[0] in rows:
            rows[row[0]].append(row[1:])
    return {question_id: sorted(ranked) for question_id, ranked in rows.items()}


def rankings_from_columns(
    columns: Mapping[str, Sequence], chunk_ids: Sequence[str], question_ids: Sequence[str]
) -> dict:
    """question id -> Ranking over chunk positions (empty for unranked questions).

    ``columns`` holds the rankings table's columns, as ``read_columns`` gives them.
    """
    import numpy as np

    from rag.retrieval.search import Ranking

    position = {chunk_id: index for index, chunk_id in enumerate(chunk_ids)}
    return {
        question_id: Ranking(
            np.array([position[chunk_id] for _, chunk_id, _ in rows], dtype=np.int64),
            np.array([score for _, _, score in rows], dtype=np.float64),
        )
        for question_id, rows in _ranked_rows(columns, question_ids).items()
    }


def ranked_chunk_ids(columns: Mapping[str, Sequence], question_ids: Sequence[str]) -> dict[str, list[str]]:
    """question id -> its ranked chunk ids, best first, from a rankings table's columns.

    Every given question is kept, ranked or not, and no other; evaluations
    need ids, not positions, so no chunk table is read.
    """
    return {
        question_id: [chunk_id for _, chunk_id, _ in rows]
        for question_id, rows in _ranked_rows(columns, question_ids).items()
    }


def read_rankings(path: str | os.PathLike, chunk_ids: Sequence[str], question_ids: Sequence[str]) -> dict:
    """A rankings file as question id -> Ranking (see ``rankings_from_columns``)."""
    return rankings_from_columns(read_columns(path, RANKING_COLUMNS), chunk_ids, question_ids)


def read_component_rankings(
    paths: Sequence[str | os.PathLike], chunk_ids: Sequence[str]
) -> tuple[list[str], list[dict]]:
    """The rankings files of a fusion's components, read over the same questions.

    Returns every question any component ranks, sorted, and each component
    as question id -> Ranking over those questions (see ``rankings_from_columns``).
    """
    tables = [read_columns(path, RANKING_COLUMNS) for path in paths]
    question_ids = sorted(set().union(*(table["question_id"] for table in tables)))
    return question_ids, [rankings_from_columns(table, chunk_ids, question_ids) for table in tables]


def read_component_provenance(names: Sequence[str], paths: Sequence[str | os.PathLike]) -> dict[str, dict]:
    """Component name -> the provenance of its rankings file, for a composite ranking's record."""
    return {name: read_provenance(path) for name, path in zip(names, paths, strict=True)}


def read_ranked_chunk_ids(path: str | os.PathLike, question_ids: Sequence[str]) -> dict[str, list[str]]:
    """A rankings file as question id -> ranked chunk ids (see ``ranked_chunk_ids``)."""
    return ranked_chunk_ids(read_columns(path, RANKING_COLUMNS), question_ids)


def save_arrays(path: str | os.PathLike, arrays: Mapping) -> None:
    import numpy as np

    with atomic_path(path) as temporary:
        with open(temporary, "wb") as handle:
            np.savez(handle, **arrays)


def load_arrays(path: str | os.PathLike) -> dict:
    """The arrays of an ``.npz`` written by :func:`save_arrays`; pickled objects are refused."""
    import numpy as np

    with _reading_table(path), np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def load_indexes(paths: Sequence[str | os.PathLike]) -> dict[str, dict]:
    """Saved retriever indexes by retriever name: the workflow names each file after its retriever."""
    return {Path(path).stem: load_arrays(path) for path in paths}


# --------------------------------------------------------------------------
# A folder of Markdown documents, and the index cache of the `rag ask` command
# --------------------------------------------------------------------------


class FolderError(ValueError):
    """A documents folder that cannot be read; the message names the folder or file."""


@dataclass(frozen=True)
class MarkdownFile:
    """One ``*.md`` file of a folder: its name (also its default document id) and text."""

    name: str
    text: str


def read_markdown_file(path: str | os.PathLike) -> str:
    """The text of one Markdown file; an unreadable or non-UTF-8 file is an error naming it."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise FolderError(f"{path}: cannot be read ({error.strerror or error})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise FolderError(f"{path}, line {line}: not UTF-8 text (byte {error.start})") from None


def read_markdown_folder(folder: str | os.PathLike) -> list[MarkdownFile]:
    """Every ``*.md`` file directly in ``folder``, in name order.

    A missing folder, a folder without Markdown files and a file that is not
    UTF-8 text are errors naming the path, so the caller can report them in
    one line instead of failing later with an empty index.
    """
    path = Path(folder)
    if not path.exists():
        raise FolderError(f"{folder}: no such folder")
    if not path.is_dir():
        raise FolderError(f"{folder}: not a folder")
    try:
        # Listed first: glob would take an unreadable folder for an empty one.
        names = [entry for entry in path.iterdir() if entry.suffix == ".md"]
    except OSError as error:
        raise FolderError(f"{folder}: cannot be read ({error.strerror or error})") from None
    files = sorted(entry for entry in names if entry.is_file())
    if not files:
        raise FolderError(f"{folder}: no Markdown documents (*.md) in this folder")
    documents = []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise FolderError(f"{file}: not UTF-8 text (byte {error.start})") from None
        except OSError as error:
            raise FolderError(f"{file}: cannot be read ({error.strerror or error})") from None
        documents.append(MarkdownFile(file.name, text))
    return documents


def source_digest(modules: Sequence[object]) -> str:
    """SHA-256 over the source files of ``modules``: changes whenever their code does.

    A cache keyed only by inputs and options would keep serving indexes built
    by an older chunker or analyzer after the code changed.
    """
    import hashlib

    digest = hashlib.sha256()
    for module in modules:
        source = Path(module.__file__)
        digest.update(module.__name__.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()


BUNDLE_MANIFEST = "manifest.json"


class BundleError(ValueError):
    """A bundle folder that exists but cannot be read back."""


def write_bundle(
    folder: str | os.PathLike,
    arrays: Mapping[str, Mapping],
    values: Mapping[str, object],
    manifest: Mapping[str, object],
) -> None:
    """Write named array groups (``<name>.npz``) and JSON values (``<name>.json``) into ``folder``.

    Every file is written atomically and the manifest, which lists the other
    files, comes last: a folder with a manifest is complete, and a reader that
    finds none treats the bundle as absent. Two writers of the same bundle
    replace each other's files with identical content.
    """
    folder = Path(folder)
    for name, group in arrays.items():
        save_arrays(folder / f"{name}.npz", group)
    for name, value in values.items():
        write_text(folder / f"{name}.json", json.dumps(value, ensure_ascii=False))
    content = {**manifest, "arrays": sorted(arrays), "values": sorted(values)}
    write_text(folder / BUNDLE_MANIFEST, json.dumps(content, sort_keys=True, indent=1))


def touch_bundle(folder: str | os.PathLike) -> None:
    """Mark a bundle as just used, so :func:`prune_bundles` keeps the recently used ones."""
    with contextlib.suppress(OSError):
        os.utime(folder)  # the folder, not its files: a hit leaves the files as they were


def prune_bundles(
    cache: str | os.PathLike,
    keep: int,
    max_age_seconds: float,
    spare: str | os.PathLike | None = None,
    others: Iterable[str] = (),
) -> list[Path]:
    """Remove the bundles of ``cache`` beyond the ``keep`` most recently used, and any unused for
    ``max_age_seconds``; ``spare`` (the entry just used) always stays, and so do the folders named in
    ``others`` (caches of another kind kept beside the bundles). Returns the removed folders.

    A cache keyed by content digests only grows: every edit of a document adds
    an entry and none is ever read again. Use is the manifest's modification
    time of the entry's folder (set when written, touched on a hit); folders without a manifest are
    half-written entries and go once they are older than the partial-file grace.
    """
    import shutil

    root = Path(cache)
    if not root.is_dir():
        return []
    now = time.time()
    spared = Path(spare).resolve() if spare is not None else None
    entries: list[tuple[float, Path]] = []
    removed: list[Path] = []
    for folder in root.iterdir():
        if not folder.is_dir() or folder.is_symlink() or folder.resolve() == spared or folder.name in others:
            continue
        try:
            (folder / BUNDLE_MANIFEST).stat()
            used = folder.stat().st_mtime
        except FileNotFoundError:
            try:
                if now - folder.stat().st_mtime >= PARTIAL_GRACE_SECONDS:
                    shutil.rmtree(folder, ignore_errors=True)
                    removed.append(folder)
            except OSError:
                pass
            continue
        except OSError:
            continue
        entries.append((used, folder))
    entries.sort(key=lambda entry: (-entry[0], entry[1].name))
    budget = max(0, keep - (1 if spared is not None else 0))
    for position, (used, folder) in enumerate(entries):
        if position >= budget or now - used > max_age_seconds:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


@dataclass(frozen=True)
class Bundle:
    manifest: dict
    arrays: dict[str, dict]
    values: dict[str, object]


def read_bundle(folder: str | os.PathLike) -> Bundle | None:
    """The bundle :func:`write_bundle` wrote into ``folder``, or None when it has no manifest.

    A manifest whose files are missing or damaged raises :class:`BundleError`.
    """
    import zipfile

    folder = Path(folder)
    manifest_path = folder / BUNDLE_MANIFEST
    if not manifest_path.exists():
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        arrays = {name: load_arrays(folder / f"{name}.npz") for name in manifest["arrays"]}
        values = {
            name: json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
            for name in manifest["values"]
        }
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as error:
        raise BundleError(f"{folder}: damaged bundle ({type(error).__name__}: {error})") from None
    return Bundle(manifest, arrays, values)


# --------------------------------------------------------------------------
# Questions and document judgements as tables, and BEIR collections
# --------------------------------------------------------------------------

QUESTION_COLUMNS = ["question_id", "text", "type", "answerable"]
JUDGEMENT_COLUMNS = ["question_id", "doc_id", "gain"]


def questions_to_frame(questions: Sequence) -> pd.DataFrame:
    """Questions without evidence spans (BEIR queries) as a table."""
    import pandas as pd

    rows = [(q.question_id, q.text, q.type, bool(q.answerable)) for q in questions]
    frame = pd.DataFrame(rows, columns=QUESTION_COLUMNS)
    return frame.astype({"question_id": str, "text": str, "type": str, "answerable": bool})


def read_questions(path: str | os.PathLike) -> list:
    """The questions of a corpus: a labelled YAML file, or a parquet table of queries.

    Span-labelled corpora keep their questions in YAML; BEIR corpora get a
    table written by their parse rule, whose questions carry no spans (their
    labels are document judgements).
    """
    from rag.labels import Question, parse_questions

    if str(path).endswith(".parquet"):
        import pandas as pd

        with _reading_table(path):
            frame = pd.read_parquet(path, columns=QUESTION_COLUMNS)
        return [
            Question(str(row.question_id), str(row.text), str(row.type), bool(row.answerable))
            for row in frame.itertuples(index=False)
        ]
    return parse_questions(read_yaml(path), str(path))


def judgements_to_frame(judgements: Sequence) -> pd.DataFrame:
    import pandas as pd

    rows = [(j.question_id, j.doc_id, int(j.gain)) for j in judgements]
    frame = pd.DataFrame(rows, columns=JUDGEMENT_COLUMNS)
    return frame.astype({"question_id": str, "doc_id": str, "gain": "int64"})


def judgements_from_frame(frame: pd.DataFrame) -> list:
    from rag.labels import DocumentJudgement

    return [
        DocumentJudgement(str(row.question_id), str(row.doc_id), int(row.gain))
        for row in frame[JUDGEMENT_COLUMNS].itertuples(index=False)
    ]


def _read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file, split on newlines only (never inside a JSON string)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: not valid UTF-8") from None
    return text.split("\n")


def beir_files(folder: str | os.PathLike, split: str) -> dict[str, Path]:
    """The three files of a BEIR collection's split."""
    from rag.corpus.beir import CORPUS_FILE, QUERIES_FILE, qrels_path

    folder = Path(folder)
    return {
        "corpus": folder / CORPUS_FILE,
        "queries": folder / QUERIES_FILE,
        "qrels": folder / qrels_path(split),
    }


def read_beir_collection(
    corpus: str | os.PathLike,
    queries: str | os.PathLike,
    qrels: str | os.PathLike,
    default_access: str = DEFAULT_ACCESS,
) -> tuple[list[Document], list, list]:
    """Documents, questions and judgements of one BEIR split; errors name file and line.

    ``default_access`` is the access of a document whose record has no ``access``.
    """
    from rag.corpus.beir import beir_questions, parse_corpus, parse_qrels, parse_queries

    documents = parse_corpus(_read_lines(Path(corpus)), str(corpus), default_access)
    parsed_queries = parse_queries(_read_lines(Path(queries)), str(queries))
    judgements = parse_qrels(
        _read_lines(Path(qrels)),
        str(qrels),
        {document.doc_id for document in documents},
        {query.query_id for query in parsed_queries},
    )
    return documents, beir_questions(parsed_queries, judgements), judgements


def write_beir_collection(folder: str | os.PathLike, collection, split: str) -> dict[str, Path]:
    """Write a :class:`rag.corpus.beir.BeirCollection` as corpus, queries and one qrels split."""
    from rag.corpus.beir import corpus_line, qrels_lines, query_line

    files = beir_files(folder, split)
    write_text(files["corpus"], "".join(corpus_line(document) + "\n" for document in collection.documents))
    write_text(files["queries"], "".join(query_line(query) + "\n" for query in collection.queries))
    write_text(files["qrels"], "".join(line + "\n" for line in qrels_lines(collection.judgements)))
    return files


# --------------------------------------------------------------------------
# The embedding cache: vectors by text digest, in write-once shards
# --------------------------------------------------------------------------

EMBEDDING_SHARD_SUFFIX = ".npz"


def read_embedding_shards(folder: str | os.PathLike) -> tuple[dict, list[str]]:
    """Every cached vector in ``folder`` by text key, and a note for each shard that could not be read.

    A cache may lose a file or hold a damaged one without harm: such a shard
    is skipped (and named, so the job's log shows it) and its texts are
    simply encoded again. A missing folder is an empty cache.
    """
    import zipfile

    import numpy as np

    vectors: dict[str, np.ndarray] = {}
    problems: list[str] = []
    path = Path(folder)
    if not path.is_dir():
        return vectors, problems
    for shard in sorted(path.glob(f"*{EMBEDDING_SHARD_SUFFIX}")):
        try:
            arrays = load_arrays(shard)
            keys, matrix = arrays["keys"], arrays["vectors"]
            if matrix.ndim != 2 or keys.shape != (len(matrix),):
                raise ValueError(f"{keys.shape} keys for vectors of shape {matrix.shape}")
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
            problems.append(f"{shard}: skipped, unreadable ({type(error).__name__}: {error})")
            continue
        vectors.update(zip(keys.tolist(), matrix, strict=True))
    return vectors, problems


def write_embedding_shard(folder: str | os.PathLike, vectors: Mapping) -> Path | None:
    """Store new vectors (text key -> vector) as one shard of ``folder``; None when there are none.

    Shards are never modified, only added, each written atomically, so jobs
    that run at the same time can share the folder: a reader sees whole
    shards only, and two jobs that encoded the same texts write the same
    shard name with the same content.
    """
    import hashlib

    import numpy as np

    if not vectors:
        return None
    keys = sorted(vectors)
    name = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:24]
    path = Path(folder) / f"{name}{EMBEDDING_SHARD_SUFFIX}"
    matrix = np.stack([np.asarray(vectors[key], dtype=np.float32) for key in keys])
    save_arrays(path, {"keys": np.array(keys, dtype=np.str_), "vectors": matrix})
    return path


# No "Software" chunk: matplotlib's version would otherwise enter every PNG.
PNG_METADATA = {"Software": None}


def write_figure(figure, path: str | Path) -> None:
    """Save a matplotlib figure as PNG and close it; fixed DPI and metadata keep the bytes stable."""
    import matplotlib.pyplot as plt

    figure.savefig(path, format="png", dpi=120, metadata=PNG_METADATA)
    plt.close(figure)


def write_parsed_documents(documents: Iterable[Document], path: str | os.PathLike, **record) -> None:
    """The parse stage's parquet, whatever the source: documents in id order, and a record of
    the parser version, ``record`` (the source's own facts) and every document's version."""
    from rag.corpus.documents import PARSER_VERSION
    from rag.provenance import documents_record

    ordered = sorted(documents, key=lambda document: document.doc_id)
    versions = {document.doc_id: document.version for document in ordered}
    made_by = provenance(stage="parse", parser_version=PARSER_VERSION, **record, **documents_record(versions))
    write_parquet(documents_to_frame(ordered), path, made_by)


def write_sweep(table, settings: Mapping, columns: Sequence[str], path: str | os.PathLike, log) -> None:
    """A parameter sweep's table with the settings that name it as its first ``columns``,
    logged whole (settings and rows) and written as CSV."""
    for column in reversed(columns):
        table.insert(0, column, settings[column])
    log.info("%s\n%s", settings, table.to_string(index=False))
    write_csv(table, path)
