"""The pretrained MiniLM sentence embedder: the model in numpy, exact search and the embedding cache."""
