"""Answers measured: answer tables, thresholds, verdicts, judges, calibration, citation accuracy."""
