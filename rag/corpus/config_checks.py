"""The checks of a corpus entry of config.yaml: the keys its source takes, its level, its files.

Beside the corpus readers so that adding a source changes one package; the
config plan (:mod:`rag.pipeline.config`) runs these checks in its order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from rag.corpus.documents import document_defaults
from rag.corpus.folders import FolderReading, folder_files, read_corpus_folder, skipped_setting
from rag.corpus.questions import load_question_file, question_problems
from rag.corpus.source_kinds import FOLDER_SOURCES, SOURCES
from rag.documents.access_metadata import DocumentError
from rag.kinds import ConfigError
from rag.labels import LabelError, parse_questions, span_problems

# What each corpus source needs, the keys that belong to it alone, and the
# levels its labels can be evaluated at are its row of the table of sources
# (rag.corpus.source_kinds.SOURCES). A corpus without questions is
# unlabelled: it is parsed, chunked and indexed, but nothing is evaluated on
# it. (The schema's defaults, such as a wikipedia entry's ``strict``, are
# filled into every entry, so only keys without a schema default can be
# checked for belonging to another source.)


BEIR_DEFAULTS: dict[str, object] = {"split": "test", "queries": "judged"}


# The depth at which fusions read their components on a BEIR corpus, unless
# configured: the 1,000 of Pyserini's and BEIR's own fusion runs.
BEIR_COMPONENT_DEPTH = 1000


def check_corpus(entry: Mapping, where: str) -> None:
    """Keys a corpus entry's source needs or does not take, and a level it supports."""
    source = entry["source"]
    rules = SOURCES[source]
    for key in rules.required:
        if key not in entry:
            raise ConfigError(f"{where}[{key!r}]: required for source {source!r}")
    for other, other_rules in SOURCES.items():
        for key in other_rules.own:
            if other != source and key in entry and key not in rules.own:
                raise ConfigError(f"{where}[{key!r}]: a key of source {other!r}, not of {source!r}")
    if source == "beir" and "questions" in entry:
        raise ConfigError(f"{where}['questions']: a beir corpus takes its questions from queries.jsonl")
    level = entry.get("level", rules.levels[0])
    if level not in rules.levels:
        raise ConfigError(
            f"{where}['level']: source {source!r} has labels only at the level(s) {list(rules.levels)}, "
            f"not {level!r}"
        )


def corpus_level(entry: Mapping) -> str:
    """``chunk`` or ``document``: what the corpus's labels are evaluated on."""
    return str(entry.get("level", SOURCES[entry["source"]].levels[0]))


def _relative_to(root: Path, configured: str) -> str:
    """What a missing relative path was looked for against: the working directory (snakemake -d)."""
    if Path(configured).is_absolute():
        return ""
    return f" (relative paths resolve against the working directory, snakemake's -d: {root.resolve()})"


def _check_folder_files(entry: Mapping, root: Path, where: str) -> None:
    """A folder corpus has files of its kind, and none is a link leading out of the folder."""
    try:
        files = folder_files(root / entry["documents"], entry["source"])
    except DocumentError as error:
        raise ConfigError(f"{where}['documents']: {error}") from None
    if not files:
        endings = " or ".join(f"*{ending}" for ending in FOLDER_SOURCES[entry["source"]])
        raise ConfigError(f"{where}['documents']: no {endings} files in {entry['documents']}")


def _check_beir_files(entry: Mapping, root: Path, where: str) -> None:
    """corpus.jsonl, queries.jsonl and the split's qrels must exist before any job reads them."""
    from rag.corpus.beir_files import beir_files

    for role, path in beir_files(root / entry["folder"], entry.get("split", BEIR_DEFAULTS["split"])).items():
        if not path.is_file():
            key = "split" if role == "qrels" else "folder"
            against = _relative_to(root, entry["folder"])
            raise ConfigError(f"{where}[{key!r}]: no such file {path.relative_to(root)}{against}")


def check_corpus_entry(entry: Mapping, root: Path, where: str) -> None:
    """One enabled corpus entry: its source's keys, what its parser skips, and its folder and files.

    ``root`` is the folder relative paths start from (the working directory of the run).
    """
    check_corpus(entry, where)
    try:  # what the parser skips and who may read a document are per-corpus settings
        skipped_setting(entry, where)
        document_defaults(entry, where)
    except DocumentError as error:
        raise ConfigError(str(error)) from None
    folder_key = "folder" if entry["source"] == "beir" else "documents"
    if folder_key in entry and not (root / entry[folder_key]).is_dir():
        missing = entry[folder_key]
        raise ConfigError(f"{where}[{folder_key!r}]: no such folder {missing}{_relative_to(root, missing)}")
    if entry["source"] in FOLDER_SOURCES:
        _check_folder_files(entry, root, where)
    if "questions" in entry and not (root / entry["questions"]).is_file():
        missing = entry["questions"]
        raise ConfigError(f"{where}['questions']: no such file {missing}{_relative_to(root, missing)}")
    if entry["source"] == "beir":
        _check_beir_files(entry, root, where)


# Folder readings of this process, by what they were read from (the files' names,
# sizes and times, and the settings): a plan built twice reads each folder once.
_READINGS: dict[tuple, FolderReading] = {}


def _reading(entry: Mapping, root: Path, where: str) -> FolderReading:
    folder = root / entry["documents"]
    try:
        files = tuple(
            (path.name, path.stat().st_size, path.stat().st_mtime_ns)
            for path in folder_files(folder, entry["source"])
        )
    except (DocumentError, OSError):
        files = None
    settings = {key: entry.get(key) for key in ("skip", "default_access", "default_tenant", "default_acl")}
    key = (str(folder.resolve()), entry["source"], repr(sorted(settings.items())), files)
    if files is None or key not in _READINGS:
        reading = read_corpus_folder(entry, root, where)
        if files is None:
            return reading
        if len(_READINGS) > 32:
            _READINGS.clear()
        _READINGS[key] = reading
    return _READINGS[key]


def corpus_problems(
    corpora: Mapping[str, Mapping],
    root: Path,
    schema: Mapping,
    load: Callable[[str], object],
) -> tuple[list[str], list[str]]:
    """Every problem of the corpora's documents and question files, found in one pass, and warnings.

    For every folder corpus (Markdown, text, HTML), each file is parsed as its
    parse job will parse it, and every file that fails is one problem; front
    matter keys no reader uses are one warning per corpus. For every question
    file, the schema's problems (:func:`rag.corpus.questions.question_problems`);
    and when it has none and its corpus is a folder, every evidence span is
    located in the parsed documents: a span found nowhere (with the markup
    that differs, or the closest passage) or more than once in its document
    is a problem. Nothing is written; ``snakemake -n`` runs all of it.
    """
    problems: list[str] = []
    warnings: list[str] = []
    readings: dict[str, FolderReading] = {}
    for name, entry in corpora.items():
        if entry["source"] in FOLDER_SOURCES:
            where = f"config['corpora'][{name!r}]"
            readings[name] = _reading(entry, root, where)
            problems += readings[name].problems
            warnings += readings[name].warnings(where)
    checked: set[str] = set()
    for name, entry in corpora.items():
        path = entry.get("questions")
        if path is None:
            continue
        data, problem = load_question_file(name, path, load)
        found = [problem] if problem else question_problems(data, str(path), schema)
        if str(path) not in checked:  # two corpora may share one file
            problems += found
            checked.add(str(path))
        if found or name not in readings:
            continue
        try:
            questions = parse_questions(data, str(path))
        except LabelError as error:
            problems.append(str(error))
            continue
        reading = readings[name]
        _, spans = span_problems(questions, reading.documents, reading.failed, reading.file_ids)
        problems += [f"{path}: {line}" for line in spans]
    return problems, warnings
