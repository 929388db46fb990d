"""``rag ask``'s retrievers, written as the pipeline writes its grid: config entries of the table of kinds.

Plain data and the table of kinds only, so that the command's help and usage
errors read them without importing numpy (rag.ask.cli), and the index
(:mod:`rag.ask.index`) builds, searches and fuses with the same behaviour and
defaults as the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag.kinds import CHUNKER_KINDS, RETRIEVER_KINDS


@dataclass(frozen=True)
class AskSetup:
    """One retriever of ``rag ask``, written as the pipeline writes its grid: config entries.

    ``chunker`` is a chunker entry and ``retrievers`` are retriever entries by
    name, exactly as they could stand in config.yaml (and pass its checks:
    tests/unit/test_ask_setups.py), so ``rag ask`` builds, searches and fuses
    with the same behaviour and defaults as the pipeline. ``fused`` names the
    fused entry whose ranking picks the sources; its components are the
    lexical ranking first, then the dense one. ``weights`` names the bm25
    entry whose idf the offline generators weigh question terms with (the
    spec's unstemmed one for every setup, so the generators do not change with
    the retriever), and ``sources`` is how many chunks reach the prompt.
    """

    chunker: dict[str, object]
    retrievers: dict[str, dict[str, object]]
    fused: str
    weights: str
    sources: int

    @property
    def lexical(self) -> str:
        """The name of the fused entry's lexical component."""
        return self.retrievers[self.fused]["components"][0]

    @property
    def dense(self) -> str:
        """The name of the fused entry's dense component (an ivf entry, or an exact dense one)."""
        return self.retrievers[self.fused]["components"][1]


# rag ask's chunks: whole sentences packed up to 60 words, each chunk headed by
# its title and section (both setups share them, and so their chunk ids).
_ASK_CHUNKER: dict[str, object] = {"kind": "sentences", "max_words": 60, "header": True}
# The spec's unstemmed BM25: the lexical half of bm25_lsa_ivf and, in every
# setup, the idf the generators weigh question terms with.
_SPEC_BM25: dict[str, object] = {"kind": "bm25", "stem": False, "k1": 1.5, "b": 0.75}

# ``rag ask``'s setups by retriever name (rag.ask.index):
# bm25_lsa_ivf is the spec's sample project, BM25 fused with 32-dimensional LSA
# searched through an IVF index of 8 lists of which 3 are probed; bm25_minilm
# fuses the stemmed BM25 of config.yaml (Anserini's k1 0.9 and b 0.4) with
# exact MiniLM search (the dense extra), which fused better on every chunk set
# of the bundled corpus (results/README.md). Plain data here, so that the
# command's help and usage errors read them without importing numpy.
ASK_SETUPS: dict[str, AskSetup] = {
    "bm25_lsa_ivf": AskSetup(
        chunker=_ASK_CHUNKER,
        retrievers={
            "bm25": _SPEC_BM25,
            "lsa32": {"kind": "lsa", "dimensions": 32, "min_df": 2},
            "lsa32_ivf": {"kind": "ivf", "base": "lsa32", "lists": 8, "probes": 3, "seed": 0},
            "bm25_lsa_ivf": {"kind": "rrf", "components": ["bm25", "lsa32_ivf"], "constant": 60},
        },
        fused="bm25_lsa_ivf",
        weights="bm25",
        sources=5,
    ),
    "bm25_minilm": AskSetup(
        chunker=_ASK_CHUNKER,
        retrievers={
            "bm25": _SPEC_BM25,
            "bm25_stem": {"kind": "bm25", "stem": True, "k1": 0.9, "b": 0.4},
            "minilm": {"kind": "embedder", "model": "all-MiniLM-L6-v2"},
            "bm25_minilm": {"kind": "rrf", "components": ["bm25_stem", "minilm"], "constant": 60},
        },
        fused="bm25_minilm",
        weights="bm25",
        sources=5,
    ),
}
# The setup ``rag ask`` falls back to without the dense extra, and whose entries
# give its whole-number options their defaults (:func:`ask_options`).
SPEC_SETUP = "bm25_lsa_ivf"


def ask_options(setup: AskSetup) -> dict[str, int]:
    """``rag ask``'s whole-number options and their defaults, read from a setup's entries.

    ``max_words`` is the chunker's size, ``lists`` and ``probes`` are its
    approximate (ivf) entry's, ``dimensions`` that entry's base's, and
    ``sources`` the setup's; each value is thus written once, in the entry.
    """
    approximate = next(
        entry for entry in setup.retrievers.values() if RETRIEVER_KINDS[entry["kind"]].role == "approximate"
    )
    return {
        "max_words": setup.chunker[CHUNKER_KINDS[setup.chunker["kind"]].size],
        "dimensions": setup.retrievers[approximate["base"]]["dimensions"],
        "lists": approximate["lists"],
        "probes": approximate["probes"],
        "sources": setup.sources,
    }


ASK_OPTIONS: dict[str, int] = ask_options(ASK_SETUPS[SPEC_SETUP])
