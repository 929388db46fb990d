"""The grounding memory is trained on the caller's view: a document it may not read never comes back out."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.grounding.experiment import memory_texts, train_memory
from rag.grounding.trigram import complete_sentence, score, text_tokens
from rag.retrieval.filters import FilterError, parse_caller, readable

FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
OPEN = "The harbour lamp burns every night. The harbour lamp is red."
SECRET = ("The harbour vault opens with code zephyrquartz nine. " * 2).strip()
# (doc id, access, tenant, acl, text): one shared public document, one restricted to acme's finance group.
DOCUMENTS = [
    ("harbour", "public", "", (), OPEN),
    ("vault", "restricted", "acme", ("finance",), SECRET),
]
CALLERS = {
    "outsider": {"access": ["public"]},
    "acme_finance": {"tenant": "acme", "groups": ["finance"], "access": ["public", "restricted"]},
}


def parsed_columns(documents=DOCUMENTS) -> dict[str, list]:
    """A parsed corpus's columns, two blocks per document as the parser writes them."""
    rows = [
        (doc, access, tenant, acl, sentence)
        for doc, access, tenant, acl, text in documents
        for sentence in text.split(". ")
    ]
    return {
        "doc_id": [row[0] for row in rows],
        "access": [row[1] for row in rows],
        "tags": [[] for _ in rows],
        "updated": [None for _ in rows],
        "tenant": [row[2] for row in rows],
        "acl": [list(row[3]) for row in rows],
        "text": [row[4] for row in rows],
    }


def view(name: str) -> dict:
    return parse_caller(name, CALLERS[name]).view().to_config()


@pytest.mark.parametrize(("caller", "reads_vault"), [("outsider", False), ("acme_finance", True)])
def test_a_restricted_documents_trigram_comes_out_of_memory_only_for_a_caller_who_may_read_it(
    caller, reads_vault
):
    memory = train_memory(parsed_columns(), view(caller), caller)
    assert ("zephyrquartz" in memory.vocabulary) is reads_vault
    completion = complete_sentence(memory, "The harbour vault opens with code", max_tokens=6)
    assert ("zephyrquartz" in completion.text) is reads_vault
    likely = score(memory, "opens with code", "zephyrquartz").log_likelihood
    assert (likely > -1.0) is reads_vault  # near certain for a reader, an unknown token otherwise


def test_the_memory_text_is_the_blocks_the_caller_may_read_in_corpus_order():
    columns = parsed_columns()
    assert memory_texts(columns, view("acme_finance"), "acme_finance") == columns["text"]
    assert all("zephyrquartz" not in text for text in memory_texts(columns, view("outsider"), "outsider"))


def test_a_caller_who_may_read_nothing_is_one_error_line():
    secret_only = [DOCUMENTS[1]]
    with pytest.raises(ValueError, match="may read none of the corpus's 2 blocks") as error:
        memory_texts(parsed_columns(secret_only), view("outsider"), "outsider")
    assert "\n" not in str(error.value)


def test_a_malformed_view_is_the_filters_own_error():
    with pytest.raises(FilterError):
        memory_texts(parsed_columns(), {"access": ["secretive"]}, "outsider")


WORDS = st.sampled_from(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"])
ACCESS = st.sampled_from(["public", "internal", "restricted"])


@FUZZ
@given(
    documents=st.lists(
        st.tuples(
            ACCESS,
            st.sampled_from(["", "acme", "globex"]),
            st.lists(st.sampled_from(["finance", "legal"]), max_size=2),
        ),
        min_size=1,
        max_size=6,
    ),
    caller=st.fixed_dictionaries(
        {
            "access": st.lists(ACCESS, min_size=1, unique=True),
            "tenant": st.sampled_from(["", "acme"]),
            "groups": st.lists(st.sampled_from(["finance", "legal"]), unique=True),
        }
    ),
    words=st.lists(WORDS, min_size=2, max_size=4),
)
def test_fuzz_memory_holds_exactly_the_tokens_of_readable_documents(documents, caller, words):
    corpus = [
        (f"doc{n}", access, tenant, tuple(acl), f"{' '.join(words)} marker{n}.")
        for n, (access, tenant, acl) in enumerate(documents)
    ]
    reader = parse_caller("fuzzed", caller)
    readable_docs = {doc for doc, access, tenant, acl, _ in corpus if readable(reader, access, tenant, acl)}
    columns = parsed_columns(corpus)
    if not readable_docs:
        with pytest.raises(ValueError, match="may read none"):
            memory_texts(columns, reader.view().to_config(), "fuzzed")
        return
    memory = train_memory(columns, reader.view().to_config(), "fuzzed")
    for doc, *_, text in corpus:
        marker = text_tokens(text)[-2]
        assert (marker in memory.vocabulary) is (doc in readable_docs), doc
