"""Small, pure building blocks of a measured retrieval-augmented generation pipeline.

Every module holds one idea and works on plain data (strings, numpy arrays,
dataclasses). Reading and writing files is left to the workflow scripts, to
:mod:`rag.formats` and to each stage's own format module (``*_tables``,
``*_files``).
"""

__version__ = "0.1.0"
