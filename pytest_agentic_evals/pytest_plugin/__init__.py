"""The pytest layer: fixtures collected as test files, one item per (case, trial), and the gate."""
