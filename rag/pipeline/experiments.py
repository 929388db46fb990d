"""Which experiments a configuration can run, and which corpora are labelled.

The grid's side experiments (grounding cases, the IVF trade-off, the figures)
name a corpus, and the grounding cases name questions of it. When a user runs
their own corpus, with the bundled one off or absent, those inputs do not
exist: the experiment is then left out with one warning that names what it
needs, instead of stopping the whole run with a configuration error. A name
that exists nowhere in the configuration is still a mistake and stays an
error elsewhere; only inputs that are switched off or labelled differently are
degraded here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence


def is_labelled(entry: Mapping) -> bool:
    """Whether a corpus has questions: a labelled file, or a BEIR collection's queries."""
    return entry["source"] == "beir" or "questions" in entry


def unlabelled_corpora(corpora: Mapping[str, Mapping]) -> list[str]:
    """Corpora without questions: parsed, chunked and indexed, never evaluated."""
    return [name for name, entry in corpora.items() if not is_labelled(entry)]


def _describe(corpus: str, configured: Collection[str]) -> str:
    return "is disabled" if corpus in configured else "is not in the config"


def grounding_corpus(
    named: str | None,
    span_corpora: Sequence[str],
    configured: Collection[str],
    needed_questions: Iterable[str],
    question_ids: Callable[[str], Collection[str]],
) -> tuple[str | None, str | None]:
    """The corpus the grounding cases run on, or None and a warning saying why not.

    ``named`` is the section's own ``corpus`` (None when it names none);
    ``question_ids(corpus)`` gives a corpus's question ids. A named, enabled
    corpus is used as it is (a missing question there is a mistake the caller
    reports). Without a name, the span-labelled corpus holding most of the
    questions the cases name is used (the first on a tie), so adding a corpus
    of one's own beside the bundled one changes nothing, and a misspelled
    question id among correct ones is still reported by the caller. Only when
    no enabled corpus holds any of them is the experiment left out.
    """
    needed = sorted(set(needed_questions))
    if named is not None:
        if named in span_corpora:
            return named, None
        return None, (
            f"config['grounding']: left out, it needs the span-labelled corpus {named!r}, "
            f"which {_describe(named, configured)}"
        )
    held = {corpus: len(set(needed) & set(question_ids(corpus))) for corpus in span_corpora}
    best = max(span_corpora, key=lambda corpus: held[corpus], default=None)
    if best is not None and held[best] > 0:
        return best, None
    return None, (
        "config['grounding']: left out, it needs a span-labelled corpus with the questions "
        f"{needed}; no enabled corpus has any of them"
    )


def ivf_tradeoff_warning(
    named: str | None, span_corpora: Sequence[str], configured: Collection[str]
) -> str | None:
    """Why the IVF trade-off on the labelled chunks cannot run, or None when it can."""
    if named is None:
        return None if span_corpora else "config['ivf_tradeoff']: left out, it needs a span-labelled corpus"
    if named in span_corpora:
        return None
    return (
        f"config['ivf_tradeoff']: left out, it needs the span-labelled corpus {named!r}, "
        f"which {_describe(named, configured)}"
    )


def figures_corpus(
    named: str | None, chunk_corpora: Sequence[str], configured: Collection[str]
) -> tuple[str | None, str | None]:
    """The corpus the figures draw, and a warning when the named one is off.

    The figures follow the configuration: without a name they draw the first
    chunk-level corpus. A named corpus that is disabled or absent is replaced
    by that first corpus, with a warning; without any chunk-level corpus
    there is nothing to draw (None).
    """
    if named is not None and named in chunk_corpora:
        return named, None
    fallback = chunk_corpora[0] if chunk_corpora else None
    if named is None:
        return fallback, None
    instead = f"the figures draw {fallback!r} instead" if fallback else "the figures are left out"
    return fallback, (
        f"config['figures']['corpus']: the chunk-level corpus {named!r} "
        f"{_describe(named, configured)}; {instead}"
    )
