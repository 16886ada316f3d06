"""Cost side of the simulator: the instruction trace, latency model and scheduler."""
