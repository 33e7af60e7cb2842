"""lidframe.data.documents: whole-file inputs (JSON, TOML) through the one opener, capped (issue 39)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe.data.documents import read_capped, read_json
from lidframe.data.fileio import open_input
from lidframe.errors import InputError

#: Any JSON value (NaN left out: it is not equal to itself).
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=50, deadline=None)
@given(value=json_values, bom=st.booleans(), crlf=st.booleans())
def test_read_json_gives_what_json_loads_gives(tmp_path_factory, value, bom, crlf):
    text = json.dumps(value, indent=1)
    folder = tmp_path_factory.mktemp("json")
    raw = text.replace("\n", "\r\n") if crlf else text
    (folder / "v.json").write_bytes((b"\xef\xbb\xbf" if bom else b"") + raw.encode("utf-8"))
    assert read_json(folder / "v.json", "a value", max_bytes=10**6) == json.loads(text)


def test_the_cap_is_inclusive_and_named_in_the_message(tmp_path):
    path = tmp_path / "v.json"
    path.write_text("[" + "1," * 498 + "10]")  # 1000 bytes
    assert len(read_json(path, "a list", max_bytes=1000)) == 499
    assert read_capped(path, "a list", max_bytes=1000) == path.read_bytes()
    for read in (read_json, read_capped):
        with pytest.raises(InputError, match=r"v\.json: is 1\.0 kB, more than the 999 bytes lidframe reads as a list$"):
            read(path, "a list", max_bytes=999)
    path.write_text("[" + "1," * 518 + "10]")  # 1040 bytes: "1.0 kB" as the cap of 1000 is, so both in bytes
    with pytest.raises(InputError, match=r"v\.json: is 1040 bytes, more than the 1000 bytes lidframe reads as a list$"):
        open_input(path, "a list", max_bytes=1000)


def test_what_json_cannot_parse_is_one_line_naming_the_file(tmp_path):
    cases = {
        "deep": ("[" * 100_000 + "]" * 100_000, r"deep\.json: nested deeper than the parser can follow"),
        "syntax": ('{"a": 1,}', r"syntax\.json: not JSON \(line 1, column 9: Expecting property name"),
        "digits": ("1" + "0" * 5000, r"digits\.json: not valid \(Exceeds the limit \(4300 digits\)"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / f"{name}.json").write_text(text)
        with pytest.raises(InputError, match=message) as raised:
            read_json(tmp_path / f"{name}.json", "a record", max_bytes=10**6)
        assert "\n" not in str(raised.value) and str(raised.value).endswith("expected a record")


def test_nan_and_infinity_are_read_as_floats_for_the_caller_to_check(tmp_path):
    (tmp_path / "v.json").write_text("[NaN, Infinity, -Infinity]")
    nan, inf, minus = read_json(tmp_path / "v.json", "numbers", max_bytes=100)
    assert math.isnan(nan) and inf == math.inf and minus == -math.inf
