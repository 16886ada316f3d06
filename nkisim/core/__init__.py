"""Core data model of the simulator: errors, locations, dtypes, indices, tensors, kernel context."""
