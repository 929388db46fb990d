"""The Markdown reader: what is indexed, what is skipped, and its errors."""

from __future__ import annotations

import pytest

from rag.corpus.documents import parse_markdown
from rag.documents.access_metadata import DocumentError

SOURCE = """---
id: venus
version: 7
url: https://example.org/venus
updated: 2026-02-03
tags: [planet, inner]
access: internal
---

# Venus

The *second* planet, see [the notes](notes.html) and <b>this</b>.
It continues on a second line.

## Orbit

Venus orbits every 224.7 days.

| quantity | value |
|---|---|
| period | 224.7 d |

- a bullet that is not prose
1. a numbered item

```
code is skipped
```

### Rotation

It spins backwards.

## References

- A book that is not indexed.

Not indexed either.
"""


def test_front_matter_blocks_and_paths():
    document = parse_markdown(SOURCE, "venus.md")
    assert (document.doc_id, document.title, document.version) == ("venus", "Venus", "7")
    assert document.url == "https://example.org/venus"
    assert document.updated == "2026-02-03"
    assert document.tags == ("planet", "inner")
    assert document.access == "internal"
    assert [(block.section, block.text) for block in document.blocks] == [
        ((), "The second planet, see the notes and this. It continues on a second line."),
        (("Orbit",), "Venus orbits every 224.7 days."),
        (("Orbit", "Rotation"), "It spins backwards."),
    ]


def test_offsets_slice_the_full_text():
    document = parse_markdown(SOURCE, "venus.md")
    text = document.full_text
    for block, (start, end) in zip(document.blocks, document.block_offsets(), strict=True):
        assert text[start:end] == block.text


def test_content_version_without_front_matter():
    first = parse_markdown("# A\n\nSome text.\n", "a.md")
    second = parse_markdown("# A\n\nOther text.\n", "a.md")
    assert first.doc_id == "a" and first.version != second.version


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("---\nid: x\ntenant: [acme]\n---\n# X\n\nText.\n", "'tenant' must be a tenant name"),
        ("<!-- only a comment -->\n", "no paragraphs"),
        ("# Only a title\n", "no paragraphs"),
        ("---\nid: [unclosed\n---\n# X\n\nText.\n", "not valid YAML"),
        ("# X\n\n```\nnever closed\n", "never closed"),
    ],
)
def test_errors_name_the_document(source, message):
    with pytest.raises(DocumentError, match=message) as error:
        parse_markdown(source, "broken.md")
    assert "broken.md" in str(error.value)
