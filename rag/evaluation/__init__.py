"""Measuring rankings: metrics, cohorts, document relevance, statistics, significance and the ablations."""
