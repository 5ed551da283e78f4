"""The vendor's ATK test files: reading, values, import, report."""
