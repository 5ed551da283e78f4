"""Running cases: the backend API and its adapters, configuration, the runner, worker processes, one case run and judged, progress, the dtype probe."""
