"""Grids: combinatorial comparisons, cached and resumable.

The TOML spec (:mod:`~lidframe.grid.spec`), the planner, runner and SQLite result store
(:mod:`~lidframe.grid.runner`) and the report of a finished grid (:mod:`~lidframe.grid.report`).
"""
