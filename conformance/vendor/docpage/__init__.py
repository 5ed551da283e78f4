"""A vendor doc page read into one record: Markdown or plain text."""
