"""Documents, below every stage: the block model, the access schema, and how text and spans are rendered.

Every reader (``rag.corpus``) builds :class:`rag.documents.blocks.Document`;
question labels (``rag.labels``) locate evidence spans in them, rendering a span
as the Markdown reader renders a paragraph (:mod:`rag.documents.rendering`).
Both import from here, so neither imports the other's package.
"""
