"""Sources to documents: the bundled Markdown, pinned Wikipedia revisions, BEIR, a user's folder."""
