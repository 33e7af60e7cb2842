"""Grids: combinatorial comparisons, cached and resumable.

The TOML spec (:mod:`~lidframe.grid.spec`), the planner and runner
(:mod:`~lidframe.grid.runner`), the output folder's lock and SQLite result store
(:mod:`~lidframe.grid.store`) and the report of a finished grid (:mod:`~lidframe.grid.report`).
"""
