"""A user's own corpus through the grid (issue 16).

Pure functions first (question checks, normalisation, what the readers keep
and count, which experiments can run, progress lines), then the pipeline on
folders built in a temporary directory and run with
``snakemake -s <checkout>/Snakefile -d <tmp> --configfile <tmp>/my.yaml``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rag.corpus.beir import judged_questions
from rag.corpus.documents import parse_markdown_counted
from rag.corpus.folders import parse_text, read_document, skipped_setting
from rag.corpus.questions import corpus_question_problems, question_problems
from rag.documents.access_metadata import DocumentError
from rag.documents.blocks import Block, Document
from rag.documents.passages import normalize_passage
from rag.evaluation.statistics import questions_by_type
from rag.labels import LabelError, Question, locate_spans, parse_questions
from rag.pipeline.experiments import (
    figures_corpus,
    grounding_corpus,
    ivf_tradeoff_warning,
    unlabelled_corpora,
)
from rag.progress import Progress, format_duration, progress_line
from tests.unit.corpus.test_beir import QRELS, QUERIES, write_collection
from tests.workdir import PROJECT, snakemake

SCHEMA = yaml.safe_load((PROJECT / "workflow/schemas/questions.schema.yaml").read_text())
NBSP, THIN = "\u00a0", "\u2009"

# --------------------------------------------------------------------------
# The question file, checked before any job
# --------------------------------------------------------------------------

FIVE_MISTAKES = [
    {"id": "no-text", "type": "number", "evidence": [{"spans": ["Vesta"]}]},  # 1: no 'question'
    {"id": "bad-key", "question": "Q?", "evidence": [{"spans": [{"doc": "a", "text": "x"}]}]},  # 2
    {"id": "bad-gain", "question": "Q?", "evidence": [{"spans": ["x"], "gain": -1}]},  # 3
    {"id": "bad-gain", "question": "Again?", "answerable": False},  # 4: duplicate id
    {"id": "answered", "question": "Q?", "answerable": False, "evidence": [{"spans": ["x"]}]},  # 5
]


def test_every_mistake_is_reported_at_once_with_question_and_key():
    problems = question_problems(FIVE_MISTAKES, "qs.yaml", SCHEMA)
    assert problems == [
        "qs.yaml: question 'no-text': 'question' is required",
        "qs.yaml: question 'bad-key'['evidence'][0]['spans'][0]: unknown key 'doc'; "
        "allowed keys: document, text",
        "qs.yaml: question 'bad-gain'['evidence'][0]['gain']: must be greater than 0, got -1",
        "qs.yaml: question 'bad-gain'['id']: duplicate id, also question #3",
        "qs.yaml: question 'answered'['evidence']: an unanswerable question must not have evidence",
    ]


def test_the_previous_rounds_doc_key_is_one_line_saying_where_it_moved():
    legacy = [
        {
            "id": f"q{number}",
            "question": "Q?",
            "evidence": [{"doc": "a", "spans": ["x"]}, {"doc": "b", "spans": ["y"]}],
        }
        for number in range(20)
    ]
    assert question_problems(legacy, "qs.yaml", SCHEMA) == [
        "qs.yaml: question 'q0'['evidence'][0]['doc'] and 39 more evidence pieces use the previous format's "
        "'doc:' key; the document moved into each span as 'document:' (spans: [{text: ..., document: ...}]), "
        "see docs/corpus-format.md"
    ]


def test_a_valid_file_with_custom_types_has_no_problems():
    questions = [
        {"id": "a", "question": "How wide?", "type": "number", "evidence": [{"spans": ["4,880 km"]}]},
        {
            "id": "b",
            "question": "Who?",
            "type": "Person names",
            "answer": "Piazzi",
            "evidence": [{"spans": ["x"]}],
        },
        {"id": "c", "question": "Unknown?", "type": "unanswerable", "answerable": False},
    ]
    assert question_problems(questions, "qs.yaml", SCHEMA) == []
    assert question_problems({"questions": questions}, "qs.yaml", SCHEMA) == []
    assert [q.type for q in parse_questions(questions, "qs.yaml")] == [
        "number",
        "Person names",
        "unanswerable",
    ]


def test_span_documents_are_checked_when_the_corpus_is_known():
    questions = [{"id": "a", "question": "Q?", "evidence": [{"spans": [{"document": "mars", "text": "x"}]}]}]
    assert question_problems(questions, "qs.yaml", SCHEMA, documents={"venus"}) == [
        "qs.yaml: question 'a'['evidence'][0]['spans'][0]['document']: unknown document 'mars'; "
        "the corpus has 1 documents"
    ]


def test_files_that_are_not_question_lists(tmp_path):
    assert question_problems({"items": []}, "qs.yaml", SCHEMA) == [
        "qs.yaml: expected a list of questions (or a 'questions:' list), got dict"
    ]
    broken = tmp_path / "broken.yaml"
    broken.write_text("- id: a\n  question: [unclosed\n")

    def load(path):
        return yaml.safe_load(Path(path).read_text())

    corpora = {
        "one": {"source": "markdown", "questions": str(broken)},
        "two": {"source": "markdown", "questions": str(tmp_path / "missing.yaml")},
        "three": {"source": "markdown"},  # unlabelled: nothing to check
    }
    problems = corpus_question_problems(corpora, SCHEMA, load)
    assert len(problems) == 2
    assert problems[0].startswith(f"{broken}: not valid YAML (line 3)")
    assert problems[1] == f"config['corpora']['two']['questions']: no such file {tmp_path / 'missing.yaml'}"


# --------------------------------------------------------------------------
# Spans match after the parser's normalisation
# --------------------------------------------------------------------------


def test_normalisation_folds_unicode_spaces_and_compatibility_forms():
    assert (
        normalize_passage(f" 1,550{NBSP}km\u202fwide,{THIN}a\u00adb ﬁne\n\tend ")
        == "1,550 km wide, ab fine end"
    )


def test_spans_with_no_break_spaces_match_the_parsed_text():
    document, _ = parse_markdown_counted(
        f"# Mercury\n\nIt has a diameter of 4,880{NBSP}km today.\n", "mercury.md"
    )
    assert document.blocks[0].text == "It has a diameter of 4,880 km today."
    questions = parse_questions(
        [{"id": "size", "question": "How wide?", "evidence": [{"spans": [f"diameter of 4,880{NBSP}km"]}]}],
        "q",
    )
    [location] = locate_spans(questions, [document])
    assert document.full_text[location.start : location.end] == "diameter of 4,880 km"


def test_a_missing_span_is_reported_with_the_closest_passage_and_all_at_once():
    document = Document(
        "mars",
        "Mars",
        "1",
        (Block((), "Mars has two moons. Phobos orbits closer than Deimos does. The sky is red."),),
    )
    questions = parse_questions(
        [
            {"id": "a", "question": "?", "evidence": [{"spans": ["Phobos orbits nearer than Deimos"]}]},
            {"id": "b", "question": "?", "evidence": [{"spans": [{"document": "venus", "text": "x"}]}]},
        ],
        "q",
    )
    with pytest.raises(LabelError) as error:
        locate_spans(questions, [document])
    assert str(error.value).split("\n  ") == [
        "2 evidence span problem(s):",
        "question 'a': evidence span 'Phobos orbits nearer than Deimos' not found in any document; "
        "closest passage in 'mars': 'Phobos orbits closer than Deimos does.'",
        "question 'b': evidence span 'x' names unknown document 'venus'",
    ]


def test_questions_by_type_lists_custom_types_after_the_bundled_ones():
    questions = [
        Question("a", "?", "zeta"),
        Question("b", "?", "fact"),
        Question("c", "?", "alpha"),
        Question("d", "?", "zeta"),
    ]
    table = questions_by_type(questions, "mine")
    assert table["type"].tolist() == ["fact", "alpha", "zeta", "(answerable)", "(all)"]
    assert table["questions"].tolist() == [1, 1, 2, 4, 4]


# --------------------------------------------------------------------------
# No text lost silently
# --------------------------------------------------------------------------

MARKDOWN = """# Mercury

Mercury completes one orbit every 88 days. Its
4. orbital resonance was found by radar.

The steps:

1. Radar echoes were timed in 1965.
2. The rotation period followed.
- A bullet item.

| a | b |
|---|---|
| 1 | 2 |

```
code line
```

## References

- Someone (2001). A paper.
"""


def test_markdown_keeps_list_items_and_tables_by_default_and_counts_what_it_skips():
    document, skipped = read_document(MARKDOWN, "notes/mercury.md", "markdown")
    assert document.doc_id == "mercury"
    assert [block.text for block in document.blocks] == [
        "Mercury completes one orbit every 88 days. Its 4. orbital resonance was found by radar.",
        "The steps:",
        "1. Radar echoes were timed in 1965.",
        "2. The rotation period followed.",
        "A bullet item.",
        "a | b / 1 | 2",
        "a: 1; b: 2.",
    ]
    assert [block.table_rows for block in document.blocks[-2:]] == [((0, 5), (8, 13)), ((0, 11),)]
    assert skipped == {"tables": 0, "lists": 0, "references": 1, "code": 1}
    # skip: [tables] stays possible, and counts the table's three lines.
    _, skipped = parse_markdown_counted(MARKDOWN, "mercury.md", ("tables", "references", "code"))
    assert skipped == {"tables": 3, "lists": 0, "references": 1, "code": 1}


def test_skipping_everything_keeps_wrapped_prose_and_counts_the_list():
    document, skipped = parse_markdown_counted(
        MARKDOWN, "mercury.md", ("tables", "lists", "references", "code")
    )
    assert [block.text for block in document.blocks] == [
        "Mercury completes one orbit every 88 days. Its 4. orbital resonance was found by radar.",
        "The steps:",
    ]
    assert skipped == {"tables": 3, "lists": 3, "references": 1, "code": 1}


def test_keeping_tables_code_and_references():
    document, skipped = parse_markdown_counted(MARKDOWN, "mercury.md", ())
    texts = [block.text for block in document.blocks]
    assert "a | b / 1 | 2" in texts and "a: 1; b: 2." in texts and "code line" in texts
    assert document.blocks[-1] == Block(("References",), "Someone (2001). A paper.")
    assert skipped == dict.fromkeys(("tables", "lists", "references", "code"), 0)


def test_skip_settings_per_source():
    assert skipped_setting({"source": "markdown"}, "c") == ("references", "code")
    assert skipped_setting({"source": "html"}, "c") == ("lists", "references", "code")
    assert skipped_setting({"source": "html", "skip": ["tables", "lists", "references", "code"]}, "c")
    assert skipped_setting({"source": "wikipedia"}, "c") == ("tables", "lists", "references", "code")
    assert skipped_setting({"source": "text"}, "c") == ()
    assert skipped_setting({"source": "markdown", "skip": ["lists", "tables"]}, "c") == ("tables", "lists")
    with pytest.raises(DocumentError, match=r"c\['skip'\]: cannot skip 'images'"):
        skipped_setting({"source": "markdown", "skip": ["images"]}, "c")
    with pytest.raises(DocumentError, match="always skips"):
        skipped_setting({"source": "html", "skip": []}, "c")
    with pytest.raises(DocumentError, match="always skips"):
        skipped_setting({"source": "wikipedia", "skip": ["lists", "references", "code"]}, "c")


def test_plain_text_paragraphs_are_separated_by_blank_lines():
    document = parse_text(f"\ufeffFirst  paragraph\nwraps here.\n \nSecond{NBSP}one.\n\n\n", "notes")
    assert [block.text for block in document.blocks] == ["First paragraph wraps here.", "Second one."]
    assert (document.doc_id, document.title, document.blocks[0].section) == ("notes", "notes", ())
    with pytest.raises(DocumentError, match="notes: no paragraphs"):
        parse_text("\n \n", "notes")


def test_html_files_go_through_the_article_reader():
    page = (
        "<html><head><title>Ignored &amp; title</title></head><body><h1>Ceres &amp; Vesta</h1>"
        "<p>Ceres is the largest body of the belt.</p><ul><li>a list</li></ul>"
        "<table><tr><td>1</td></tr></table><h2>Orbit</h2><p>It orbits in 4.6 years.</p>"
        "<pre>code</pre><h2>References</h2><p>A cited work.</p></body></html>"
    )
    document, skipped = read_document(page, "pages/ceres.html", "html")
    assert (document.doc_id, document.title) == ("ceres", "Ceres & Vesta")
    assert [(block.section, block.text) for block in document.blocks] == [
        ((), "Ceres is the largest body of the belt."),
        ((), "1"),
        (("Orbit",), "It orbits in 4.6 years."),
    ]
    assert skipped == {"tables": 0, "lists": 1, "references": 1, "code": 1}
    document, skipped = read_document(
        page, "pages/ceres.html", "html", ("tables", "lists", "references", "code")
    )
    assert [block.text for block in document.blocks] == [
        "Ceres is the largest body of the belt.",
        "It orbits in 4.6 years.",
    ]
    assert skipped == {"tables": 1, "lists": 1, "references": 1, "code": 1}


# --------------------------------------------------------------------------
# Experiments that need something, BEIR queries, progress
# --------------------------------------------------------------------------


def test_experiments_degrade_with_one_warning_naming_what_they_need():
    ids = {"solar_system": {"pluto-day", "swap"}, "mine": {"q1"}}
    assert grounding_corpus(None, ["mine", "solar_system"], ids, ["pluto-day", "swap"], ids.get) == (
        "solar_system",
        None,
    )
    # The corpus holding most of the cases' questions; a misspelled id is the caller's error.
    assert (
        grounding_corpus(None, ["mine", "solar_system"], ids, ["pluto-day", "nope"], ids.get)[0]
        == "solar_system"
    )
    corpus, warning = grounding_corpus(None, ["mine"], ids, ["pluto-day"], ids.get)
    assert corpus is None
    assert warning == (
        "config['grounding']: left out, it needs a span-labelled corpus with the questions ['pluto-day']; "
        "no enabled corpus has any of them"
    )
    assert grounding_corpus("solar_system", ["mine"], {"solar_system", "mine"}, [], ids.get)[1] == (
        "config['grounding']: left out, it needs the span-labelled corpus 'solar_system', which is disabled"
    )
    assert ivf_tradeoff_warning("solar_system", ["mine"], {"mine"}) == (
        "config['ivf_tradeoff']: left out, it needs the span-labelled corpus 'solar_system', "
        "which is not in the config"
    )
    assert ivf_tradeoff_warning("mine", ["mine"], {"mine"}) is None
    assert figures_corpus("solar_system", ["mine"], {"solar_system", "mine"}) == (
        "mine",
        "config['figures']['corpus']: the chunk-level corpus 'solar_system' is disabled; "
        "the figures draw 'mine' instead",
    )
    assert figures_corpus(None, ["mine"], {"mine"}) == ("mine", None)
    assert unlabelled_corpora(
        {"a": {"source": "markdown"}, "b": {"source": "beir"}, "c": {"source": "text", "questions": "q"}}
    ) == ["a"]


def test_only_judged_beir_queries_are_ranked_unless_asked():
    questions = [Question("q1", "a"), Question("q4", "b", answerable=False)]
    assert [q.question_id for q in judged_questions(questions)] == ["q1"]
    assert [q.question_id for q in judged_questions(questions, "all")] == ["q1", "q4"]


def test_progress_lines_give_rate_and_time_left():
    assert progress_line("encoded", 1_000, 5_000, 20.0) == (
        "encoded: 1,000/5,000 (20 %), 50.0 per second, about 1 min 20 s left"
    )
    assert progress_line("ranked", 300, 300, 2.0) == "ranked: 300/300 (100 %), 150.0 per second, done"
    assert [format_duration(s) for s in (4.4, 65, 3725)] == ["4 s", "1 min 05 s", "1 h 02 min"]
    times = iter([0.0, 1.0, 12.0, 13.0, 14.0])
    lines: list[str] = []
    progress = Progress("ranked", 3_000, lines.append, every=10, clock=lambda: next(times))
    for done in (1_000, 2_000, 2_500, 3_000):
        progress.update(done)
    assert lines == [
        "ranked: 2,000/3,000 (67 %), 166.7 per second, about 6 s left",
        "ranked: 3,000/3,000 (100 %), 214.3 per second, done",
    ]
    quiet: list[str] = []
    Progress("ranked", 10, quiet.append).update(10)
    assert quiet == []


# --------------------------------------------------------------------------
# The pipeline on a user's folders
# --------------------------------------------------------------------------

MERCURY = f"""# Mercury

Mercury has a diameter of 4,880{NBSP}km and is the smallest planet.

## Orbit

Mercury completes one orbit every 87.97{NBSP}Earth days.

Its discoveries, in order:

1. Radar echoes were timed in 1965.
4. The spin of 58.6{NBSP}days was measured by radar.
"""
CERES = """# Ceres

Ceres orbits in the asteroid belt between Mars and Jupiter.

## Discovery

Giuseppe Piazzi found Ceres in 1801 at Palermo.
"""
VESTA = """# Vesta

Vesta is the second largest body of the belt, with a mean diameter of 525 km.
"""
QUESTIONS = [
    {
        "id": "mercury-size",
        "question": "How wide is Mercury?",
        "type": "number",
        "evidence": [{"spans": [{"document": "mercury", "text": f"a diameter of 4,880{NBSP}km"}]}],
    },
    {
        "id": "mercury-spin",
        "question": "How long does Mercury take to spin once?",
        "type": "number",
        "evidence": [{"spans": [f"The spin of 58.6{NBSP}days"]}],
    },
    {
        "id": "ceres-finder",
        "question": "Who found Ceres?",
        "type": "person",
        "evidence": [{"spans": ["Giuseppe Piazzi found Ceres"]}],
    },
    {"id": "vesta-moons", "question": "How many moons does Vesta have?", "type": "none", "answerable": False},
]


def write_markdown_corpus(folder: Path, questions: list[dict] = QUESTIONS) -> None:
    (folder / "documents").mkdir(parents=True)
    for name, text in (("mercury", MERCURY), ("ceres", CERES), ("vesta", VESTA)):
        (folder / "documents" / f"{name}.md").write_text(text, encoding="utf-8")
    (folder / "questions.yaml").write_text(yaml.safe_dump(questions, allow_unicode=True), encoding="utf-8")


def copy_example(name: str, workdir: Path) -> Path:
    my_config = workdir / "my.yaml"
    shutil.copy(PROJECT / "config" / "examples" / f"{name}.yaml", my_config)
    return my_config


def run(workdir: Path, my_config: Path, *arguments: str, check: bool = True):
    return snakemake(workdir, "--configfile", str(my_config), *arguments, check=check)


@pytest.fixture(scope="module")
def markdown_run(tmp_path_factory):
    """config/examples/markdown.yaml on a user's three Markdown files, run once."""
    workdir = tmp_path_factory.mktemp("own_markdown")
    write_markdown_corpus(workdir / "my_corpus")
    my_config = copy_example("markdown", workdir)
    dry = run(workdir, my_config, "-n", "--cores", "1")
    result = run(workdir, my_config, "--cores", "2")
    return workdir, dry.stdout + dry.stderr, result.stdout + result.stderr


@pytest.mark.pipeline
def test_a_user_markdown_corpus_runs_alone(markdown_run):
    workdir, dry, log = markdown_run
    assert "extended by additional config" not in dry
    assert "solar_system" not in dry and "resources/" not in dry
    assert "work/parsed/mine.parquet" in dry
    assert not (workdir / "results").exists()  # the example names its own folder
    metrics = pd.read_csv(workdir / "my_results" / "metrics.csv")
    assert set(metrics["corpus"]) == {"mine"}
    from rag.retrieval.dense.sentence_embeddings import missing_packages

    # MiniLM and its fusion with the stemmed BM25 only with the dense extra (optional: true).
    dense = {"minilm", "rrf_bm25_stem_minilm"} if not missing_packages("all-MiniLM-L6-v2") else set()
    assert set(metrics["retriever"]) == {"bm25", "bm25_stem", "lsa", "rrf_bm25_lsa", *dense}
    recall = metrics[(metrics.metric == "recall") & (metrics.k == 5) & (metrics.retriever == "bm25")]
    assert recall.set_index("chunker")["value"].to_dict() == {"sections": 1.0, "sentences100": 1.0}
    by_type = pd.read_csv(workdir / "my_results" / "metrics_by_type.csv")
    assert set(by_type["type"]) == {"number", "person"}
    questions = pd.read_csv(workdir / "my_results" / "questions_by_type.csv")
    assert questions.set_index("type")["questions"].to_dict() == {
        "none": 1,
        "number": 2,
        "person": 1,
        "(answerable)": 3,
        "(all)": 4,
    }


@pytest.mark.pipeline
def test_the_numbered_list_is_kept_and_nothing_is_skipped_silently(markdown_run):
    workdir, _, _ = markdown_run
    parsed = pd.read_parquet(workdir / "work" / "parsed" / "mine.parquet")
    texts = parsed[parsed.doc_id == "mercury"]["text"].tolist()
    assert "4. The spin of 58.6 days was measured by radar." in texts
    assert "Mercury has a diameter of 4,880 km and is the smallest planet." in texts
    statistics = pd.read_csv(workdir / "my_results" / "corpus_statistics.csv")
    assert list(statistics.columns[-4:]) == [
        "skipped_tables",
        "skipped_lists",
        "skipped_references",
        "skipped_code",
    ]
    assert statistics[statistics.doc_id == "(all)"][list(statistics.columns[-4:])].values.tolist() == [
        [0, 0, 0, 0]
    ]
    indexes = pd.read_csv(workdir / "my_results" / "index_statistics.csv")
    from rag.retrieval.dense.sentence_embeddings import missing_packages

    # Every fitted or encoded index of the example: MiniLM's only with the dense extra.
    fitted = ["bm25", "bm25_stem", "lsa", *(["minilm"] if not missing_packages("all-MiniLM-L6-v2") else [])]
    expected = sorted(
        (chunker, retriever) for chunker in ("sections", "sentences100") for retriever in fitted
    )
    assert sorted(zip(indexes.chunker, indexes.retriever, strict=True)) == expected
    assert (indexes["index_bytes"] > 0).all() and "seconds" not in indexes.columns
    # The job's seconds measure the machine: they sit in the timings folder, keyed like the sizes.
    timings = pd.read_csv(workdir / "my_results" / "timings" / "index_statistics.csv")
    assert timings[["corpus", "chunker", "retriever"]].equals(indexes[["corpus", "chunker", "retriever"]])
    assert (timings["seconds"] >= 0).all()


@pytest.mark.pipeline
def test_five_mistakes_are_reported_before_any_job(tmp_path):
    write_markdown_corpus(tmp_path / "my_corpus", FIVE_MISTAKES)
    result = run(tmp_path, copy_example("markdown", tmp_path), "--cores", "1", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "5 problem(s) in the question files" in output
    for expected in question_problems(FIVE_MISTAKES, "my_corpus/questions.yaml", SCHEMA):
        assert expected in output
    assert "Traceback" not in output
    assert not (tmp_path / "work").exists() and not (tmp_path / "my_results").exists()


@pytest.mark.pipeline
def test_a_beir_folder_ranks_only_the_judged_queries(tmp_path):
    write_collection(tmp_path / "my_beir")
    run(tmp_path, copy_example("beir", tmp_path), "--cores", "2")
    judged = sorted({query for query, _, _ in QRELS})
    assert sorted(QUERIES) != judged  # queries.jsonl holds an unjudged query
    ranking = pd.read_parquet(tmp_path / "work" / "rankings" / "mine" / "whole" / "bm25.parquet")
    assert set(ranking["question_id"]) == set(judged) - {"q3"}  # q3 matches no document
    questions = pd.read_parquet(tmp_path / "work" / "questions" / "mine.parquet")
    assert sorted(questions["question_id"]) == judged
    beir = pd.read_csv(tmp_path / "my_results" / "beir_metrics.csv")
    assert set(beir["corpus"]) == {"mine"}
    assert not (tmp_path / "results").exists()


@pytest.mark.pipeline
def test_text_and_html_folders_and_an_unlabelled_corpus(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "ceres.txt").write_text(
        f"Ceres orbits the Sun every 4.6{NBSP}years.\n\nGiuseppe Piazzi found it in 1801.\n"
    )
    (tmp_path / "notes" / "vesta.txt").write_text("Vesta is bright.\n")
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "mars.html").write_text(
        "<h1>Mars</h1><p>Mars has two small moons.</p><ul><li>Phobos</li></ul><h2>Moons</h2>"
        "<p>Phobos orbits closer than Deimos.</p>"
    )
    (tmp_path / "pages" / "venus.htm").write_text("<title>Venus</title><p>Venus is hot and cloudy.</p>")
    (tmp_path / "questions.yaml").write_text(
        yaml.safe_dump(
            [
                {
                    "id": "near",
                    "question": "Which moon is closer?",
                    "type": "moons",
                    "evidence": [{"spans": ["Phobos orbits closer"]}],
                }
            ]
        )
    )
    config = {
        "results": "out",
        "corpora": {
            "notes": {"source": "text", "documents": "notes"},
            "pages": {"source": "html", "documents": "pages", "questions": "questions.yaml"},
        },
        "chunkers": {"sentences20": {"kind": "sentences", "max_words": 20}},
        "retrievers": {"bm25": {"kind": "bm25"}, "tfidf": {"kind": "tfidf"}},
        "evaluation": {"depth": 5, "ks": [1, 5]},
    }
    my_config = tmp_path / "my.yaml"
    my_config.write_text(yaml.safe_dump(config))
    run(tmp_path, my_config, "--cores", "2")
    statistics = pd.read_csv(tmp_path / "out" / "corpus_statistics.csv")
    rows = statistics.set_index(["corpus", "doc_id"])
    assert rows.loc[("notes", "(all)"), "paragraphs"] == 3
    assert rows.loc[("pages", "mars"), "skipped_lists"] == 1
    assert rows.loc[("pages", "venus"), "title"] == "Venus"
    indexes = pd.read_csv(tmp_path / "out" / "index_statistics.csv")
    assert sorted(zip(indexes.corpus, indexes.retriever, strict=True)) == [
        ("notes", "bm25"),
        ("notes", "tfidf"),
        ("pages", "bm25"),
        ("pages", "tfidf"),
    ]
    metrics = pd.read_csv(tmp_path / "out" / "metrics.csv")
    assert set(metrics["corpus"]) == {"pages"}  # the unlabelled corpus is never evaluated
    assert set(pd.read_csv(tmp_path / "out" / "questions_by_type.csv")["corpus"]) == {"pages"}
    parsed = pd.read_parquet(tmp_path / "work" / "parsed" / "notes.parquet")
    assert "Ceres orbits the Sun every 4.6 years." in parsed["text"].tolist()


@pytest.mark.pipeline
def test_the_bundled_grid_with_its_corpus_off_degrades_with_warnings(tmp_path):
    config = yaml.safe_load((PROJECT / "config.yaml").read_text())
    config["corpora"]["solar_system"]["enabled"] = False
    config["corpora"]["mine"] = {
        "source": "markdown",
        "documents": "my_corpus/documents",
        "questions": "my_corpus/questions.yaml",
    }
    config["results"] = "my_results"
    write_markdown_corpus(tmp_path / "my_corpus")
    my_config = tmp_path / "my.yaml"
    my_config.write_text(yaml.safe_dump(config, sort_keys=False))
    result = run(tmp_path, my_config, "-n", "--cores", "1")
    output = result.stdout + result.stderr
    assert (
        "WARNING: config['grounding']: left out, it needs a span-labelled corpus with the questions" in output
    )
    assert (
        "WARNING: config['ivf_tradeoff']: left out, it needs the span-labelled corpus 'solar_system', "
        "which is disabled" in output
    )
    assert (
        "WARNING: config['figures']['corpus']: the chunk-level corpus 'solar_system' is disabled; "
        "the figures draw 'mine' instead" in output
    )
    assert "solar_system" not in output.replace("'solar_system'", "")
    assert "my_results/grounding.csv" not in output and "my_results/ivf_tradeoff.csv" not in output
    assert "my_results/metrics.csv" in output


@pytest.mark.pipeline
def test_summaries_without_lead_sections_are_left_out_with_a_warning(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "alpha.md").write_text("# Alpha\n\n## Orbit\n\nAlpha orbits every 88 days.\n")
    (tmp_path / "docs" / "beta.md").write_text("# Beta\n\n## Moons\n\nBeta has 42 known moons.\n")
    questions = [
        {"id": "a", "question": "How long is Alpha's orbit?", "evidence": [{"spans": ["Alpha orbits"]}]},
        {"id": "b", "question": "How many moons has Beta?", "evidence": [{"spans": ["42 known moons"]}]},
    ]
    (tmp_path / "questions.yaml").write_text(yaml.safe_dump(questions))
    config = {
        "corpora": {"nolead": {"source": "markdown", "documents": "docs", "questions": "questions.yaml"}},
        "chunkers": {"s20": {"kind": "sentences", "max_words": 20}},
        "retrievers": {"bm25": {"kind": "bm25"}},
        "evaluation": {"depth": 5, "ks": [1, 5]},
        "answers": {"k": 2},
    }
    my_config = tmp_path / "my.yaml"
    my_config.write_text(yaml.safe_dump(config))
    targets = ("results/answers_summary.csv", "results/routing_metrics.csv")
    result = run(tmp_path, my_config, "--cores", "2", *targets)
    output = result.stdout + result.stderr
    for experiment in ("answers from lead summaries left out, they need", "routing left out, it needs"):
        assert f"WARNING: corpus 'nolead': {experiment} lead sections" in output
    summary = pd.read_csv(tmp_path / "results" / "answers_summary.csv")
    assert set(summary["chunker"]) == {"s20"}  # answers from the ranking, none from summaries
    assert pd.read_csv(tmp_path / "results" / "routing_metrics.csv").empty


def test_progress_reports_slow_work_whatever_the_item_count():
    """Three documents that take seconds each: lines every few seconds, not only from 2,000 items."""
    times = iter([0.0, 6.0, 7.0, 13.0])
    lines: list[str] = []
    progress = Progress("indexed documents", 3, lines.append, every=5, clock=lambda: next(times))
    for done in (1, 2, 3):
        progress.update(done)
    assert lines == [
        "indexed documents: 1/3 (33 %), 0.2 per second, about 12 s left",
        "indexed documents: 3/3 (100 %), 0.2 per second, done",
    ]
