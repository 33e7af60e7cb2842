"""Bad input, family "Kaldi scp and ark": no shell command, no unpickling, from any file a stranger hands us.

kaldiio runs an scp entry ``cmd |`` (or ``| cmd``) through ``/bin/sh`` and unpickles an
archive object stored with its ``PKL`` marker.  Every case here writes such a file whose
command or pickle would create a marker file, hands it to every entry point that reads
embeddings (``lidframe score``, ``lidframe dp-audit``, a grid spec, the Python API) and
checks that the run is refused in one line and the marker never appears.  The good files
are written here byte by byte, in Kaldi's binary layout (so the refusals are tested
without kaldiio); kaldiio, an independent writer, checks the reader where it is installed.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lidframe.errors import InputError
from tests.bad_input.conftest import assert_refused

N, D = 3, 4
MARKER = "PWNED"


def utterances() -> list[tuple[str, str]]:
    """``(utt_id, speaker)`` of the enrolment and trial utterances (two per speaker each)."""
    return [(f"{kind}{s}{k}", f"spk{s}") for kind in ("e", "t") for s in range(N) for k in range(2)]


def write_dirs(root: Path, prefix: str = "") -> tuple[Path, Path]:
    """Enrolment and trial data dirs (``wav.scp`` never read: the attacker looks embeddings up by id)."""
    dirs = []
    for kind in ("e", "t"):
        folder = root / f"{prefix}{kind}"
        folder.mkdir(parents=True)
        utts = [(u, s) for u, s in utterances() if u.startswith(kind)]
        (folder / "wav.scp").write_text("".join(f"{prefix}{u} none.wav\n" for u, _ in utts))
        (folder / "utt2spk").write_text("".join(f"{prefix}{u} {s}\n" for u, s in utts))
        dirs.append(folder)
    return dirs[0], dirs[1]


def good_vectors(prefixes: tuple[str, ...] = ("",)) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {f"{p}{u}": rng.normal(size=D) for p in prefixes for u, _ in utterances()}


def kaldi_vector(vector: np.ndarray) -> bytes:
    """Kaldi's binary form of a float64 vector: ``\\0B``, ``DV ``, ``\\4`` and the int32 size, the values."""
    return b"\0BDV \4" + struct.pack("<i", vector.size) + vector.astype("<f8").tobytes()


def write_good(folder: Path, prefixes: tuple[str, ...] = ("",)) -> tuple[Path, Path]:
    """``emb.ark`` and its ``emb.scp`` (``utt PATH:OFFSET``), as ``copy-vector ark,scp:...`` writes them."""
    ark, scp = folder / "emb.ark", folder / "emb.scp"
    data, lines = b"", []
    for utt_id, vector in good_vectors(prefixes).items():
        data += utt_id.encode() + b" "
        lines.append(f"{utt_id} {ark}:{len(data)}\n")
        data += kaldi_vector(vector)
    ark.write_bytes(data)
    scp.write_text("".join(lines))
    return ark, scp


def poisoned_scp(form: str) -> Callable[[Path, Path, Path], Path]:
    """A case: the good scp with its first entry's location replaced by *form* (``{marker}``, ``{ark}`` filled in)."""

    def build(folder: Path, scp: Path, ark: Path) -> Path:
        lines = scp.read_text().splitlines()
        utt_id = lines[0].split()[0]
        location = form.format(marker=folder / MARKER, ark=ark)
        bad = folder / "bad.scp"
        bad.write_text("\n".join([f"{utt_id} {location}", *lines[1:]]) + "\n")
        return bad

    return build


#: Every extended-filename form, each as a ready shell command where kaldiio would run one.
SCP_FORMS = {
    "command then pipe": ("touch {marker}; cat {ark} |", "piped command"),
    "pipe without a space": ("touch {marker}|", "piped command"),
    "leading pipe": ("| touch {marker}", "piped command"),
    "pipe in the middle": ("{ark}:5 | touch {marker}", "piped command"),
    "standard input": ("-", "standard input"),
    "slice": ("{ark}:5[0:2]", "slice"),
}


def pickled_ark(folder: Path, ark: Path) -> Path:
    """An archive whose first object is kaldiio's ``PKL`` form of an object that would create the marker."""

    class Payload:
        def __reduce__(self):
            return (Path.touch, (folder / MARKER,))

    bad = folder / "bad.ark"
    bad.write_bytes(b"e00 PKL" + pickle.dumps(Payload()) + ark.read_bytes()[len(b"e00 ") :])
    return bad


def huge_header_ark(folder: Path, ark: Path) -> Path:
    """An archive whose first vector claims 2e9 doubles (16 GB) but holds 16 bytes."""
    bad = folder / "bad.ark"
    bad.write_bytes(b"e00 \0BDV \4" + struct.pack("<i", 2_000_000_000) + b"\0" * 16)
    return bad


def entry_points(root: Path) -> dict[str, Callable[[Path], list[object]]]:
    """Each command line that reads an embeddings file, as a function of that file."""
    enrol, trials = write_dirs(root / "dirs")
    dev_enrol, dev_trials = write_dirs(root / "dirs", prefix="d")
    out = root / "out"
    spec = root / "spec.toml"

    def grid(path: Path) -> list[object]:
        spec.write_text(
            f'[grid]\nattackers = ["precomputed?path={path}"]\ncalibrators = ["logistic"]\n\n[systems.a]\n'
            f'dev = {{ enrol = "{dev_enrol}", trials = ["{dev_trials}"] }}\n'
            f'eval = {{ enrol = "{enrol}", trials = ["{trials}"] }}\n'
        )
        return ["grid", spec, "--out", out / "grid"]

    return {
        "score": lambda p: [
            *("score", "--attacker", "precomputed", "--embeddings", p),
            *("--enrol", enrol, "--trials", trials, "--out", out / "s.npz"),
        ],
        "dp-audit": lambda p: [
            *("dp-audit", "--mu", "1", "--n-boot", "100", "--embeddings", p),
            *("--dev-enrol", dev_enrol, "--dev-trials", dev_trials, "--enrol", enrol, "--trials", trials),
            *("--json", out / "a.json"),
        ],
        "grid": grid,
    }


@pytest.mark.parametrize("entry", ["score", "dp-audit", "grid"])
@pytest.mark.parametrize("form", list(SCP_FORMS))
def test_an_extended_scp_entry_runs_nothing_and_is_refused(entry, form, tmp_path, capsys):
    root = tmp_path / "case"
    (root / "out").mkdir(parents=True)
    argv_of = entry_points(root)
    ark, scp = write_good(root, prefixes=("", "d"))
    bad = poisoned_scp(SCP_FORMS[form][0])(root, scp, ark)
    assert_refused(argv_of[entry](bad), capsys, expect=["bad.scp", "line 1", "'e00'", SCP_FORMS[form][1]], watch=[root])
    assert not (root / MARKER).exists(), "a shell command from the scp ran"


HOSTILE_ARKS = pytest.mark.parametrize(
    "case, expect",
    [(pickled_ark, ["bad.ark", "'PKL", "pickled"]), (huge_header_ark, ["bad.ark", "DV header", "2000000000"])],
    ids=["pickle", "huge header"],
)


@pytest.mark.parametrize("entry", ["score", "dp-audit"])
@HOSTILE_ARKS
def test_a_hostile_ark_runs_nothing_and_is_refused(entry, case, expect, tmp_path, capsys):
    root = tmp_path / "case"
    (root / "out").mkdir(parents=True)
    argv_of = entry_points(root)
    ark, _ = write_good(root, prefixes=("", "d"))
    bad = case(root, ark)
    assert_refused(argv_of[entry](bad), capsys, expect=expect, watch=[root])
    assert not (root / MARKER).exists(), "a pickle from the archive ran"


@HOSTILE_ARKS
def test_a_grid_cell_reading_a_hostile_ark_fails_with_its_reason_and_runs_nothing(case, expect, tmp_path, capsys):
    """The spec is sound (the archive exists), so the grid runs; its one cell fails, storing the one-line reason."""
    import sqlite3

    from lidframe.cli import main

    root = tmp_path / "case"
    (root / "out").mkdir(parents=True)
    ark, _ = write_good(root, prefixes=("", "d"))
    argv = entry_points(root)["grid"](case(root, ark))
    assert main([str(a) for a in argv]) == 1
    assert "1 failed" in capsys.readouterr().out
    with sqlite3.connect(root / "out" / "grid" / "results.sqlite") as db:
        (error,) = [row[0] for row in db.execute("SELECT error FROM cells") if row[0]]
    assert all(word in error for word in expect) and "\n" not in error, error
    assert not (root / MARKER).exists(), "a pickle from the archive ran"


@pytest.mark.parametrize("form", list(SCP_FORMS))
def test_the_python_api_refuses_them_too(form, tmp_path):
    from lidframe.attackers.precomputed import PrecomputedEmbeddings, read_embeddings

    ark, scp = write_good(tmp_path)
    bad = poisoned_scp(SCP_FORMS[form][0])(tmp_path, scp, ark)
    with pytest.raises(InputError, match=SCP_FORMS[form][1]):
        read_embeddings(bad)
    with pytest.raises(InputError, match=SCP_FORMS[form][1]):
        PrecomputedEmbeddings.input_files({"path": str(bad)})
    assert not (tmp_path / MARKER).exists()


def test_a_wav_scp_pipe_in_the_middle_is_refused(tmp_path, capsys):
    """wav.scp follows the same rule: ``|`` anywhere in a location is refused (kaldiio runs only the ends)."""
    enrol, trials = write_dirs(tmp_path / "dirs")
    wav = trials / "wav.scp"
    wav.write_text(wav.read_text().replace("none.wav", f"none.wav | touch {tmp_path / MARKER}", 1))
    ark, _ = write_good(tmp_path)
    argv = ["score", "--attacker", "precomputed", "--embeddings", ark, "--enrol", enrol, "--trials", trials]
    assert_refused(
        [*argv, "--out", tmp_path / "s.npz"], capsys, expect=["wav.scp", "line 1", "'t00'", "piped"], watch=[tmp_path]
    )
    assert not (tmp_path / MARKER).exists()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    vectors=st.dictionaries(
        st.text("abcdefghij0123456789_-", min_size=1, max_size=12),
        st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=3, max_size=3),
        min_size=1,
        max_size=6,
    ),
    double=st.booleans(),
)
def test_kaldiio_written_archives_read_back_exactly(vectors, double, tmp_path_factory):
    """What kaldiio writes (ark and scp, float32 and float64), lidframe reads: the same ids in order and values."""
    from lidframe.attackers.precomputed import read_embeddings

    kaldiio = pytest.importorskip("kaldiio", reason="kaldiio is the independent writer of this test")

    folder = tmp_path_factory.mktemp("ark")
    dtype = np.float64 if double else np.float32
    arrays = {u: np.asarray(v, dtype=dtype) for u, v in vectors.items()}
    kaldiio.save_ark(str(folder / "v.ark"), arrays, scp=str(folder / "v.scp"))
    for path in (folder / "v.ark", folder / "v.scp"):
        table = read_embeddings(path)
        assert list(table) == list(arrays)
        for utt_id, want in arrays.items():
            np.testing.assert_array_equal(table[utt_id], want.astype(np.float64))


def test_a_text_ark_and_a_single_object_file_read_back(tmp_path):
    """Kaldi's text form (``copy-vector ark:- ark,t:-``) and an scp entry naming a one-object file without offset."""
    from lidframe.attackers.precomputed import read_embeddings

    (tmp_path / "t.ark").write_text("a  [ 1 2.5 -3 ]\nb [ 4 5 6 ]\n")
    assert {k: v.tolist() for k, v in read_embeddings(tmp_path / "t.ark").items()} == {
        "a": [1.0, 2.5, -3.0],
        "b": [4.0, 5.0, 6.0],
    }
    (tmp_path / "one.mat").write_bytes(kaldi_vector(np.array([7.0, 8.0, 9.0])))
    (tmp_path / "one.scp").write_text(f"c {tmp_path / 'one.mat'}\n")
    assert read_embeddings(tmp_path / "one.scp")["c"].tolist() == [7.0, 8.0, 9.0]


def test_the_archives_of_an_scp_are_its_input_files(tmp_path):
    """The grid's cache key holds each archive an scp points at, once, and a missing one is named."""
    from lidframe.attackers.precomputed import PrecomputedEmbeddings

    ark, scp = write_good(tmp_path)
    assert PrecomputedEmbeddings.input_files({"path": str(scp)}) == [ark]
    assert read_embeddings_of(scp) == {u: v.tolist() for u, v in good_vectors().items()}


def read_embeddings_of(path: Path) -> dict[str, list[float]]:
    from lidframe.attackers.precomputed import read_embeddings

    return {u: v.tolist() for u, v in read_embeddings(path).items()}


def first_entry(scp: Path, location: str) -> Path:
    """*scp* with its first entry's location replaced by *location*, as ``bad.scp`` beside it."""
    lines = scp.read_text().splitlines()
    bad = scp.parent / "bad.scp"
    bad.write_text("\n".join([f"{lines[0].split()[0]} {location}", *lines[1:]]) + "\n")
    return bad


#: Hostile scp locations that are no shell command but must still be one clean line.
ODD_LOCATIONS = {
    "offset of 3,000 digits": (lambda ark: f"{ark}:{'9' * 3000}", ["line 1", "offset of 3000 digits"]),
    "a NUL byte": (lambda ark: f"{ark}\x00.ark:5", ["NUL"]),
    "a 5 MB location": (lambda ark: "x" * 5_000_000, ["line 1", "a location of 5000000 characters"]),
    "offset past the end": (lambda ark: f"{ark}:99999", ["line 1", "offset 99999 is past the end"]),
    "non-ASCII digits": (lambda ark: f"{ark}:\u0665", ["line 1", "no such file"]),
}


def test_a_nul_byte_past_the_first_lines_is_named_by_its_line(tmp_path):
    from lidframe.attackers.precomputed import read_embeddings

    ark, scp = write_good(tmp_path)
    lines = scp.read_text().splitlines() * 1
    padded = [f"pad{k} {ark}:{lines[0].split(':')[-1]}" for k in range(300)] + lines
    padded[250] = padded[250].replace(".ark", "\x00.ark")
    (tmp_path / "late.scp").write_text("\n".join(padded) + "\n")
    with pytest.raises(InputError, match="line 251 holds a NUL byte"):
        read_embeddings(tmp_path / "late.scp")


@pytest.mark.parametrize("case", list(ODD_LOCATIONS))
def test_an_odd_scp_location_is_one_short_line(case, tmp_path, capsys):
    root = tmp_path / "case"
    (root / "out").mkdir(parents=True)
    argv_of = entry_points(root)
    ark, scp = write_good(root, prefixes=("", "d"))
    make, expect = ODD_LOCATIONS[case]
    line = assert_refused(
        argv_of["score"](first_entry(scp, make(ark))), capsys, expect=["bad.scp", *expect], watch=[root]
    )
    assert len(line) < 1000 + len(str(root)), len(line)


def test_entries_pointing_into_one_object_are_bounded_by_the_file(tmp_path):
    """10,000 scp entries at offsets inside one 80 kB vector, each a header claiming nearly all of it, and
    the same entry 10,000 times: decoded within 8 x the archive's size, never 10,000 times it."""
    from lidframe.attackers.precomputed import read_embeddings

    values = np.zeros(10_000)
    ark = tmp_path / "big.ark"
    body = bytearray(kaldi_vector(values))
    # a header planted inside the payload every 16 bytes, each claiming the rest of the file
    for k in range(100):
        at = 10 + 16 * k
        body[at : at + 10] = b"\0BDV \4" + struct.pack("<i", (len(body) - at - 10) // 8)
    ark.write_bytes(b"u " + bytes(body))
    scp = tmp_path / "many.scp"
    scp.write_text("".join(f"u{k} {ark}:2\n" for k in range(10_000)))
    table = read_embeddings(scp)
    assert len(table) == 10_000 and all(v.size == 10_000 for v in table.values())
    assert len({id(v.base if v.base is not None else v) for v in table.values()}) == 1  # decoded once
    planted = tmp_path / "planted.scp"
    planted.write_text("".join(f"u{k} {ark}:{2 + 10 + 16 * k}\n" for k in range(100)))
    with pytest.raises(InputError, match="times the archive's size"):
        read_embeddings(planted)


def test_a_text_object_without_its_bracket_is_refused_without_reading_past_the_cap(tmp_path, monkeypatch):
    from lidframe.attackers.precomputed import read_embeddings
    from lidframe.data import kaldi_ark

    monkeypatch.setattr(kaldi_ark, "MAX_TEXT_BYTES", 1 << 20)
    ark = tmp_path / "open.ark"
    ark.write_bytes(b"u [ " + b"1 " * (1 << 20))
    with pytest.raises(InputError, match="text object longer than 1 MiB"):
        read_embeddings(ark)
    ark.write_bytes(b"u [ 1 2 3")
    with pytest.raises(InputError, match="no closing"):
        read_embeddings(ark)


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "folder"])
def test_an_archive_that_is_not_a_regular_file_is_named(kind, tmp_path, capsys):
    """An scp entry naming a FIFO (never opened: it would block), /dev/zero or a folder."""
    import os

    root = tmp_path / "case"
    (root / "out").mkdir(parents=True)
    argv_of = entry_points(root)
    _, scp = write_good(root, prefixes=("", "d"))
    target = {"fifo": root / "pipe.ark", "dev_zero": Path("/dev/zero"), "folder": root / "dir.ark"}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    words = {"fifo": "is a FIFO", "dev_zero": "is a character device", "folder": "is a folder"}[kind]
    bad = first_entry(scp, f"{target}:0")
    for entry in ("score", "grid"):
        assert_refused(argv_of[entry](bad), capsys, expect=["bad.scp", words], watch=[root])
    given = {"fifo": target, "dev_zero": target, "folder": target}[kind]
    argv = argv_of["score"](given)
    assert_refused(argv, capsys, expect=[words], watch=[root])


def test_a_binary_archive_reads_without_kaldiio(tmp_path, monkeypatch):
    """Kaldi's plain binary vectors are decoded here; only compressed matrices need kaldiio, and say so."""
    import sys

    from lidframe.attackers.precomputed import read_embeddings

    monkeypatch.setitem(sys.modules, "kaldiio", None)
    monkeypatch.setitem(sys.modules, "kaldiio.matio", None)
    ark, scp = write_good(tmp_path)
    want = {u: v.tolist() for u, v in good_vectors().items()}
    assert read_embeddings_of(ark) == want and read_embeddings_of(scp) == want
    compressed = tmp_path / "c.ark"
    compressed.write_bytes(b"u \0BCM3 " + struct.pack("<ffii", 0.0, 1.0, 1, 3) + bytes(3))
    with pytest.raises(InputError, match="needs kaldiio"):
        read_embeddings(compressed)


def test_an_scp_of_many_one_object_files_keeps_one_archive_open_at_a_time(tmp_path):
    """300 ``utt PATH`` entries under an open-file limit of what is open now plus 32."""
    import os
    import resource

    from lidframe.attackers.precomputed import read_embeddings

    want = {f"u{k}": np.full(3, float(k)) for k in range(300)}
    for utt_id, vector in want.items():
        (tmp_path / f"{utt_id}.vec").write_bytes(kaldi_vector(vector))
    (tmp_path / "one_each.scp").write_text("".join(f"{u} {tmp_path / u}.vec\n" for u in want))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 32, hard))
    try:
        table = read_embeddings(tmp_path / "one_each.scp")
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert list(table) == list(want) and all(table[u].tolist() == want[u].tolist() for u in want)


def test_one_archive_under_many_names_counts_once(tmp_path):
    """``d/../big.ark``, a symlink and a hard link are one file: its objects may not be decoded 40 times over."""
    import os

    from lidframe.attackers.precomputed import read_embeddings

    ark = tmp_path / "big.ark"
    ark.write_bytes(b"u " + kaldi_vector(np.zeros(65_536)))
    (tmp_path / "d").mkdir()
    names = [tmp_path / "d" / ".." / "big.ark", tmp_path / "d" / "link.ark", tmp_path / "d" / "hard.ark"]
    os.symlink(ark, names[1])
    os.link(ark, names[2])
    scp = tmp_path / "names.scp"
    scp.write_text("".join(f"u{k} {name}:2\n" for k, name in enumerate([ark, *names[:3]])))
    assert len(read_embeddings(scp)) == 4  # one file, one object: decoded once
    many = tmp_path / "many.scp"
    body = bytearray(kaldi_vector(np.zeros(65_536)))
    for k in range(1, 40):  # a header every 1 kB inside the payload, each claiming the rest
        at = 10 + 1024 * k
        body[at : at + 10] = b"\0BDV \4" + struct.pack("<i", (len(body) - at - 10) // 8)
    ark.write_bytes(b"u " + bytes(body))
    lines = [f"u{k} {names[k % 3]}:{2 + 10 + 1024 * k}\n" for k in range(1, 40)]
    many.write_text("".join(lines))
    with pytest.raises(InputError, match="times the archive's size"):
        read_embeddings(many)


def test_a_text_object_is_parsed_without_a_python_object_per_value(tmp_path):
    """4 MiB of text values (1.4 million): the parse peaks at a few times the array, not 35 times the text."""
    import tracemalloc

    from lidframe.attackers.precomputed import read_embeddings

    ark = tmp_path / "t.ark"
    ark.write_bytes(b"u [ " + b"12 " * 1_400_000 + b"]\n")
    tracemalloc.start()
    try:
        table = read_embeddings(ark)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert table["u"].size == 1_400_000 and float(table["u"][-1]) == 12.0
    assert peak < 48 * 2**20, f"peak {peak / 2**20:.0f} MiB"
