"""The grounding job: every configured case and the swap on one ranking, trigram model first.

The trigram model's memory is trained on the grounding caller's view of the
corpus (:func:`memory_texts`): text a caller may not read must not come back
out of the model's memory any more than out of its sources.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rag.grounding.cases import (
    CaseResult,
    RetrievedChunks,
    SwapResult,
    configured_cases,
    document_texts,
    ranked_rows,
    run_case,
    run_swap,
    swap_from_config,
    top_chunks,
)
from rag.grounding.served_model import ServedModel, run_served_case, run_served_swap
from rag.grounding.trigram import LanguageModel, train
from rag.retrieval.filters import allowed_by_config


def memory_texts(parsed: Mapping[str, Sequence], view: Mapping, caller: str) -> list[str]:
    """The parsed blocks ``caller`` may read (its ``view``, a filter's configuration), in corpus order.

    ``parsed`` holds the parsed corpus's text and the metadata columns a filter
    reads (rag.retrieval.filters.METADATA_COLUMNS); the access check is the
    filters' own, block by block. A caller who may read no block is an error.
    """
    allowed = allowed_by_config(parsed, view, caller)
    if not allowed.any():
        raise ValueError(f"grounding caller {caller!r} may read none of the corpus's {len(allowed)} blocks")
    return [text for text, keep in zip(parsed["text"], allowed, strict=True) if keep]


def train_memory(parsed: Mapping[str, Sequence], view: Mapping, caller: str) -> LanguageModel:
    """The trigram memory of what ``caller`` may read (:func:`memory_texts`)."""
    return train(memory_texts(parsed, view, caller))


def run_grounding(
    memory: LanguageModel,
    settings: Mapping,
    parsed: Mapping[str, Sequence],
    chunks: Mapping[str, Sequence],
    ranking: Mapping[str, Sequence],
    served: Sequence[ServedModel] = (),
    admit: Callable[[Sequence[str]], None] | None = None,
) -> tuple[list[CaseResult], list[SwapResult]]:
    """Run the canonical grounding section's cases and its swap on the ranked chunks.

    ``parsed`` holds the parsed corpus's doc_id and text columns (the wrong
    answers' documents are checked against them), ``chunks`` the chunk set's
    chunk_id and text, ``ranking`` a rankings table's columns; each question
    is conditioned on its top ``settings["k"]`` chunks. The cases run in the
    configured order, first with the trigram model, then with each served
    model, so the trigram rows stay first and unchanged. ``admit`` (each served
    model's gate, rag.models.gate) sees every question's chunk ids before any
    case runs, and refuses the run when one is outside the caller's view.
    """
    k, temperature = settings["k"], settings["temperature"]
    chunk_texts = dict(zip(chunks["chunk_id"], chunks["text"], strict=True))
    ranked = ranked_rows(ranking["question_id"], ranking["rank"], ranking["chunk_id"], ranking["score"])

    def retrieved(question_id: str) -> RetrievedChunks:
        return top_chunks(ranked.get(question_id, []), chunk_texts, k, question_id)

    cases = configured_cases(settings, document_texts(parsed["doc_id"], parsed["text"]))
    swap = swap_from_config(settings["swap"])
    if admit is not None and served:
        for question_id in [*(case.question_id for case in cases), swap.question_id]:
            admit(retrieved(question_id).chunk_ids)
    results = [
        run_case(memory, case, retrieved(case.question_id), temperature, settings["max_tokens"])
        for case in cases
    ]
    swaps = [run_swap(memory, swap, retrieved(swap.question_id), temperature)]
    for model in served:
        results += [run_served_case(model, case, retrieved(case.question_id), temperature) for case in cases]
        swaps.append(run_served_swap(model, swap, retrieved(swap.question_id), temperature))
    return results, swaps
