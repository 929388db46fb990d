"""An optional pretrained retriever is left out, with its dependents, when its extra is missing."""

from __future__ import annotations

import pytest

from rag.kinds import ConfigError
from rag.retrieval.config_checks import check_optional_packages, prune_unavailable
from rag.retrieval.dense import sentence_embeddings

PRETRAINED = ("embedder",)


def config(optional: bool) -> dict:
    return {
        "corpora": {"c": {}},
        "chunkers": {"s": {"kind": "sections"}},
        "retrievers": {
            "bm25": {"kind": "bm25"},
            "minilm": {"kind": "embedder", "model": "all-MiniLM-L6-v2", "optional": optional},
            "fused": {"kind": "rrf", "components": ["bm25", "minilm"]},
            "indexed": {"kind": "ivf", "base": "minilm"},
        },
        "answers": {"retrievers": ["bm25", "fused"]},
        "figures": {"compare": ["bm25", "minilm"], "retriever": "bm25"},
    }


def test_missing_extra_prunes_the_optional_retriever_and_its_dependents(monkeypatch):
    monkeypatch.setattr(sentence_embeddings, "missing_packages", lambda model: ["tokenizers"])
    pruned = config(optional=True)
    warnings = prune_unavailable(pruned, PRETRAINED)
    assert sorted(pruned["retrievers"]) == ["bm25"]
    assert pruned["answers"]["retrievers"] == ["bm25"]
    assert pruned["figures"]["compare"] == ["bm25"]
    assert any("'minilm'" in warning and "tokenizers" in warning for warning in warnings)
    assert any("'fused'" in warning for warning in warnings)
    assert any("'indexed'" in warning for warning in warnings)


def test_unmarked_retriever_still_fails_naming_the_extra(monkeypatch):
    monkeypatch.setattr(sentence_embeddings, "missing_packages", lambda model: ["tokenizers"])
    strict = config(optional=False)
    assert prune_unavailable(strict, PRETRAINED) == []
    assert "minilm" in strict["retrievers"]
    with pytest.raises(ConfigError, match=r"config\['retrievers'\]\['minilm'\].*tokenizers"):
        check_optional_packages("minilm", strict["retrievers"]["minilm"], PRETRAINED)


def test_installed_extra_keeps_everything(monkeypatch):
    monkeypatch.setattr(sentence_embeddings, "missing_packages", lambda model: [])
    kept = config(optional=True)
    assert prune_unavailable(kept, PRETRAINED) == []
    assert sorted(kept["retrievers"]) == ["bm25", "fused", "indexed", "minilm"]
