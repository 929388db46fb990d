"""Export the bundled corpus as a BEIR collection, for tools that read that format.

Documents are the Markdown documents' sections (or whole documents, or
paragraphs, with --unit), queries are the answerable questions, and the qrels
of the chosen split judge each unit that holds a piece of a question's
evidence, with the piece's gain as its score. Peer libraries (bm25s,
rank-bm25, pyserini...) and the pipeline's own ``source: beir`` corpora can
then be run on exactly the same documents and judgements. The output is
generated data: write it outside the repository (or under work/), never
commit it.

Usage:
    .venv/bin/python benchmarks/export_beir.py --output work/beir/solar_system
    .venv/bin/python benchmarks/export_beir.py --output /tmp/solar_paragraphs --unit paragraphs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from rag.corpus.beir import DEFAULT_SPLIT, EXPORT_UNITS, export_collection  # noqa: E402
from rag.corpus.beir_files import write_beir_collection  # noqa: E402
from rag.corpus.documents import parse_markdown  # noqa: E402
from rag.labels import locate_spans  # noqa: E402
from rag.question_tables import read_questions  # noqa: E402


def parse_arguments(arguments: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--output", type=Path, required=True, help="collection folder to write")
    parser.add_argument("--unit", choices=EXPORT_UNITS, default="sections", help="what a BEIR document is")
    parser.add_argument("--split", default=DEFAULT_SPLIT, help="name of the qrels split (qrels/<split>.tsv)")
    parser.add_argument("--documents", type=Path, default=PROJECT / "resources/solar_system/documents")
    parser.add_argument("--questions", type=Path, default=PROJECT / "resources/solar_system/questions.yaml")
    return parser.parse_args(arguments)


def export(arguments: argparse.Namespace) -> dict[str, Path]:
    paths = sorted(arguments.documents.glob("*.md"))
    if not paths:
        raise SystemExit(f"{arguments.documents}: no *.md documents")
    documents = [parse_markdown(path.read_text(encoding="utf-8"), path.name) for path in paths]
    questions = read_questions(arguments.questions)
    answerable = [question for question in questions if question.answerable]
    collection = export_collection(documents, answerable, locate_spans(answerable, documents), arguments.unit)
    files = write_beir_collection(arguments.output, collection, arguments.split)
    print(
        f"{len(collection.documents)} {arguments.unit} of {len(documents)} documents, "
        f"{len(collection.queries)} queries, {len(collection.judgements)} judgements -> {arguments.output}"
    )
    return files


if __name__ == "__main__":
    export(parse_arguments())
