"""``rag ask``: one question from the command line: its index, setups, command line and measurement.

The index (:mod:`rag.ask.index`) is built from the same kinds and defaults as
the pipeline's grid; :mod:`rag.ask.measure` runs labelled questions through
the same path for results/answers_heldout.csv.
"""
