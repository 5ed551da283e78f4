"""Cases: plans, values and layouts, generation from the spec, negatives, building a case, case directories on disk."""
