"""The check of the grounding section of config.yaml: its defaults and its cases.

Beside the grounding experiment so that changing it changes one package; the
config plan (:mod:`rag.pipeline.config`) checks its names against the rest of the plan.
"""

from __future__ import annotations

from collections.abc import Mapping

from rag.grounding.trigram import COMPLETION_TOKENS
from rag.kinds import ConfigError

# The grounding experiments: which ranking feeds the generator, how many
# chunks it reads, how sharply the retrieval prior trusts the ranking, and how
# long memory may talk. The cases and the swap are data without defaults.
GROUNDING_PARAMETERS: dict[str, object] = {
    "chunker": "sentences100",
    "retriever": "bm25",
    "k": 5,
    "temperature": 0.5,
    "max_tokens": COMPLETION_TOKENS,
    # llm entries of config['generators'] that run the cases beside the trigram model.
    "generators": [],
}


def canonical_grounding(entry: Mapping, where: str = "config['grounding']") -> dict:
    """The grounding section with defaults filled in and its cases in name order.

    Sorting the cases means reordering them in ``config.yaml`` re-runs nothing;
    a repeated name is an error, since the name identifies a case's rows.
    """
    canonical: dict[str, object] = {
        key: entry.get(key, default) for key, default in GROUNDING_PARAMETERS.items()
    }
    canonical["generators"] = list(canonical["generators"])
    if "corpus" in entry:
        canonical["corpus"] = entry["corpus"]
    seen: set[str] = set()
    for index, case in enumerate(entry["cases"]):
        if case["name"] in seen:
            raise ConfigError(f"{where}['cases'][{index}]['name']: duplicate case name {case['name']!r}")
        seen.add(case["name"])
    canonical["cases"] = sorted((dict(case) for case in entry["cases"]), key=lambda case: case["name"])
    canonical["swap"] = dict(entry["swap"])
    return canonical
