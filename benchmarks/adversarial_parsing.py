"""How long hostile documents take to read: 1 MB of repeated markup, and the YAML alias bomb.

Each Markdown input is a title, one 1 MB paragraph of a repeated unit
(``[``, ``*a ``, `` `x ``, ``<a ``, ``<!-`` and a few more) and a closing
paragraph; each HTML input is the same run inside ``<p>``. The reader must
finish (or refuse in one line) in well under a second: the regular
expressions it used before were quadratic and took 16-30 s on 40 KB. The
alias bomb is the 469-byte-class billion-laughs front matter; it must be
refused before any alias is followed, in under 1 s and 100 MB. The tests
assert completion and refusal only (tests/unit/corpus/test_inline_markup.py,
tests/unit/corpus/test_front_matter.py); the times and memory are measured here.

Usage:
    .venv/bin/python benchmarks/adversarial_parsing.py
    .venv/bin/python benchmarks/adversarial_parsing.py --megabytes 2 --output adversarial.csv
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import tracemalloc

from rag.corpus.articles import document_from_html_file
from rag.corpus.documents import parse_markdown
from rag.documents.access_metadata import DocumentError

# Inputs not run for HTML, with the reason; none since rag.corpus.articles.closable_markup
# keeps html.parser linear on runs of unclosed tags.
SLOW_HTML: dict[str, str] = {}
UNITS = ["[", "*a ", "`x ", "<a ", "<!-", "_a ", "![", "**a", "[a](", "<script>", "<!--"]


def alias_bomb() -> str:
    """Nine levels of nine aliases: about 10^9 strings once expanded."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [
        f"a{level}: &a{level} [{','.join(f'*a{level - 1}' for _ in range(9))}]" for level in range(1, 9)
    ]
    return "---\n" + "\n".join(lines) + "\n---\n# Bomb\n\nText.\n"


def measure(read, text: str, memory: bool = False) -> tuple[float, float | None, str]:
    """Seconds, peak MiB allocated (with ``memory``, which slows the run), and the outcome."""
    if memory:
        tracemalloc.start()
    started = time.perf_counter()
    try:
        read(text)
        outcome = "parsed"
    except DocumentError as error:
        outcome = "refused: " + str(error)[:70]
    seconds = time.perf_counter() - started
    peak = None
    if memory:
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return seconds, peak, outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=1.0, help="size of each run of markup")
    parser.add_argument("--output", help="also write the rows to this CSV file")
    arguments = parser.parse_args(argv)
    size = int(arguments.megabytes * 1_000_000)
    rows = []
    for unit in UNITS:
        run = unit * (size // len(unit))
        markdown = f"# Title\n\n{run}\n\nThe end.\n"
        html = f"<title>Title</title><p>{run}</p><p>The end.</p>"
        for reader, text, read in (
            ("markdown", markdown, lambda text: parse_markdown(text, "hostile.md", default_access="public")),
            ("html", html, lambda text: document_from_html_file(text, "hostile", "public")),
        ):
            row = {"input": f"{size:,} bytes of {unit!r}", "reader": reader, "seconds": "", "peak_mib": ""}
            if reader == "html" and unit in SLOW_HTML:
                rows.append({**row, "outcome": SLOW_HTML[unit]})
                continue
            seconds, _, outcome = measure(read, text)
            rows.append({**row, "seconds": f"{seconds:.3f}", "outcome": outcome})
    bomb = alias_bomb()
    seconds, peak, outcome = measure(lambda text: parse_markdown(text, "bomb.md"), bomb, memory=True)
    front_matter_bytes = len(bomb.split("---\n")[1].encode())
    rows.append(
        {
            "input": f"alias bomb ({front_matter_bytes} bytes of front matter)",
            "reader": "markdown",
            "seconds": f"{seconds:.3f}",
            "peak_mib": f"{peak:.1f}",
            "outcome": outcome,
        }
    )
    writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    if arguments.output:
        with open(arguments.output, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
