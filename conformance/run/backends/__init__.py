"""Backend adapters: each module imports its heavy dependency lazily."""
