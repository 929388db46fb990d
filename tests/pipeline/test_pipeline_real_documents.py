"""Real-world Markdown in one attempt: every problem in one dry run, then a clean run.

tests/fixtures/real_world holds documents written the way other projects
write them: Node.js API docs (quotes, reference links, comments), pip's MyST
docs (front matter for another tool, a MyST target, roles, directives) and a
project README (setext headings, a badge, a GitHub alert, a thematic break),
beside three documents with a true mistake each and a question file with two
wrong spans. One ``snakemake -n`` must list all five problems, one per line,
and after they are fixed the corpus must run to the end the first time.
"""

from __future__ import annotations

import pandas as pd
import pytest

from rag.formats.tables import read_provenance
from tests.workdir import make_workdir, snakemake

# One expected piece of each problem's line: the file (and line) and what is wrong.
PROBLEMS = [
    "documents/changelog.md: front matter 'access' must be one of public, internal, restricted, got 'Public'",
    "documents/contributing.md, line 5: key 'tenant' appears twice (first on line 3)",
    "documents/security.md: front matter 'acl' must be a non-empty list of group names",
    "questions.yaml: question 'user-site': evidence span 'Use --user to install to the user site' occurs "
    "2 times in document 'pip-install'",
    "questions.yaml: question 'guide-kinds': evidence span 'user guide][guide] for the full list of widget "
    "kinds' not found in document 'README'; it differs in markup only (link brackets",
]
# What fixes them: (file, text, replacement).
FIXES = [
    ("documents/changelog.md", "access: Public", "access: public"),
    ("documents/contributing.md", "tenant: globex\n", ""),
    ("documents/security.md", "acl: security-team", "acl: [security-team]"),
    (
        "questions.yaml",
        "text: Use `--user` to install to the user site\n",
        "text: Use `--user` to install to the user site only when\n",
    ),
    ("questions.yaml", "text: user guide][guide] for", 'text: "[user guide][guide] for'),
    ("questions.yaml", "list of widget kinds\n", 'list of widget kinds"\n'),
]
WARNING = "front matter keys the pipeline does not use, kept as metadata: 'hide-toc' (1 file: "


@pytest.mark.pipeline
def test_one_dry_run_reports_every_problem_and_the_fixed_folder_runs_in_one_attempt(tmp_path):
    workdir = make_workdir(tmp_path / "real_world", "real_world")
    dry = snakemake(workdir, "-n", "--cores", "1", check=False)
    output = dry.stdout + dry.stderr
    assert dry.returncode == 1, output
    assert "Traceback" not in output and "\\x0a" not in output
    lines = output.splitlines()
    header = [line for line in lines if line.startswith("Error: ")]
    assert header == ["Error: ConfigError: 5 problem(s) in the question files and documents:"], output
    for problem in PROBLEMS:
        assert sum(line.startswith("  ") and problem in line for line in lines) == 1, (problem, output)
    assert not (workdir / "work").exists()

    for name, text, replacement in FIXES:
        path = workdir / name
        assert text in path.read_text(), (name, text)
        path.write_text(path.read_text().replace(text, replacement, 1))
    dry = snakemake(workdir, "-n", "--cores", "1")
    assert sum(WARNING in line for line in (dry.stdout + dry.stderr).splitlines()) == 1
    run = snakemake(workdir, "--cores", "1")
    assert sum(WARNING in line for line in (run.stdout + run.stderr).splitlines()) == 1  # listed once

    kept = read_provenance(workdir / "work" / "parsed" / "docs.parquet")["other_front_matter"]
    assert kept == {
        "documents/pip-install.md": {
            "hide-toc": "true",
            "myst": '{"html_meta": {"description": "How pip installs packages"}}',
        },
        "documents/contributing.md": {"sidebar_position": "3"},
    }

    parsed = pd.read_parquet(workdir / "work" / "parsed" / "docs.parquet")
    by_document = {doc_id: rows for doc_id, rows in parsed.groupby("doc_id")}
    readme = by_document["README"]
    assert set(readme["title"]) == {"Widget Toolkit"}  # a setext level-1 heading
    assert list(dict.fromkeys(readme["section"])) == ["", "Installation", "Usage", "Licence"]
    texts = "\n".join(parsed["text"])
    for markup in ("> ", "`", "{mod}", "][", "[!NOTE]", "(pip-install)=", "* * *", "[guide]:"):
        assert markup not in texts, markup
    assert "The alpha widget weighs 12 grams and the beta widget weighs 30 grams." in set(readme["text"])
    security = by_document["security"].iloc[0]
    assert (security["access"], security["tenant"], list(security["acl"])) == (
        "internal",
        "acme",
        ["security-team"],
    )
    assert set(by_document["fs"]["tenant"]) == {""} and all(len(acl) == 0 for acl in by_document["fs"]["acl"])
    qrels = pd.read_parquet(workdir / "work" / "qrels" / "docs" / "sentences40.parquet")
    answerable = {"fs-module", "fs-flags", "windows-drive", "requirements-parser", "user-site"}
    answerable |= {"resolver-stages", "alpha-weight", "python-version", "guide-kinds", "python-39"}
    assert set(qrels["question_id"]) == answerable  # every span copied with its markup was found
    metrics = pd.read_csv(workdir / "my_results" / "metrics.csv")
    assert set(metrics["corpus"]) == {"docs"}
