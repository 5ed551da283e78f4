"""The spec expression language: compiled from text, evaluated with numpy, mpmath or another array library; nothing is executed as Python."""
