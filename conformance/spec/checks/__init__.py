"""The kinds of check a spec's `checks:` holds: one class per kind."""
