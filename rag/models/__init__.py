"""Talking to language models: the one HTTP client, the response cache, the bundled server and redaction.

Every path that sends text to a model (the ``llm`` generators, the grounding
experiments' served models, ``rag ask``'s hosted and llm generators) goes
through :mod:`rag.models.client`; nothing here knows what a prompt means.
"""
