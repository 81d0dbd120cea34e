"""Perf-specific models.  Each file defines make() -> (model, inputs_list); inputs_list[1] takes the other branch.

Files may set EXPECT_RAISE = [index, ...] for inputs on which forward must raise (validation guards).
"""
