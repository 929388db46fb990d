"""Retrievers: sparse, latent, approximate, dense and fused rankings, filters and diversity inside."""
