"""The core of the suite, in layers (docs/architecture.md): files, acl, spec, cases, judge, run, vendor."""
