"""Table-like result records: :class:`TableRecord` (``to_dict()``, ``to_frame()``) and their rows.

Every analysis (sensitivity, N-sweep, longitudinal, paired comparisons, per-speaker, the
DP audit) returns an ``attrs`` frozen record with a ``rows`` field -- a tuple of row
records, one per table row -- plus whatever settings describe the run.
:class:`TableRecord` gives them

* ``to_dict()``: every attrs field in declaration order, rows as plain dicts, NaN
  replaced by ``None`` (:func:`~lidframe.data.fileio.json_clean`), ready for
  ``json.dump``; a field declared with ``metadata=OMIT_FROM_DICT`` (e.g. heavy per-trial
  results) is left out;
* ``to_frame()``: the rows as a :class:`pandas.DataFrame`, one row per table row (this
  module imports pandas on call only).

A row is a frozen attrs record with typed fields (``row.alid``) that subclasses
:class:`RowRecord`, which also makes it a read-only mapping (``row["alid"]``,
``"intervals" in row``, ``dict(row)``) with the keys and values of the dict that stood for the
row before the rows were records.  The mapping's keys follow one rule, written here once:

* a field's key is its attribute name, so renaming a field renames its key;
* a field declared with ``metadata=ABSENT_WHEN_NONE`` is ``None`` when the row has no such
  value, and its key is then absent (the row's dict had no such key);
* a field declared with ``metadata=nested_row(OtherRow)`` holds another :class:`RowRecord`
  whose keys appear in place, prefixed with ``<field name>_`` (``row.bayes.eer`` is
  ``row["bayes_eer"]``);
* tuples read as lists (an interval ``(low, high)`` is ``[low, high]``), as in the JSON.

Declare a record as::

    @attrs.frozen(eq=False, kw_only=True)
    class MyRow(RowRecord):
        alid: float
        alid_low: float | None = attrs.field(default=None, metadata=ABSENT_WHEN_NONE)

    @attrs.frozen(eq=False)
    class MyResult(TableRecord):
        rows: tuple[MyRow, ...] = attrs.field(converter=as_rows)
        level: float

Plain dicts still work as rows (``Row``) for records of your own.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

import attrs

from lidframe.data.fileio import json_clean

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["Row", "RowRecord", "TableRecord", "OMIT_FROM_DICT", "ABSENT_WHEN_NONE", "as_rows", "nested_row"]

#: A table row as a plain dict: column name -> value (numbers, strings, None, or small
#: JSON-able lists/dicts).  The analyses' rows are :class:`RowRecord` mappings instead.
Row = dict[str, Any]

#: ``attrs.field(metadata=OMIT_FROM_DICT)`` keeps a field out of :meth:`TableRecord.to_dict`.
OMIT_FROM_DICT = {"to_dict": False}

_OPTIONAL = "row_optional"
_NESTED = "row_nested"


def as_rows(rows: Iterable[Any]) -> tuple[Any, ...]:
    """Converter of a record's ``rows`` field: any iterable of rows -> a tuple of them."""
    return tuple(rows)


#: ``attrs.field(default=None, metadata=ABSENT_WHEN_NONE)``: a row field that only some rows
#: have; ``None`` when absent, and then not a key of the row's mapping.
ABSENT_WHEN_NONE = {_OPTIONAL: True}


def nested_row(row_type: type[RowRecord], *, optional: bool = False) -> dict[str, Any]:
    """Metadata of a row field holding a *row_type* record whose keys read as ``<field name>_<key>``.

    ``attrs.field(metadata=nested_row(Bounds))``; with ``optional=True`` (and
    ``default=None``) a ``None`` value leaves all of its keys out of the row.
    """
    return {_NESTED: row_type, _OPTIONAL: optional}


def _as_listed(value: Any) -> Any:
    """*value* with tuples as lists and dicts copied, recursively (the row's dict as it was).

    An interval (a :class:`lidframe.stats.interval.Interval`, known by its ``bounds``) is
    its ends ``[low, high]``, the form a JSON record stores it in.
    """
    if attrs.has(type(value)) and hasattr(value, "bounds"):
        return list(value.bounds)
    if isinstance(value, dict):
        return {k: _as_listed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_listed(v) for v in value]
    return value


@functools.cache
def _key_paths(cls: type) -> dict[str, tuple[tuple[str, bool], ...]]:
    """Mapping key -> attribute path of a row class, as (attribute name, optional) steps, in key order."""
    paths: dict[str, tuple[tuple[str, bool], ...]] = {}
    for field in attrs.fields(cls):
        step = ((field.name, bool(field.metadata.get(_OPTIONAL))),)
        nested = field.metadata.get(_NESTED)
        if nested is not None:
            for key, rest in _key_paths(nested).items():
                paths[f"{field.name}_{key}"] = step + rest
        else:
            paths[field.name] = step
    return paths


class RowRecord(Mapping[str, Any]):
    """Mixin of attrs row records: a read-only mapping view of the fields (module docstring).

    ``row[key]``, ``key in row``, ``len(row)``, ``dict(row)`` and ``row == {...}`` behave as
    for the dict the row stood for; :meth:`to_dict` is that dict, JSON-able.
    """

    __slots__ = ()

    def _lookup(self, path: tuple[tuple[str, bool], ...]) -> tuple[bool, Any]:
        value: Any = self
        for name, optional in path:
            value = getattr(value, name)
            if value is None and optional:
                return False, None
        return True, value

    def __getitem__(self, key: str) -> Any:
        path = _key_paths(type(self)).get(key)
        found, value = (False, None) if path is None else self._lookup(path)
        if not found:
            raise KeyError(key)
        return _as_listed(value)

    def __iter__(self) -> Iterator[str]:
        return (key for key, path in _key_paths(type(self)).items() if self._lookup(path)[0])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def to_dict(self) -> dict[str, Any]:
        """The row as a JSON-able dict: its keys in order, tuples as lists, NaN as ``None``."""
        return json_clean(dict(self))


def _plain(value: Any) -> Any:
    """*value* with row records as dicts, recursively through dicts, lists and tuples."""
    if isinstance(value, RowRecord):
        return dict(value)
    if attrs.has(type(value)) and callable(getattr(value, "to_dict", None)):  # an Interval, say
        return value.to_dict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class TableRecord:
    """Mixin of attrs records whose ``rows`` attribute is a sequence of rows (row records or dicts)."""

    __slots__ = ()
    rows: tuple[Mapping[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able record: the attrs fields in declaration order, rows as dicts, NaN as ``None``.

        Returns
        -------
        dict
            ``{field name: value}``, tuples turned into lists and containers copied, so
            that changing the dict leaves the record alone.
        """
        fields = attrs.fields(cast("type[attrs.AttrsInstance]", type(self)))
        return json_clean({f.name: _plain(getattr(self, f.name)) for f in fields if f.metadata.get("to_dict", True)})

    def to_frame(self) -> pd.DataFrame:
        """The rows as a :class:`pandas.DataFrame` (one row per table row, columns in first-seen key order)."""
        import pandas as pd

        return pd.DataFrame([dict(row) for row in self.rows])
