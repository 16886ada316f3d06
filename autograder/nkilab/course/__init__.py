"""What the course is: its manifest (``course.toml``: stages, questions, points, tiers, target, dialects), the
question registry and its stage modules, and the target's facts, bounds and figures its lessons quote."""
