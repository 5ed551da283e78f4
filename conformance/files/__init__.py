"""The user's files: opened bounded and refused when hostile (safeio), one writer per results file (writelock)."""
