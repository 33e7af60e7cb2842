"""Runtime: how lidframe's work is spread over processes on one machine.

:mod:`lidframe.runtime.workers` starts local process pools whose workers end with the
process that started them (the grid's ``jobs``, the anonymisers, the corpus and the demo).
It holds no data and no maths, so it sits beside :mod:`lidframe.data`, above only
:mod:`lidframe.errors`.
"""
