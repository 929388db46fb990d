"""Checking a question file before any job runs.

The label job parses questions one at a time and stops at the first mistake,
which is late (after parsing and chunking) and slow to fix one error per run.
:func:`question_problems` instead reports every problem of a loaded question
file at once, each line naming the file, the question (by id, or by position
when it has none) and the key, so the plan can refuse the whole run before a
single job starts. The schema (``workflow/schemas/questions.schema.yaml``) says
what each question looks like; the checks here add what a schema cannot say:
unique ids, evidence that matches ``answerable``, and span documents that the
corpus has.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping

import jsonschema
import yaml


def _key_path(parts: list[object]) -> str:
    return "".join(f"[{part!r}]" if isinstance(part, str) else f"[{part}]" for part in parts)


def _question_name(questions: list, index: int) -> str:
    item = questions[index] if index < len(questions) else None
    if isinstance(item, Mapping) and isinstance(item.get("id"), str) and item["id"].strip():
        return f"question {item['id']!r}"
    return f"question #{index + 1}"


def _schema_message(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        return f"unknown key {', '.join(map(repr, extra))}; allowed keys: {', '.join(allowed)}"
    if error.validator == "required":
        return error.message.replace("is a required property", "is required")
    if error.validator == "pattern":
        return "must not be empty"
    if error.validator == "exclusiveMinimum":
        return f"must be greater than {error.validator_value}, got {error.instance!r}"
    if error.validator == "type" and error.instance is None:
        return f"is empty; expected {error.validator_value}"
    return error.message


def _gain_problems(index: int, evidence: object) -> list[tuple[int, str, str]]:
    """NaN passes every bound of a schema (each comparison with it is false): refuse it here."""
    problems = []
    for number, piece in enumerate(evidence if isinstance(evidence, list) else []):
        gain = piece.get("gain") if isinstance(piece, Mapping) else None
        if isinstance(gain, float) and math.isnan(gain):
            problems.append(
                (index, _key_path(["evidence", number, "gain"]), "must be a finite number, got nan")
            )
    return problems


def _legacy_document_keys(data: list, source: str) -> str | None:
    """One line for a file in the previous round's format (``doc:`` on each evidence piece), or None.

    Every piece of such a file would otherwise be reported alone as an
    unknown key, dozens of lines that do not say what changed.
    """
    pieces = [
        (index, number)
        for index, item in enumerate(data)
        if isinstance(item, Mapping) and isinstance(item.get("evidence"), list)
        for number, piece in enumerate(item["evidence"])
        if isinstance(piece, Mapping) and "doc" in piece
    ]
    if not pieces:
        return None
    index, number = pieces[0]
    return (
        f"{source}: {_question_name(data, index)}['evidence'][{number}]['doc'] and {len(pieces) - 1} more "
        "evidence pieces use the previous format's 'doc:' key; the document moved into each span as "
        "'document:' (spans: [{text: ..., document: ...}]), see docs/corpus-format.md"
    )


def question_problems(
    data: object,
    source: str,
    schema: Mapping,
    documents: Collection[str] | None = None,
) -> list[str]:
    """Every problem of a loaded question file, one line each; empty when it is valid.

    ``data`` is the file as YAML loads it (a list, or a mapping with a
    ``questions`` list), ``source`` names the file in every line and
    ``schema`` is the question schema. ``documents``, when given, are the
    corpus's document ids: a span naming another document is reported too.
    """
    if isinstance(data, Mapping) and "questions" in data:
        extra = sorted(set(data) - {"questions"})
        if extra:
            return [f"{source}: unknown top-level key {extra[0]!r}; put the questions under 'questions:'"]
        data = data["questions"]
    if not isinstance(data, list):
        return [f"{source}: expected a list of questions (or a 'questions:' list), got {type(data).__name__}"]
    legacy = _legacy_document_keys(data, source)
    if legacy:
        return [legacy]
    problems: list[tuple[int, str, str]] = []
    validator = jsonschema.Draft202012Validator(schema)
    for error in validator.iter_errors(data):
        path = list(error.absolute_path)
        if not path:
            problems.append((-1, "", error.message))
            continue
        index, keys = int(path[0]), path[1:]
        problems.append((index, _key_path(keys), _schema_message(error)))

    seen: dict[str, int] = {}
    for index, item in enumerate(data):
        if not isinstance(item, Mapping):
            continue
        question_id = item.get("id")
        if isinstance(question_id, str) and question_id.strip():
            if question_id in seen:
                problems.append((index, "['id']", f"duplicate id, also question #{seen[question_id] + 1}"))
            else:
                seen[question_id] = index
        evidence = item.get("evidence")
        answerable = item.get("answerable", True)
        if answerable is True and not evidence:
            problems.append((index, "['evidence']", "an answerable question needs evidence"))
        if answerable is False and evidence:
            problems.append((index, "['evidence']", "an unanswerable question must not have evidence"))
        problems += _gain_problems(index, evidence)
        if documents is None or not isinstance(evidence, list):
            continue
        for number, piece in enumerate(evidence):
            spans = piece.get("spans") if isinstance(piece, Mapping) else None
            for alternative, span in enumerate(spans if isinstance(spans, list) else []):
                name = span.get("document") if isinstance(span, Mapping) else None
                if isinstance(name, str) and name not in documents:
                    problems.append(
                        (
                            index,
                            _key_path(["evidence", number, "spans", alternative, "document"]),
                            f"unknown document {name!r}; the corpus has {len(documents)} documents",
                        )
                    )
    problems.sort(key=lambda problem: (problem[0], problem[1]))
    lines = []
    for index, keys, message in problems:
        where = source if index < 0 else f"{source}: {_question_name(data, index)}{keys}"
        lines.append(f"{where}: {message}")
    return lines


def load_question_file(name: str, path: object, load: Callable[[str], object]) -> tuple[object, str | None]:
    """A corpus's question file as YAML loads it, or None and the one problem that stopped it."""
    try:
        return load(path), None
    except FileNotFoundError:
        return None, f"config['corpora'][{name!r}]['questions']: no such file {path}"
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark is not None else ""
        return None, f"{path}: not valid YAML{line}: {getattr(error, 'problem', None) or error}"


def corpus_question_problems(
    corpora: Mapping[str, Mapping],
    schema: Mapping,
    load: Callable[[str], object],
) -> list[str]:
    """The problems of every labelled corpus's question file, for the plan to report at once.

    ``load`` reads a YAML file (the plan passes :func:`rag.formats.files.read_yaml`); a
    missing or unreadable file is one problem naming the corpus's key.
    """
    problems: list[str] = []
    checked: set[str] = set()
    for name, entry in corpora.items():
        path = entry.get("questions")
        if path is None or str(path) in checked:  # two corpora may share one file
            continue
        checked.add(str(path))
        data, problem = load_question_file(name, path, load)
        problems += [problem] if problem else question_problems(data, str(path), schema)
    return problems
