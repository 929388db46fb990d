"""Answers with checked citations: prompts, budgets, generators, verification, summaries and routing."""
