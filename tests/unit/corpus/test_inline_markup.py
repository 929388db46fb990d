"""The linear-time inline markup functions against the regular expressions they replace.

The regular expressions are the independent implementation: on every input
both must give the same text, so the bundled corpus parses exactly as before,
and only the time differs (quadratic before, linear now; see
benchmarks/adversarial_parsing.py for the 1 MB timings).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.corpus.documents import parse_markdown
from rag.documents.inline_markup import (
    ACTIVE_ELEMENTS,
    remove_active_elements,
    remove_comments,
    remove_tags,
    unwrap_emphasis,
    unwrap_links,
    unwrap_reference_links,
)

REFERENCE = {
    remove_tags: (re.compile(r"<[^>\n]+>"), ""),
    unwrap_links: (re.compile(r"!?\[([^\]]*)\]\([^)]*\)"), r"\1"),
    unwrap_reference_links: (re.compile(r"!?(?<![\w\]])\[([^\]]*)\]\[[^\]]*\]"), r"\1"),
    unwrap_emphasis: (re.compile(r"(\*\*|__|\*|_|`)(?=\S)(.+?)(?<=\S)\1"), r"\2"),
    remove_comments: (re.compile(r"<!--.*?-->", re.DOTALL), ""),
    remove_active_elements: (
        re.compile(rf"<({ACTIVE_ELEMENTS})\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL),
        "",
    ),
}
PIECES = ["<", ">", "[", "]", "(", ")", "!", "*", "**", "_", "__", "`", " ", "\n", "a", "b c", "-->", "<!--"]
PIECES += ["a[0]", "_[", "][", "x!["]
PIECES += ["<script>", "</script>", "<STYLE x>", "</style >", "<svg/>", "</svg>", "<scripts>", "\u00a0", "é"]
MARKUP = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@pytest.mark.parametrize("function", list(REFERENCE), ids=lambda function: function.__name__)
@settings(max_examples=400, deadline=None)
@given(text=MARKUP)
def test_each_function_gives_what_its_regular_expression_gives(function, text):
    pattern, replacement = REFERENCE[function]
    assert function(text) == pattern.sub(replacement, text)


@pytest.mark.parametrize(
    "text",
    [
        "See [Ceres](ceres.md) and ![a moon](moon.png), **bold**, *em*, `code`, __strong__ and _em_.",
        "a <b>bold</b> <br/> <> <a\nb> [x] (y) [x](y [z](w)",
        "snake_case_name and 2 * 3 * 4 and ** spaced ** and `a` `b`",
        "<!-- hidden --> shown <script>steal()</script> <SCRIPT src=x></script > <style>",
    ],
)
def test_ordinary_markup_is_unchanged(text):
    for function, (pattern, replacement) in REFERENCE.items():
        assert function(text) == pattern.sub(replacement, text), function.__name__


@pytest.mark.parametrize(
    "unit",
    ["[", "*a ", "`x ", "<a ", "<!-", "_a ", "![", "<script>", "**a", "[a](", "<!--", "[a][", "{a}`", "]["],
)
def test_a_megabyte_of_repeated_markup_parses(unit):
    """Completion only; the time (under 1 s each) is measured by benchmarks/adversarial_parsing.py."""
    text = "# Title\n\n" + unit * (1_000_000 // len(unit)) + "\n\nThe end.\n"
    document = parse_markdown(text, "hostile.md", default_access="public")
    assert document.title == "Title"
    assert document.blocks[-1].text == "The end."
