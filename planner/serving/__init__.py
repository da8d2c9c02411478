"""Serving: the layout search, Pareto frontiers for each serving mode, large sweeps, and
comparisons of two systems with the causes of their ratio."""
