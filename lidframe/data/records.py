"""The one implementation of ``to_dict()`` and ``to_frame()`` for lidframe's table-like result records.

Every analysis (sensitivity, N-sweep, longitudinal, paired comparisons, the DP audit)
returns an ``attrs`` frozen record with a ``rows`` field -- a tuple of dicts, one per
table row -- plus whatever settings describe the run.  :class:`TableRecord` gives them

* ``to_dict()``: every attrs field in declaration order, NaN replaced by ``None``
  (:func:`~lidframe.data.fileio.json_clean`), ready for ``json.dump``; a field declared
  with ``metadata=OMIT_FROM_DICT`` (e.g. heavy per-trial results) is left out;
* ``to_frame()``: the rows as a :class:`pandas.DataFrame`, one row per dict (this module
  imports pandas on call only).

Declare a record as::

    @attrs.frozen(eq=False)
    class MyResult(TableRecord):
        rows: tuple[Row, ...] = attrs.field(converter=as_rows)
        level: float
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

import attrs

from lidframe.data.fileio import json_clean

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["Row", "TableRecord", "OMIT_FROM_DICT", "as_rows"]

#: One table row: column name -> value (numbers, strings, None, or small JSON-able lists/dicts).
Row = dict[str, Any]

#: ``attrs.field(metadata=OMIT_FROM_DICT)`` keeps a field out of :meth:`TableRecord.to_dict`.
OMIT_FROM_DICT = {"to_dict": False}


def as_rows(rows: Iterable[Row]) -> tuple[Row, ...]:
    """Converter of a record's ``rows`` field: any iterable of dicts -> a tuple of them."""
    return tuple(rows)


class TableRecord:
    """Mixin of attrs records whose ``rows`` attribute is a sequence of dicts (table rows)."""

    __slots__ = ()
    rows: tuple[Row, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able record: the attrs fields in declaration order, NaN as ``None``.

        Returns
        -------
        dict
            ``{field name: value}``, tuples turned into lists and containers copied, so
            that changing the dict leaves the record alone.
        """
        fields = attrs.fields(cast("type[attrs.AttrsInstance]", type(self)))
        return json_clean({f.name: getattr(self, f.name) for f in fields if f.metadata.get("to_dict", True)})

    def to_frame(self) -> pd.DataFrame:
        """The rows as a :class:`pandas.DataFrame` (one row per dict, columns in first-seen key order)."""
        import pandas as pd

        return pd.DataFrame(list(self.rows))
