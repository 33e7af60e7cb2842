"""Grids: combinatorial comparisons, cached and resumable.

The TOML spec (:mod:`~lidframe.grid.spec`, a package: records, reading, systems, checks, loading); the records a grid passes -- cells, score
jobs, fit tasks, plans, finished cells and runs (:mod:`~lidframe.grid.records`); the
cells' inputs (:mod:`~lidframe.grid.inputs`), the planner (:mod:`~lidframe.grid.plan`),
freshness (:mod:`~lidframe.grid.freshness`), the workers' work (:mod:`~lidframe.grid.work`)
and execution (:mod:`~lidframe.grid.execute`), run in order by
:func:`lidframe.grid.runner.run_grid`; the output folder's lock (:mod:`~lidframe.grid.lock`)
and SQLite result store (:mod:`~lidframe.grid.store`; what its rows mean as records and
the per-trial digest check: :mod:`~lidframe.grid.stored`) and the report of a finished
grid (:mod:`~lidframe.grid.report`, a package: columns, tidy table, comparison tables and
their writers, figures, per-speaker tables, warnings, write), with each system's utility
read afresh (:mod:`~lidframe.grid.utility`).
"""
