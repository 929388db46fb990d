"""The hardening table of docs/contracts.md, from tests that could fail (issue 27's "Must show").

Each family of the issue is a list of test selections; each selection is
marked ``error`` (the case must be refused with one clear line), ``result``
(the case must give the correct result) or ``data`` (the case must lose
nothing). The script runs them with pytest, counts every parametrised case,
and writes the table between the markers in docs/contracts.md:

- a passing ``error`` case is a clear error, a passing ``result`` or ``data``
  case a correct result;
- a failing ``error`` case is a silent acceptance when pytest says the error
  was not raised, else a traceback; a failing ``result`` case is a wrong
  result; a failing ``data`` case is data lost.

Usage (from the repository root; the pipeline cases take a few minutes):
    PYTHONPATH=. .venv/bin/python docs/contracts_table.py
    PYTHONPATH=. .venv/bin/python docs/contracts_table.py --check   # fail if the table in the doc differs
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "docs" / "contracts.md"
BEGIN, END = "<!-- hardening table: begin -->", "<!-- hardening table: end -->"
U = "tests/unit/"

# family -> (title, [(test module, name pattern, kind)])
FAMILIES: dict[int, tuple[str, list[tuple[str, str, str]]]] = {
    1: (
        "Access for every source",
        [
            (U + "corpus/test_access_model.py", "an_html_access_not_read", "error"),
            (U + "corpus/test_access_model.py", "takes_the|declares|carry_access|built_without", "result"),
            ("tests/pipeline/test_pipeline_access.py", ".", "result"),
        ],
    ),
    2: (
        "Front matter read with certainty",
        [
            (U + "corpus/test_front_matter.py", "refused|error_naming", "error"),
            (U + "corpus/test_front_matter.py", "still_read", "result"),
            (U + "test_hardening.py", "bad_front_matter", "error"),
            (U + "test_hardening.py", "recognised_in_every_form", "result"),
        ],
    ),
    3: (
        "rag ask and access",
        [
            (U + "ask/test_cli.py", "never_sends_a_restricted_chunk", "result"),
            (U + "ask/test_cli.py", "unknown_access_level", "error"),
        ],
    ),
    4: (
        "The key and plain http",
        [
            (U + "models/test_chat_client.py", "proxy_receives_nothing", "result"),
            (
                U + "models/test_chat_client.py",
                "plain_http_to_another_host|missing_key|credentials_in_the_url",
                "error",
            ),
            (U + "models/test_hosted_faults.py", "key_|credentials|redact", "result"),
        ],
    ),
    5: (
        "Downloads complete or absent",
        [
            (
                U + "corpus/test_wikipedia_faults.py",
                "refused|never_cached|cut|interrupted|redirect_loop",
                "error",
            ),
            (U + "corpus/test_wikipedia_faults.py", "accepted|replaced|removed_and|within_the_limit", "data"),
        ],
    ),
    6: (
        "Bounded parsing",
        [
            (U + "corpus/test_inline_markup.py", ".", "result"),
            (U + "corpus/test_front_matter.py", "alias_bomb", "error"),
            (U + "test_hardening_limits.py", "unclosed_html|unknown_name|closable_markup", "result"),
            (U + "test_hardening_limits.py", "size_cap", "error"),
        ],
    ),
    7: (
        "Every mistake before any job",
        [
            (
                U + "test_planning_checks.py",
                "working_folder_are_refused|fusion|optional|finite|duplicate",
                "error",
            ),
            (U + "test_planning_checks.py", "merge_key|strictly", "error"),
            (U + "test_planning_checks.py", "kept|keep_every", "result"),
            (U + "test_hardening.py", "impossible_gain|enormous_beir_score", "error"),
            (U + "test_hardening_limits.py", "access_level", "error"),
            (U + "test_hardening_limits.py", "no_chunk_has|warns_nothing", "result"),
        ],
    ),
    8: (
        "One clean line, escaped",
        [
            (U + "test_job_housekeeping.py", "one_escaped_line|one_line_without_frames", "error"),
            (U + "test_job_housekeeping.py", "visible_escapes", "result"),
            (U + "corpus/test_access_model.py", "control_characters|beir_id_with_an_escape", "error"),
            (U + "test_hardening.py", "visible|control_characters", "result"),
        ],
    ),
    9: (
        "Housekeeping and deadlines",
        [
            (U + "test_job_housekeeping.py", "kill_9|keeps_the_mode|fsynced", "data"),
            (U + "test_planning_checks.py", "link_leading_out", "error"),
            (U + "test_planning_checks.py", "link_inside", "result"),
            (U + "test_hardening.py", "partial", "data"),
            (U + "models/test_hosted.py", "deadline|retry_after_beyond", "error"),
            (U + "models/test_chat_client.py", "whole_call_deadline|beyond_the_deadline", "error"),
            (U + "corpus/test_wikipedia_faults.py", "bounds_the_whole_call", "error"),
        ],
    ),
    # Issue 42: the model path hardened like the rest.
    10: (
        "Response cache",
        [
            (
                U + "models/test_response_cache.py",
                "malformed_reply|damaged_entry|unreadable_entry|only_regular_files|put_refuses|corrupted_entry",
                "error",
            ),
            (
                U + "models/test_response_cache.py",
                "error_then_a_healthy|failed_completions_call|refused_field|committed_entry|sealing|fuzz",
                "result",
            ),
            (U + "models/test_response_cache.py", "cannot_be_written|folder_under_a_file|umask", "data"),
        ],
    ),
    11: (
        "Model client",
        [
            (U + "models/test_model_paths.py", ".", "result"),
            (U + "models/test_model_client_fuzz.py", ".", "result"),
            (U + "models/test_hosted.py", "usable_content|plain_http_with_the_key", "error"),
            (U + "models/test_hosted.py", "loopback_by_name|default_timeout", "result"),
            (U + "models/test_local_server.py", "refused|exits_is_one_line", "error"),
            (U + "models/test_local_server.py", "dies_with_the_job|error_inside|stopped_after", "data"),
            (
                U + "models/test_local_server.py",
                "never_on_the_command_line|threads|real_server|deterministic",
                "result",
            ),
            (U + "ask/test_ask_generators.py", "one_line|redefine", "error"),
            (U + "ask/test_ask_generators.py", "bundled|timeout", "result"),
        ],
    ),
    12: (
        "Prompt headers",
        [(U + "answering/test_prompt_headers.py", ".", "result")],
    ),
    13: (
        "compare",
        [
            (
                U + "evaluation/test_compare_results.py",
                "refused|said_not_skipped|one_line_naming_it",
                "error",
            ),
            (
                U + "evaluation/test_compare_results.py",
                "headline|shows_its_new|changed_means|without_metrics_csv|compare_clean|or_are_valid",
                "result",
            ),
        ],
    ),
    14: (
        "results folders",
        [
            (U + "test_output_folders.py", "refused|elsewhere|judged_by", "error"),
            (U + "test_output_folders.py", "whole_path|not_be_it|kept|passes|folder_apart", "result"),
            ("tests/pipeline/test_pipeline_output_folders.py", "writes_nothing", "error"),
            ("tests/pipeline/test_pipeline_output_folders.py", "plans_as_before", "result"),
        ],
    ),
    15: (
        "planning checks",
        [
            (U + "test_planning_refusals.py", "kept|check_plans|any_|only_when", "result"),
            (U + "test_planning_refusals.py", "refused|checked", "error"),
        ],
    ),
    16: (
        "Authorization: one schema, one view",
        [
            (U + "corpus/test_access_schema.py", "is_an_error|as_a_problem", "error"),
            (U + "corpus/test_access_schema.py", "no_lookalikes|wins", "result"),
            (U + "retrieval/test_one_view.py", "programming_error", "error"),
            (U + "retrieval/test_one_view.py", "readable|one_rule|spells|agree|reads_nothing", "result"),
            (U + "ask/test_ask_caller_options.py", "error_naming|refused|checked", "error"),
            (U + "ask/test_ask_caller_options.py", "accepted_iff|refuses_the_names", "result"),
            (U + "ask/test_revocation.py", "mtime|cp_p", "result"),
            (U + "corpus/test_manifest.py", ".", "result"),
            ("tests/pipeline/test_pipeline_revocation.py", "older_mtime", "result"),
        ],
    ),
    17: (
        "Gates to every model",
        [
            (U + "models/test_gate_paths.py", ".", "result"),
            (U + "models/test_gate.py", "refused", "error"),
            (
                U + "models/test_gate.py",
                "resolved_address|admits_only|loopback_exactly|declares|public_caller",
                "result",
            ),
            (U + "models/test_bundled_ours.py", "refused|must_be_held", "error"),
            (U + "models/test_bundled_ours.py", "never_cached", "result"),
            (U + "test_escaping_blank.py", ".", "result"),
        ],
    ),
    18: (
        "Traces",
        [
            (U + "ask/test_ask_trace_file.py", "refused|stops", "error"),
            (U + "ask/test_ask_trace_file.py", "appended_whole|regular_file_outside", "result"),
        ],
    ),
    19: (
        "Structured replies",
        [
            (U + "models/test_structured_replies.py", "markers|unknown_keys|refused", "error"),
            (U + "models/test_structured_replies.py", "never_faithful|exactly|unchanged", "result"),
        ],
    ),
    20: (
        "Judges",
        [
            (
                U + "answering/test_judging.py",
                "not_exactly_one_verdict|read_strictly|several_words|no_verdict_is_counted",
                "error",
            ),
            (
                U + "answering/test_judging.py",
                "stays_data|inside_its_data_block|unambiguous_verdict|json_schema_enum|"
                "share_of_the_verdicts|development_labels_only|partly_is_never|kappa_near_zero",
                "result",
            ),
        ],
    ),
    21: (
        "Model assembly",
        [
            (U + "models/test_model_assembly.py", "refused|one_line|rehashed", "error"),
            (U + "models/test_model_assembly.py", "handed", "result"),
        ],
    ),
}
COLUMNS = [
    "family",
    "cases tried",
    "clear errors",
    "correct results",
    "tracebacks",
    "silent acceptances",
    "wrong results",
    "data lost",
]


def run_cases(modules: list[str]) -> dict[tuple[str, str], tuple[bool, str]]:
    """(module, test name with parameters) -> (passed, failure message), from one pytest run."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"]
        subprocess.run([*command, *modules], cwd=ROOT, capture_output=True, text=True, check=False)
        tree = ElementTree.parse(report)
    cases = {}
    for case in tree.iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if case.find("skipped") is not None:
            continue
        message = "" if problem is None else (problem.get("message") or "")
        cases[(module, case.get("name", ""))] = (problem is None, message)
    return cases


def table(cases: dict[tuple[str, str], tuple[bool, str]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for number, (title, selections) in FAMILIES.items():
        counts: Counter[str] = Counter()
        counted: set[tuple[str, str]] = set()
        for module, pattern, kind in selections:
            for (case_module, name), (passed, message) in sorted(cases.items()):
                if case_module != module or (case_module, name) in counted or not re.search(pattern, name):
                    continue
                counted.add((case_module, name))
                counts["tried"] += 1
                if passed:
                    counts["error" if kind == "error" else "result"] += 1
                elif kind == "error":
                    counts["silent" if "DID NOT RAISE" in message else "traceback"] += 1
                else:
                    counts["wrong" if kind == "result" else "lost"] += 1
        row = [f"{number}. {title}", counts["tried"], counts["error"], counts["result"]]
        row += [counts["traceback"], counts["silent"], counts["wrong"], counts["lost"]]
        lines.append("| " + " | ".join(map(str, row)) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if docs/contracts.md holds another table")
    arguments = parser.parse_args(argv)
    modules = sorted({module for _, selections in FAMILIES.values() for module, _, _ in selections})
    text = table(run_cases(modules))
    print(text)
    document = DOCUMENT.read_text(encoding="utf-8")
    start, end = document.index(BEGIN) + len(BEGIN), document.index(END)
    updated = document[:start] + "\n" + text + "\n" + document[end:]
    if arguments.check:
        return 0 if updated == document else 1
    DOCUMENT.write_text(updated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
