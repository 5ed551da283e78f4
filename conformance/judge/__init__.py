"""Judging a backend's outcome: comparison under the tolerance policy, verdicts, expectations, spec deviations, provenance and results files."""
