"""Data shipped with the fleet planner: the example plan."""
