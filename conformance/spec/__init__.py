"""The operator spec: the model, YAML with positions, lint and loading, the shared tables, the registry, bindings, in-place derivation, check kinds, expressions."""
