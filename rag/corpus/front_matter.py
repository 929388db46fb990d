"""Front matter read with certainty, or not at all.

A document's front matter decides who may read it (``access``), so a reading
that is merely plausible is not good enough: a duplicate key that YAML
resolves by "last one wins", an alias that expands to gigabytes, a tag that
constructs something other than text, or a line separator YAML honours and
the fence search does not, would each let the document say one thing and the
index store another. Everything here fails closed with one line naming the
file and line.

The YAML is checked event by event first (linear in its length, nothing
expanded), and only then constructed by PyYAML's safe loader, so an alias
bomb is refused before any alias is followed.
"""

from __future__ import annotations

import re

import yaml

# Characters PyYAML takes for line breaks (next line, line and paragraph
# separator) and the ones some editors do (vertical tab, form feed), none of
# which the fence search splits on: in front matter they are errors.
OTHER_LINE_SEPARATORS = "\x0b\x0c\x85\u2028\u2029"
_OTHER_SEPARATOR = re.compile(f"[{OTHER_LINE_SEPARATORS}]")
MERGE_KEY = "<<"


class FrontMatterError(ValueError):
    """Front matter that cannot be read with certainty; the message is ``line N: what``."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")
        self.line = line
        self.problem = problem


def other_line_separator(text: str) -> int | None:
    """The position of the first line separator other than LF, CRLF or CR, or None."""
    match = _OTHER_SEPARATOR.search(text)
    return None if match is None else match.start()


def _event_line(event: yaml.Event, first_line: int) -> int:
    return first_line + event.start_mark.line


def check_events(text: str, first_line: int) -> dict[tuple[str, ...], int]:
    """Refuse, before constructing anything, what plain scalars, lists and maps do not need.

    ``first_line`` is the file's line number of the YAML's first line. Refused:
    anchors and aliases, explicit tags (``!!python/object``, ``!!binary``, even
    ``!!str``), flow-style mappings (``{a: 1}``), the merge key ``<<``, and a
    key used twice in one mapping. Flow-style lists (``tags: [a, b]``) are
    plain lists and stay allowed. Keys must be plain scalars.

    Returns every key's line by its path (the top-level key first; a list
    adds nothing to the path), so an error about a key can name its line.
    """
    # One frame per open collection: its path, and for a mapping the keys
    # seen, the last key and whether the next scalar is a key.
    frames: list[dict] = []
    lines: dict[tuple[str, ...], int] = {}
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            line = _event_line(event, first_line)
            if isinstance(event, yaml.AliasEvent):
                raise FrontMatterError(line, f"an alias (*{event.anchor}); write the value out instead")
            anchor = getattr(event, "anchor", None)
            if anchor is not None:
                raise FrontMatterError(line, f"an anchor (&{anchor}); front matter takes plain values only")
            tag = getattr(event, "tag", None)
            if tag is not None:  # only an explicit tag in the text sets one
                raise FrontMatterError(line, f"a tag ({tag}); front matter takes plain values only")
            frame = frames[-1] if frames else None
            mapping = frame is not None and frame["keys"] is not None
            expecting_key = mapping and frame["expect_key"]
            if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                if expecting_key:
                    raise FrontMatterError(line, "a key that is a list or mapping; keys are plain words")
                if isinstance(event, yaml.MappingStartEvent) and event.flow_style:
                    raise FrontMatterError(
                        line, "a flow-style mapping ({...}); write one 'key: value' per line"
                    )
                path: tuple[str, ...] = ()
                if frame is not None:
                    path = (*frame["path"], frame["last"]) if mapping else frame["path"]
                if mapping:
                    frame["expect_key"] = True
                is_mapping = isinstance(event, yaml.MappingStartEvent)
                frames.append(
                    {"keys": {} if is_mapping else None, "expect_key": True, "path": path, "last": ""}
                )
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                frames.pop()
            elif isinstance(event, yaml.ScalarEvent) and mapping:
                if expecting_key:
                    key = event.value
                    if key == MERGE_KEY and event.style is None:
                        raise FrontMatterError(line, "a merge key (<<); write the keys out instead")
                    if key in frame["keys"]:
                        raise FrontMatterError(
                            line, f"key {key!r} appears twice (first on line {frame['keys'][key]})"
                        )
                    frame["keys"][key] = line
                    frame["last"] = key
                    lines.setdefault((*frame["path"], key), line)
                frame["expect_key"] = not expecting_key
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = first_line + mark.line if mark is not None else first_line
        problem = " ".join(str(getattr(error, "problem", None) or error or "not valid YAML").split())
        raise FrontMatterError(line, f"front matter is not valid YAML ({problem})") from None
    return lines


def key_lines(text: str, first_line: int) -> dict[tuple[str, ...], int]:
    """Every key's line by its path, for front matter that :func:`load_front_matter` accepted."""
    return check_events(text, first_line)


def load_front_matter(text: str, first_line: int) -> object:
    """The YAML value of a front matter block, checked by :func:`check_events` first.

    ``first_line`` is the file's line number of ``text``'s first line; every
    error names the file's line, not the block's.
    """
    position = other_line_separator(text)
    if position is not None:
        line = first_line + text.count("\n", 0, position)
        raise FrontMatterError(
            line, f"a line separator other than LF, CRLF or CR (U+{ord(text[position]):04X})"
        )
    check_events(text, first_line)
    try:
        return yaml.safe_load(text)
    except (yaml.YAMLError, ValueError) as error:
        # PyYAML raises ValueError (no mark) for a timestamp such as 2026-13-45.
        mark = getattr(error, "problem_mark", None)
        line = first_line + mark.line if mark is not None else first_line - 1
        problem = " ".join(str(getattr(error, "problem", None) or error or "not valid YAML").split())
        raise FrontMatterError(line, f"front matter is not valid YAML ({problem})") from None
