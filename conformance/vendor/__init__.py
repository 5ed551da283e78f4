"""The vendor's documents: doc pages (draft a spec, check a spec against its page) and ATK test files (import as cases, report)."""
