"""TableRecord: the one to_dict / to_frame of lidframe's table-like results."""

import json
import math

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe.data.records import OMIT_FROM_DICT, TableRecord


@attrs.frozen(eq=False)
class Toy(TableRecord):
    name: str
    rows: tuple = attrs.field(converter=tuple)
    heavy: object = attrs.field(default=None, metadata=OMIT_FROM_DICT)


values = st.one_of(st.floats(allow_infinity=False), st.integers(-5, 5), st.text(max_size=3))
row_lists = st.lists(
    st.fixed_dictionaries({"k": st.integers(0, 9), "x": st.floats(allow_infinity=False), "v": values}), max_size=6
)


def _clean(v):  # an independent NaN -> None
    return None if isinstance(v, float) and v != v else v


@given(st.text(max_size=5), row_lists)
def test_to_dict_is_the_fields_in_order_with_nan_as_none(name, rows):
    record = Toy(name, rows, heavy=object())
    got = record.to_dict()
    assert list(got) == ["name", "rows"]  # declaration order, omitted field left out
    assert got == {"name": name, "rows": [{k: _clean(v) for k, v in r.items()} for r in rows]}
    json.dumps(got, allow_nan=False)
    if got["rows"]:
        got["rows"][0]["k"] = -1  # the dict is a copy
        assert record.rows[0]["k"] == rows[0]["k"]


@given(row_lists.filter(bool))
def test_to_frame_has_one_row_per_dict_and_the_dict_values(rows):
    frame = Toy("t", rows).to_frame()
    assert list(frame.columns) == list(rows[0])
    assert len(frame) == len(rows)
    for i, row in enumerate(rows):
        for key, want in row.items():
            have = frame[key].iloc[i]
            if isinstance(want, float) and math.isnan(want):
                assert have is None or have != have
            else:
                assert have == want


def test_records_are_frozen_and_rows_a_tuple():
    record = Toy("t", [{"a": 1}])
    assert record.rows == ({"a": 1},)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        record.rows = ()


def test_the_records_module_imports_pandas_only_when_a_frame_is_asked_for():
    import ast
    import inspect

    import lidframe.data.records as module

    tree = ast.parse(inspect.getsource(module))
    top_level = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    names = [alias.name for node in top_level for alias in node.names] + [
        node.module for node in top_level if isinstance(node, ast.ImportFrom)
    ]
    assert not any(str(name).startswith("pandas") for name in names)
