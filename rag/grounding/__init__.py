"""The grounding experiments: RAG-Sequence and RAG-Token, a trigram stand-in generator, and their cases."""
