"""One schema for the metadata that says who may read a document, shared by every source.

Markdown front matter, an HTML page's ``<meta>`` elements, a BEIR record
and its ``metadata`` object, a corpus's ``default_*`` settings (and a PDF's
document information) all state the same three fields: ``access`` (one of
:data:`rag.documents.access_metadata.ACCESS_LEVELS`), ``tenant`` and ``acl`` (group
names). They are read here, by one function (:func:`read_access_metadata`),
so that no source can read a spelling another refuses.

A key is one of the fields only when it is spelled exactly so. A key that is
not, but looks like one, is an error naming the file and line, never a
warning and never "no such field" (which would leave the document open to
its corpus's default): "looks like" is decided on the key's *skeleton*
(:func:`skeleton`): Unicode NFKC, case folded, without the characters that
render as nothing (format, combining and control characters, the
default-ignorable code points, spaces) and without the separators ``-``,
``_``, ``.`` and ``:``; a skeleton that is a field's name or one of its
forms (:data:`FORMS`, a plural too: ``acls``, ``groups``), or one edit away
from ``access`` or ``tenant`` (``acess``, ``tennant``), is a lookalike. So
``ACL``, ``Tenant``, ``acls``, ``groups``, ``ac\\u200bl`` and ``ａｃｌ`` are
errors, each naming the field it looks like.

A document's stated value always wins: the corpus's defaults fill only the
fields a document does not state.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass

# The access levels a document may declare. Filters select among them; a value
# outside this set is a typo that would make a restricted document match nothing
# (or everything), so it is an error at parsing.
ACCESS_LEVELS: tuple[str, ...] = ("public", "internal", "restricted")
# Access of a document that declares none, unless its corpus says otherwise
# (``default_access``). Restricted, so a forgotten key never publishes a document.
DEFAULT_ACCESS = "restricted"
# Tenant and group names (a document's ``tenant`` and ``acl``): a letter, digit
# or underscore first, then those or . : @ + / -, at most 100 characters. No
# spaces or commas: an HTML page lists its groups in one comma-separated
# <meta name="acl">, and a name must read the same in every source.
PRINCIPAL_NAME = re.compile(r"\w[\w.:@+/-]{0,99}")


class DocumentError(ValueError):
    """A document that cannot be parsed; the message names it."""


def _shown(value: object, characters: int = 60) -> str:
    """A front matter value as quoted in an error: its repr, cut so the message stays one short line."""
    text = repr(value)
    return text if len(text) <= characters else text[: characters - 3] + "..."


def check_tenant(value: object, what: str) -> str:
    """A tenant name (:data:`PRINCIPAL_NAME`); ``what`` names the file or key in the error."""
    if not isinstance(value, str) or not PRINCIPAL_NAME.fullmatch(value):
        raise DocumentError(
            f"{what} must be a tenant name (letters, digits, _ . : @ + / -, no spaces or commas), "
            f"got {_shown(value)}"
        )
    return value


def check_acl(value: object, what: str) -> tuple[str, ...]:
    """Group names as a sorted tuple without repeats; an empty list is refused.

    Refused, not read as "every group": a document that means every group of its
    tenant leaves ``acl`` out, so ``acl: []`` is more likely a list emptied by
    mistake than a decision to open the document.
    """
    if not isinstance(value, list | tuple) or not value:
        raise DocumentError(
            f"{what} must be a non-empty list of group names (leave it out to let every group of the "
            f"tenant read the document), got {_shown(value)}"
        )
    for group in value:
        if not isinstance(group, str) or not PRINCIPAL_NAME.fullmatch(group):
            raise DocumentError(
                f"{what}: {_shown(group)} is not a group name (letters, digits, _ . : @ + / -, "
                "no spaces or commas)"
            )
    return tuple(sorted(set(value)))


@dataclass(frozen=True)
class DocumentDefaults:
    """What a corpus gives a document that states no access level, tenant or groups."""

    access: str = DEFAULT_ACCESS
    tenant: str = ""
    acl: tuple[str, ...] = ()


def check_access_level(value: object, what: str) -> str:
    """A default access level from a corpus setting, checked against :data:`ACCESS_LEVELS`."""
    if not isinstance(value, str) or value not in ACCESS_LEVELS:
        raise DocumentError(f"{what} must be one of {', '.join(ACCESS_LEVELS)}, got {_shown(value)}")
    return value


ACCESS_FIELDS: tuple[str, ...] = ("access", "tenant", "acl")
# The skeletons (without a plural ending) each field is taken to be meant by.
FORMS: dict[str, frozenset[str]] = {
    "access": frozenset({"access", "accesslevel", "accessclass"}),
    "tenant": frozenset({"tenant", "tenantid", "tenantname"}),
    "acl": frozenset({"acl", "group", "accesscontrollist", "allowedgroup", "accessgroup"}),
}
# Fields long enough that a one-letter slip still names them unambiguously.
_EDITED = ("access", "tenant")
# Code points that render as nothing yet are neither format nor combining
# characters (Unicode's Default_Ignorable_Code_Point beside category Cf):
# the combining grapheme joiner, the Hangul fillers, the Khmer inherent
# vowels, the Mongolian variation selectors, the variation selectors and tags.
_IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_SEPARATORS = frozenset("-_.: \t")


class AccessMetadataError(DocumentError):
    """A key that looks like an access field but is not spelled as one; the message names file and line."""


@dataclass(frozen=True)
class AccessFields:
    """Who may read a document, and which of the three fields the document itself stated."""

    access: str
    tenant: str = ""
    acl: tuple[str, ...] = ()
    stated: frozenset[str] = frozenset()


def _blank(character: str) -> bool:
    """Whether a character renders as nothing (or as a space) inside a key."""
    if unicodedata.category(character) in ("Cf", "Cc", "Mn", "Me", "Zs", "Zl", "Zp"):
        return True
    code = ord(character)
    return any(low <= code <= high for low, high in _IGNORABLE_RANGES)


def skeleton(key: str) -> str:
    """A key as it reads: NFKC, case folded, without blank characters and separators."""
    folded = unicodedata.normalize("NFKC", key).casefold()
    folded = unicodedata.normalize("NFKC", folded)  # casefold can undo NFKC (e.g. "ǰ")
    return "".join(c for c in folded if not _blank(c) and c not in _SEPARATORS)


def _one_edit(word: str, target: str) -> bool:
    """Whether ``word`` is ``target`` with one letter inserted, removed, changed or two swapped."""
    if word == target or abs(len(word) - len(target)) > 1:
        return False
    if len(word) == len(target):
        differ = [i for i, (a, b) in enumerate(zip(word, target, strict=True)) if a != b]
        return len(differ) == 1 or (
            len(differ) == 2 and differ[1] == differ[0] + 1 and word[differ[0]] == target[differ[1]]
        )
    short, long = sorted((word, target), key=len)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def lookalike(key: object) -> str | None:
    """The field (``access``, ``tenant``, ``acl``) a key that is not exactly one looks like, else None."""
    if not isinstance(key, str) or key in ACCESS_FIELDS:
        return None
    bare = skeleton(key)
    stems = (bare, bare.removesuffix("s"), bare.removesuffix("es"), bare.removesuffix("ss"))
    for candidate in stems:
        for name, forms in FORMS.items():
            if candidate in forms:
                return name
    return next((name for name in _EDITED if _one_edit(bare, name)), None)


def field_of(key: object) -> str | None:
    """The field a key names or looks like: itself when exact, its lookalike, else None."""
    if isinstance(key, str) and key in ACCESS_FIELDS:
        return key
    return lookalike(key)


def lookalike_message(key: str, name: str, where: str) -> str:
    """The one line of an error for a key that looks like field ``name``."""
    return (
        f"{where}: key {_shown(key)} looks like the access field {name!r} but is not spelled exactly "
        f"so (case, plural, invisible or compatibility characters); write '{name}', or rename the key, "
        "so the document cannot be read as open"
    )


Lines = Mapping[tuple[str, ...], int]


def _at(where: str, lines: Lines | None, path: tuple[str, ...]) -> str:
    line = None if lines is None else lines.get(path)
    return where if line is None else f"{where}, line {line}"


def check_lookalikes(
    mapping: Mapping, where: str, lines: Lines | None = None, containers: tuple[str, ...] = ()
) -> None:
    """Refuse, at any depth, a key that looks like an access field, and an exact one that is nested.

    ``lines`` maps a key's path (top-level key first) to its line in the file.
    ``containers`` are the top-level keys whose mapping may hold the exact
    fields (BEIR's ``metadata``); anywhere else below the top a field's exact
    name is an error too, since no reader would look there.
    """

    def walk(value: object, path: tuple[str, ...]) -> None:
        if isinstance(value, Mapping):
            for key, inner in value.items():
                inside = (*path, str(key))
                name = lookalike(key)
                if name is not None:
                    raise AccessMetadataError(lookalike_message(str(key), name, _at(where, lines, inside)))
                if key in ACCESS_FIELDS and path and not (len(path) == 1 and path[0] in containers):
                    raise AccessMetadataError(
                        f"{_at(where, lines, inside)}: the access field {key!r} is nested under "
                        f"{'.'.join(path)!r}, where no reader looks; state it at the top level"
                    )
                walk(inner, inside)
        elif isinstance(value, list | tuple):
            for inner in value:
                walk(inner, path)

    walk(mapping, ())


def _access_value(value: object, label: str) -> str:
    if not isinstance(value, str) or value not in ACCESS_LEVELS:
        raise DocumentError(f"{label} must be one of {', '.join(ACCESS_LEVELS)}, got {_shown(value)}")
    return value


def read_access_metadata(
    mapping: Mapping,
    where: str,
    defaults: DocumentDefaults | None = None,
    *,
    lines: Lines | None = None,
    label: Callable[[str], str] | None = None,
    containers: tuple[str, ...] = (),
    acl_separator: str | None = None,
) -> AccessFields:
    """The access fields a document's metadata states, else its corpus's ``defaults``.

    ``mapping`` is the document's metadata as keys and values (front matter,
    ``<meta name>`` elements, a BEIR record, a PDF's document information);
    ``where`` names the file (and line, when the whole mapping has one);
    ``lines`` gives a key's line by its path; ``label(key)`` is how a value
    error names the field (default ``"{where}: 'key'"``); ``containers`` are
    top-level keys whose mapping may state the fields too (BEIR's
    ``metadata``: a field given in both places is an error); and
    ``acl_separator`` splits an ``acl`` given as one text (HTML, PDF).
    Lookalike keys (:func:`lookalike`) are errors (:class:`AccessMetadataError`).
    """
    defaults = defaults or DocumentDefaults()
    check_lookalikes(mapping, where, lines, containers)
    label = label or (lambda key: f"{_at(where, lines, (key,))}: {key!r}")
    stated: dict[str, object] = {}
    for key in ACCESS_FIELDS:
        places = [mapping] + [
            mapping[container] for container in containers if isinstance(mapping.get(container), Mapping)
        ]
        found = [place[key] for place in places if key in place]
        if len(found) > 1:
            raise DocumentError(
                f"{_at(where, lines, (key,))}: {key!r} is given both at the top level and in "
                f"{containers[0]!r}; give it once"
            )
        if found:
            stated[key] = found[0]
    access = _access_value(stated["access"], label("access")) if "access" in stated else defaults.access
    tenant = check_tenant(stated["tenant"], label("tenant")) if "tenant" in stated else defaults.tenant
    acl = tuple(defaults.acl)
    if "acl" in stated:
        value = stated["acl"]
        if acl_separator is not None and isinstance(value, str):
            value = [group.strip() for group in value.split(acl_separator)] if value.strip() else []
        acl = check_acl(value, label("acl"))
    return AccessFields(access, tenant, acl, frozenset(stated))


# The corpus settings that give a document's fields when it states none.
DEFAULT_KEYS: dict[str, str] = {f"default_{name}": name for name in ACCESS_FIELDS}


def check_default_keys(entry: Mapping, where: str) -> None:
    """Refuse a corpus entry key that looks like ``default_access``, ``default_tenant`` or ``default_acl``.

    ``Default_Access``, ``default-acl``, ``default_groups`` and
    ``default_acls`` would otherwise be an unknown key at best, and at worst
    leave every document of the corpus without the restriction meant.
    """
    for key in entry:
        if not isinstance(key, str) or key in DEFAULT_KEYS:
            continue
        bare = skeleton(key)
        if not bare.startswith("default"):
            continue
        name = field_of(bare.removeprefix("default"))
        if name is not None:
            raise AccessMetadataError(
                f"{where}[{key!r}]: looks like the corpus setting 'default_{name}' but is not spelled "
                f"exactly so; write 'default_{name}'"
            )
