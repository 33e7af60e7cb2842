"""Utility files (the JSON of ``lidframe utility --json``) read back by ``evaluate --report --utility`` and a grid (issue 39).

``read_utility`` opened the file with ``Path.read_text``: a FIFO hung for ever, ``/dev/zero``
grew to 6.8 GB and ended in a ``MemoryError`` traceback, JSON nested 200,000 deep was a
``RecursionError`` traceback, and a negative WER or a ρ_F0 of 1.5 was accepted and shown on
the report.  Now the file goes through the one opener with a size cap
(:data:`lidframe.utility.reading.MAX_UTILITY_BYTES`), and every value is checked for its
type and range.  Each case is refused in one line naming the file, by the Python API
(:class:`InputError`) and by the command line (exit 2, no traceback, nothing written).

The two cases that would allocate without limit on a reader that is not capped
(``/dev/zero``, a file over the cap) run in a child process whose address space is
limited to 4 GiB, so that a regression fails (a ``MemoryError``) instead of filling the
machine's memory.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lidframe.errors import InputError
from lidframe.utility import read_utility
from tests.bad_input.conftest import assert_refused

#: A utility record as ``lidframe utility --json`` writes it (with a reference data dir and intervals),
#: written out by hand: 2 utterances, 12 reference words, 3 errors.
GOOD: dict[str, Any] = {
    "wer": 0.25,
    "substitutions": 2,
    "deletions": 1,
    "insertions": 0,
    "reference_words": 12,
    "rho_f0": 0.8,
    "rho_f0_utterances": 1,
    "utterances": 2,
    "recogniser": "pocketsphinx?lm=default",
    "resampled": 0,
    "normalisation": "NFKC, case folded",
    "data": "anon/eval",
    "reference": "corpus/eval",
    "speakers": 2,
    "bootstrap": {"n_boot": 1000, "level": 0.95, "method": "bca", "unit": "speaker", "seed": 0},
    "intervals": {
        "wer": {"estimate": 0.25, "low": 0.1, "high": 0.4, "level": 0.95, "method": "bca"},
        "rho_f0": {"estimate": 0.8, "low": -0.2, "high": 1.0, "level": 0.95, "method": "bca"},
    },
    "rows": [
        {
            "utt_id": "u1",
            "reference": "the cat sat on the mat",
            "hypothesis": "the cat sat on a hat",
            "substitutions": 2,
            "deletions": 0,
            "insertions": 0,
            "reference_words": 6,
            "rho_f0": 0.8,
        },
        {
            "utt_id": "u2",
            "reference": "a dog ran in the park",
            "hypothesis": "a dog ran the park",
            "substitutions": 0,
            "deletions": 1,
            "insertions": 0,
            "reference_words": 6,
            "rho_f0": None,
            "rho_f0_note": "fewer than 10 frames voiced in both",
        },
    ],
}


def _with(path: str, value: Any) -> dict[str, Any]:
    """GOOD with the value at *path* (``"intervals.wer.level"``, ``"rows.0.insertions"``) set, or removed (``...``)."""
    record = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    node: Any = record
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return record


#: case -> (the file's bytes, fragments the one line must hold)
BAD: dict[str, tuple[bytes, list[str]]] = {
    "wer_negative": (json.dumps(_with("wer", -0.5)).encode(), ["'wer'", ">= 0", "-0.5"]),
    "wer_infinite": (json.dumps(_with("wer", float("inf"))).encode(), ["'wer'", "finite", "inf"]),
    "rho_above_one": (json.dumps(_with("rho_f0", 1.5)).encode(), ["'rho_f0'", "[-1, 1]", "1.5"]),
    "rho_below_minus_one": (json.dumps(_with("rho_f0", -1.01)).encode(), ["'rho_f0'", "[-1, 1]", "-1.01"]),
    "count_negative": (json.dumps(_with("deletions", -1)).encode(), ["'deletions'", "integer >= 0", "-1"]),
    "count_not_an_integer": (json.dumps(_with("utterances", 2.5)).encode(), ["'utterances'", "integer", "2.5"]),
    "count_a_boolean": (json.dumps(_with("reference_words", True)).encode(), ["'reference_words'", "integer"]),
    "speakers_negative": (json.dumps(_with("speakers", -2)).encode(), ["'speakers'", ">= 0"]),
    "more_rho_utterances_than_utterances": (
        json.dumps(_with("rho_f0_utterances", 3)).encode(),
        ["'rho_f0_utterances'", "more than the 2 utterances"],
    ),
    "recogniser_not_a_string": (json.dumps(_with("recogniser", ["x"])).encode(), ["'recogniser'", "a string"]),
    "bootstrap_not_an_object": (json.dumps(_with("bootstrap", 3)).encode(), ["'bootstrap'", "an object"]),
    "interval_level_out_of_range": (
        json.dumps(_with("intervals.wer.level", 95)).encode(),
        ["intervals.wer.level", "(0, 1)", "95"],
    ),
    "interval_reversed": (json.dumps(_with("intervals.wer.low", 0.5)).encode(), ["interval 'wer'", "low <= high"]),
    "interval_of_rho_out_of_range": (
        json.dumps(_with("intervals.rho_f0.high", 1.2)).encode(),
        ["intervals.rho_f0.high", "[-1, 1]", "1.2"],
    ),
    "interval_wer_negative": (json.dumps(_with("intervals.wer.low", -0.1)).encode(), ["intervals.wer.low", ">= 0"]),
    "interval_of_another_metric": (
        json.dumps(_with("intervals.cer", GOOD["intervals"]["wer"])).encode(),
        ["interval 'cer'", "not one of"],
    ),
    "row_count_negative": (json.dumps(_with("rows.0.insertions", -2)).encode(), ["rows[0].insertions", ">= 0"]),
    "row_rho_out_of_range": (json.dumps(_with("rows.1.rho_f0", -3)).encode(), ["rows[1].rho_f0", "[-1, 1]", "-3"]),
    "row_key_missing": (json.dumps(_with("rows.0.hypothesis", ...)).encode(), ["rows[0]", "'hypothesis'"]),
    "row_id_not_a_string": (json.dumps(_with("rows.0.utt_id", 5)).encode(), ["rows[0].utt_id", "a string"]),
    "nested_200000_deep": (b"[" * 200_000 + b"]" * 200_000, ["nested deeper than the parser can follow"]),
    "an_integer_of_5000_digits": (b'{"wer": 1' + b"0" * 5000 + b"}", ["not valid", "4300 digits"]),
    "gzip_compressed": (gzip.compress(json.dumps(GOOD).encode()), ["gzip-compressed"]),
    "not_json": (b"{not json", ["not JSON", "line 1, column 2"]),
}


def test_a_good_record_reads_back_as_written(tmp_path):
    path = tmp_path / "u.json"
    path.write_text(json.dumps(GOOD))
    read = read_utility(path)
    assert json.loads(json.dumps(read.to_dict())) == GOOD  # NaN (a null rho_f0) written back as null
    assert (read.wer, read.rho_f0, read.rows[1].rho_f0_note) == (0.25, 0.8, "fewer than 10 frames voiced in both")


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_utility_file_is_one_input_error(tmp_path, case):
    content, expect = BAD[case]
    path = tmp_path / "u.json"
    path.write_bytes(content)
    with pytest.raises(InputError) as raised:
        read_utility(path)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(str(path)), message
    for fragment in expect:
        assert fragment in message, (fragment, message)


@pytest.mark.parametrize("case", sorted(BAD))
def test_evaluate_refuses_a_bad_utility_file_in_one_line(folders, capsys, case):
    data, out = folders
    content, expect = BAD[case]
    (data / "u.json").write_bytes(content)
    argv = ["evaluate", "--dev", data / "dev.npz", "--eval", data / "eval.npz", "--report", out / "audit"]
    line = assert_refused(
        [*argv, "--utility", data / "u.json"], capsys, expect=["--utility", "u.json", *expect], watch=[data, out]
    )
    assert not (out / "audit").exists(), line


def test_a_fifo_is_named_never_waited_on(folders, fifo, capsys):
    """Before: ``Path.read_text`` blocked until a writer came (the fixture's watchdog ends that after 20 s)."""
    data, out = folders
    pipe = fifo(data / "u.json")
    with pytest.raises(InputError, match=r"u\.json: is a FIFO \(named pipe\), not a regular file; expected a utility"):
        read_utility(pipe)
    argv = ["evaluate", "--dev", data / "dev.npz", "--eval", data / "eval.npz", "--report", out / "audit"]
    assert_refused([*argv, "--utility", pipe], capsys, expect=["--utility", "u.json", "is a FIFO"], watch=[data, out])


def _limited(code: str, *args: object) -> subprocess.CompletedProcess[str]:
    """``python -c code *args`` with at most 4 GiB of address space and 120 s: a reader without a cap fails, not the host."""

    def limit() -> None:  # pragma: no cover - runs in the child
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
    )


@pytest.fixture()
def oversized(tmp_path) -> Path:
    """A sparse file of 1.1 GB (no disk used): over the 1 GB a utility file may be."""
    path = tmp_path / "big.json"
    with open(path, "wb") as handle:
        handle.truncate(1_100_000_000)
    return path


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_dev_zero_and_a_file_over_the_cap_are_refused_before_they_are_read(oversized):
    """The Python API: one InputError line each, before any byte is read."""
    code = (
        "import sys\n"
        "from lidframe.errors import InputError\n"
        "from lidframe.utility import read_utility\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        read_utility(path)\n"
        "    except InputError as exc:\n"
        "        print(exc)\n"
    )
    done = _limited(code, "/dev/zero", oversized)
    assert done.returncode == 0 and not done.stderr, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "/dev/zero: is a character device, not a regular file; expected a utility file (the JSON of lidframe "
        "utility --json)",
        f"{oversized}: is 1.1 GB, more than the 1.0 GB lidframe reads as a utility file (the JSON of lidframe "
        "utility --json)",
    ]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
@pytest.mark.parametrize("which", ["/dev/zero", "oversized"])
def test_evaluate_refuses_dev_zero_and_a_file_over_the_cap_in_one_line(folders, oversized, which):
    data, out = folders
    utility = "/dev/zero" if which == "/dev/zero" else oversized
    cli = "import sys\nfrom lidframe.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    argv = ["evaluate", "--dev", data / "dev.npz", "--eval", data / "eval.npz", "--report", out / "audit"]
    done = _limited(cli, *argv, "--utility", utility)
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    expected = "is a character device" if which == "/dev/zero" else "is 1.1 GB, more than the 1.0 GB"
    assert lines[0].startswith(f"lidframe: error: --utility: {utility}: {expected}"), lines[0]
    assert not (out / "audit").exists()


def test_a_grid_spec_naming_a_bad_utility_file_is_refused_naming_the_key(tmp_path):
    from lidframe.data.simulate import simulate_system
    from lidframe.grid.spec import load_grid_spec

    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=4, trials_per_speaker=3)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    spec = tmp_path / "grid.toml"
    body = (
        '[grid]\ncalibrators = ["logistic"]\npriors = ["uniform"]\n[systems.anon]\ndev = "dev.npz"\neval = "eval.npz"\n'
    )
    for case in ("wer_negative", "rho_above_one", "nested_200000_deep"):
        content, expect = BAD[case]
        (tmp_path / "u.json").write_bytes(content)
        spec.write_text(body + 'utility = "u.json"\n')
        with pytest.raises(InputError) as raised:
            load_grid_spec(spec, fit_calibrators=False)
        message = str(raised.value)
        assert "systems.anon.utility" in message and "\n" not in message, message
        for fragment in expect:
            assert fragment in message, (case, fragment, message)
