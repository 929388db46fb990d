"""``python -m rag ask "question"``: the same command as the ``rag`` script."""

from rag.cli import main

raise SystemExit(main())
