"""Files that are not what they seem: symlink loops, FIFOs, devices, sockets, folders, other encodings.

Inputs (score sets, watch lists, prior tables) are checked in one place
(:func:`lidframe.data.fileio.check_input_file`): a symlink loop, a FIFO, a device, a
socket or a folder is named as what it is, in one line, and a FIFO is never opened (a
reader would block until something writes to it).  Text inputs are read by one helper
(:func:`lidframe.data.fileio.open_text`): a UTF-8 byte-order mark and CRLF line ends are
read, gzip/zip/bzip2/xz and UTF-16/UTF-32 are refused by name.

Outputs (``--json``, ``--per-trial``, ...) must be regular files or new names: a device
node, a FIFO, a socket, a symlink loop or a dangling symlink is refused before any work;
a symlink to a regular file is written through (the link stays a link, its target gets
the new content atomically).

Loops live in a folder of their own (``links``), outside the folders that
:func:`assert_refused` snapshots (a snapshot stats every file it finds).
"""

from __future__ import annotations

import bz2
import gzip
import json
import os
import socket
import stat
from pathlib import Path

import numpy as np
import pytest

from lidframe.cli import main
from lidframe.core.priors import WatchList, read_id_list, read_prior_table
from lidframe.data.fileio import write_json
from lidframe.data.scoreset import ScoreSet
from lidframe.errors import InputError
from tests.bad_input.conftest import assert_refused

# ------------------------------------------------------------------------------------ helpers


@pytest.fixture()
def links(tmp_path):
    """A folder for symlink loops and the like, not watched by the snapshots of :func:`assert_refused`."""
    folder = tmp_path / "links"
    folder.mkdir()
    return folder


def loop(folder: Path, name: str) -> Path:
    """A two-link symlink loop ``name -> name.other -> name``."""
    path, other = folder / name, folder / f"{name}.other"
    os.symlink(other.name, path)
    os.symlink(path.name, other)
    return path


def char_device(path: Path) -> Path:
    """A character device node like /dev/null (1, 3) at *path*; skipped where mknod is not allowed."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError) as exc:
        pytest.skip(f"cannot make a device node here ({exc})")
    return path


def unix_socket(path: Path) -> Path:
    """A bound (and closed) Unix socket at *path*: the socket file stays."""
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))
    except OSError as exc:  # e.g. a path longer than sun_path allows
        pytest.skip(f"cannot bind a Unix socket at {path} ({exc})")
    return path


def evaluate_argv(data: Path, *, dev: object = None, ev: object = None, extra: tuple = ()) -> list[object]:
    return ["evaluate", "--dev", dev or data / "dev.npz", "--eval", ev or data / "eval.npz", *extra]


def evaluate_with(data: Path, role: str, bad: Path, extra: tuple = ()) -> list[object]:
    """``evaluate`` with *bad* as ``--dev`` or ``--eval`` (*role*) and the good set as the other."""
    return evaluate_argv(data, **{"dev" if role == "--dev" else "ev": bad}, extra=extra)


def leftovers(folder: Path) -> list[str]:
    """Names in *folder* that look like temporary files."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# ------------------------------------------------------------------------- inputs: symlink loops
@pytest.mark.parametrize("role", ["--dev", "--eval"])
@pytest.mark.parametrize("name", ["loop.npz", "loop.csv"])
@pytest.mark.parametrize("outputs", [False, True], ids=["no-output", "with-json"])
def test_a_symlink_loop_input_is_one_line(role, name, outputs, folders, links, capsys):
    data, out = folders
    bad = loop(links, name)
    argv = evaluate_with(data, role, bad, ("--json", out / "s.json") if outputs else ())
    assert_refused(argv, capsys, expect=[name, "is a symlink loop"], watch=[data, out])


@pytest.mark.parametrize("kind", ["watchlist", "explicit"])
def test_a_symlink_loop_prior_file_is_one_line(kind, folders, links, capsys):
    data, out = folders
    bad = loop(links, f"{kind}.txt")
    argv = evaluate_argv(data, extra=("--prior", f"{kind}?file={bad}"))
    assert_refused(argv, capsys, expect=[f"{kind}.txt", "is a symlink loop"], watch=[data, out])


def test_other_commands_name_a_symlink_loop_input(folders, links, capsys):
    data, out = folders
    bad = loop(links, "loop.npz")
    for command in (["sensitivity"], ["nsweep", "--repeats", "2"], ["longitudinal", "--k", "1,2"]):
        argv = [command[0], "--dev", data / "dev.npz", "--eval", bad, *command[1:]]
        assert_refused(argv, capsys, expect=["loop.npz", "is a symlink loop"], watch=[data, out])


# ------------------------------------------------------------------ inputs: not regular files
INPUT_KINDS = {
    "eval_fifo_csv": ("--eval", lambda d, f: f(d / "e.csv"), ["e.csv", "is a FIFO", "not a regular file"]),
    "eval_fifo_npz": ("--eval", lambda d, f: f(d / "e.npz"), ["e.npz", "is a FIFO", "not a regular file"]),
    "dev_fifo_csv": ("--dev", lambda d, f: f(d / "d.csv"), ["d.csv", "is a FIFO"]),
    "eval_dev_zero": ("--eval", lambda d, f: Path("/dev/zero"), ["/dev/zero", "is a character device"]),
    "eval_link_to_dev_zero_csv": (
        "--eval",
        lambda d, f: (d / "z.csv").symlink_to("/dev/zero") or d / "z.csv",
        ["z.csv", "is a character device", "not a regular file"],
    ),
    "eval_link_to_dev_zero_npz": (
        "--eval",
        lambda d, f: (d / "z.npz").symlink_to("/dev/zero") or d / "z.npz",
        ["z.npz", "is a character device"],
    ),
    "eval_device_node_csv": ("--eval", lambda d, f: char_device(d / "n.csv"), ["n.csv", "is a character device"]),
    "eval_socket_npz": ("--eval", lambda d, f: unix_socket(d / "s.npz"), ["s.npz", "is a socket"]),
    "dev_folder_npz": ("--dev", lambda d, f: (d / "d.npz").mkdir() or d / "d.npz", ["d.npz", "is a folder"]),
    "dev_folder_csv": ("--dev", lambda d, f: (d / "d.csv").mkdir() or d / "d.csv", ["d.csv", "is a folder"]),
    "eval_dangling_link": (
        "--eval",
        lambda d, f: (d / "gone.npz").symlink_to(d / "nowhere.npz") or d / "gone.npz",
        ["gone.npz", "no such file", "dangling symlink", "nowhere.npz"],
    ),
}


@pytest.mark.parametrize("name", list(INPUT_KINDS))
def test_an_input_that_is_not_a_regular_file_says_what_it_is(name, folders, fifo, capsys):
    data, out = folders
    role, make, expect = INPUT_KINDS[name]
    bad = make(data, fifo)
    argv = evaluate_with(data, role, bad, ("--json", out / "s.json"))
    assert_refused(argv, capsys, expect=expect, watch=[data, out])


PRIOR_KINDS = {
    "watchlist_fifo": (lambda d, f: f"watchlist?file={f(d / 'w.txt')}", ["w.txt", "is a FIFO"]),
    "explicit_fifo": (lambda d, f: f"explicit?file={f(d / 'p.csv')}", ["p.csv", "is a FIFO"]),
    "watchlist_dev_zero": (lambda d, f: "watchlist?file=/dev/zero", ["/dev/zero", "is a character device"]),
    "explicit_folder": (lambda d, f: (d / "p").mkdir() or f"explicit?file={d / 'p'}", ["is a folder"]),
    "watchlist_folder": (lambda d, f: (d / "w").mkdir() or f"watchlist?file={d / 'w'}", ["is a folder"]),
}


@pytest.mark.parametrize("name", list(PRIOR_KINDS))
def test_a_prior_file_that_is_not_a_regular_file_says_what_it_is(name, folders, fifo, capsys):
    data, out = folders
    make, expect = PRIOR_KINDS[name]
    assert_refused(evaluate_argv(data, extra=("--prior", make(data, fifo))), capsys, expect=expect, watch=[data, out])


def test_the_python_readers_say_what_a_fifo_is(tmp_path, fifo):
    for path, read in [
        (fifo(tmp_path / "s.csv"), ScoreSet.load),
        (fifo(tmp_path / "s.npz"), ScoreSet.load),
        (fifo(tmp_path / "ids.txt"), read_id_list),
        (fifo(tmp_path / "prior.csv"), read_prior_table),
    ]:
        with pytest.raises(InputError, match=rf"{path.name}: is a FIFO \(named pipe\), not a regular file"):
            read(path)


# ------------------------------------------------------------------------ outputs: not files
OUTPUT_KINDS = {
    "json_symlink_loop": (lambda d, o, lk: ["--json", loop(lk, "s.json")], ["--json", "s.json", "symlink loop"]),
    "per_trial_symlink_loop": (
        lambda d, o, lk: ["--per-trial", loop(lk, "p.csv")],
        ["--per-trial", "p.csv", "symlink loop"],
    ),
    "json_in_a_looping_folder": (
        lambda d, o, lk: ["--json", loop(lk, "dir") / "s.json"],
        ["--json", "s.json", "symlink loop"],
    ),
    "json_fifo": (lambda d, o, lk: ["--json", _mkfifo(o / "s.json")], ["--json", "is a FIFO", "not a regular file"]),
    "json_device_node": (
        lambda d, o, lk: ["--json", char_device(o / "null.json")],
        ["--json", "null.json", "is a character device", "not a regular file"],
    ),
    "json_link_to_dev_null": (
        lambda d, o, lk: ["--json", _link(lk / "null.json", "/dev/null")],
        ["--json", "null.json", "is a character device"],
    ),
    "per_speaker_socket": (
        lambda d, o, lk: ["--per-speaker", unix_socket(o / "p.csv")],
        ["--per-speaker", "is a socket"],
    ),
    "json_dangling_symlink": (
        lambda d, o, lk: ["--json", _link(lk / "s.json", lk / "missing" / "target.json")],
        ["--json", "s.json", "dangling symlink", "target.json"],
    ),
    "json_link_to_the_eval_set": (
        lambda d, o, lk: ["--json", _link(lk / "s.json", d / "eval.npz")],
        ["--json", "s.json", "is an input of this run"],
    ),
}


def _mkfifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _link(path: Path, target: str | Path) -> Path:
    os.symlink(target, path)
    return path


@pytest.mark.parametrize("name", list(OUTPUT_KINDS))
def test_an_output_that_is_not_a_regular_file_is_refused_before_any_work(name, folders, links, capsys, monkeypatch):
    data, out = folders
    outputs, expect = OUTPUT_KINDS[name]
    argv = evaluate_argv(data, extra=tuple(outputs(data, out, links)))
    before = {p.name: os.lstat(p) for p in links.iterdir()}

    def no_work(*args, **kwargs):
        raise AssertionError("the target is checked before the sets are read")

    monkeypatch.setattr("lidframe.data.embedset.load_set", no_work)
    assert_refused(argv, capsys, expect=expect, watch=[data, out])
    after = {p.name: os.lstat(p) for p in links.iterdir()}
    assert {k: (v.st_mode, v.st_ino) for k, v in after.items()} == {k: (v.st_mode, v.st_ino) for k, v in before.items()}
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_json_output_through_a_symlink_writes_the_target_and_keeps_the_link(folders, tmp_path, capsys):
    data, out = folders
    real = tmp_path / "elsewhere"
    real.mkdir()
    (real / "s.json").write_text("old\n")
    (real / "p.csv").write_text("old\n")
    os.chmod(real / "s.json", 0o640)
    (out / "s.json").symlink_to(real / "s.json")
    (out / "p.csv").symlink_to(Path("..") / "elsewhere" / "p.csv")  # a relative link, resolved from its folder
    code = main([str(a) for a in evaluate_argv(data, extra=("--json", out / "s.json", "--per-trial", out / "p.csv"))])
    capsys.readouterr()
    assert code == 0
    for name in ("s.json", "p.csv"):
        assert (out / name).is_symlink(), f"{name}: the link was replaced"
    assert os.readlink(out / "s.json") == str(real / "s.json")
    record = json.loads((real / "s.json").read_text())
    assert record["n_enrolled"] == 6 and record["n_enrolled_trials"] == 24
    assert (real / "p.csv").read_text().startswith("trial_id,")
    assert stat.S_IMODE((real / "s.json").stat().st_mode) == 0o640  # the target keeps its mode
    assert leftovers(out) == [] and leftovers(real) == []


def test_write_json_through_a_symlink_chain(tmp_path):
    (tmp_path / "target.json").write_text("[]")
    (tmp_path / "b.json").symlink_to("target.json")
    (tmp_path / "a.json").symlink_to("b.json")
    write_json(tmp_path / "a.json", {"x": 1})
    assert json.loads((tmp_path / "target.json").read_text()) == {"x": 1}
    assert os.readlink(tmp_path / "a.json") == "b.json" and os.readlink(tmp_path / "b.json") == "target.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "target.json"]


def test_score_set_save_refuses_a_device_and_a_dangling_link(tmp_path, good_sets):
    _, ev = good_sets
    device = char_device(tmp_path / "null.npz")
    with pytest.raises(InputError, match="null.npz: is a character device, not a regular file"):
        ev.save(device)
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    (tmp_path / "gone.csv").symlink_to(tmp_path / "nowhere.csv")
    with pytest.raises(InputError, match="gone.csv: is a dangling symlink"):
        ev.save(tmp_path / "gone.csv")
    assert not (tmp_path / "nowhere.csv").exists() and (tmp_path / "gone.csv").is_symlink()


# ------------------------------------------------------------------------------- encodings
def csv_text(ev) -> str:
    return ev.to_frame().to_csv(index=False, float_format="%.17g")


@pytest.mark.parametrize(
    "encode",
    [
        lambda text: b"\xef\xbb\xbf" + text.encode(),
        lambda text: text.replace("\n", "\r\n").encode(),
        lambda text: b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode(),
    ],
    ids=["bom", "crlf", "bom-crlf"],
)
def test_a_score_csv_with_a_bom_or_crlf_reads_as_the_plain_one(encode, tmp_path, good_sets):
    _, ev = good_sets
    (tmp_path / "e.csv").write_bytes(encode(csv_text(ev)))
    loaded = ScoreSet.load(tmp_path / "e.csv")
    assert list(loaded.enrolled) == list(ev.enrolled) and list(loaded.trial_ids) == list(ev.trial_ids)
    assert list(loaded.trial_speakers) == list(ev.trial_speakers)
    np.testing.assert_array_equal(loaded.scores, ev.scores)


ENCODED = {
    "gzip": (lambda text: gzip.compress(text.encode()), ["is gzip-compressed", "decompress it first"]),
    "bzip2": (lambda text: bz2.compress(text.encode()), ["is bzip2-compressed", "decompress it first"]),
    "utf16_bom": (lambda text: text.encode("utf-16"), ["is UTF-16", "expected UTF-8"]),
    "utf16le_no_bom": (lambda text: text.encode("utf-16-le"), ["is UTF-16", "expected UTF-8"]),
    "utf16be_no_bom": (lambda text: text.encode("utf-16-be"), ["is UTF-16", "expected UTF-8"]),
    "utf32_bom": (lambda text: text.encode("utf-32"), ["is UTF-32", "expected UTF-8"]),
    "latin1_header": (lambda text: text.replace("enroll", "\xe9nroll", 1).encode("latin-1"), ["line 1", "not UTF-8"]),
}


@pytest.mark.parametrize("name", list(ENCODED))
def test_a_score_csv_in_another_encoding_is_refused_by_name(name, folders, good_sets, capsys):
    data, out = folders
    encode, expect = ENCODED[name]
    (data / "e.csv").write_bytes(encode(csv_text(good_sets[1])))
    argv = evaluate_argv(data, ev=data / "e.csv", extra=("--json", out / "s.json"))
    assert_refused(argv, capsys, expect=["e.csv", *expect], watch=[data, out])


def test_a_latin1_score_csv_names_the_line(tmp_path, good_sets):
    text = csv_text(good_sets[1]).splitlines(keepends=True)
    text[5] = text[5].replace(",", "\xe9,", 1)  # line 6 holds a Latin-1 byte
    (tmp_path / "e.csv").write_bytes("".join(text).encode("latin-1"))
    with pytest.raises(InputError, match=r"e.csv: line 6 is not UTF-8 text"):
        ScoreSet.load(tmp_path / "e.csv")


@pytest.mark.parametrize(
    "encode",
    [
        lambda text: b"\xef\xbb\xbf" + text.encode(),
        lambda text: text.replace("\n", "\r\n").encode(),
        lambda text: b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode(),
    ],
    ids=["bom", "crlf", "bom-crlf"],
)
def test_watch_lists_and_prior_tables_with_a_bom_or_crlf_read_as_the_plain_ones(encode, tmp_path):
    (tmp_path / "ids.txt").write_bytes(encode("spk-1\n# a comment\nspk-2\n"))
    assert read_id_list(tmp_path / "ids.txt") == ["spk-1", "spk-2"]
    assert WatchList.from_params(file=tmp_path / "ids.txt", weight=2).ids == ("spk-1", "spk-2")
    (tmp_path / "p.csv").write_bytes(encode("enroll_spk,prior\nspk-1,0.25\nspk-2,0.75\n"))
    assert read_prior_table(tmp_path / "p.csv") == {"spk-1": 0.25, "spk-2": 0.75}


def test_a_watch_list_with_a_bom_works_through_the_cli(folders, good_sets, capsys):
    data, out = folders
    first = good_sets[1].enrolled[0]
    (data / "ids.txt").write_bytes(b"\xef\xbb\xbf" + f"{first}\r\n".encode())
    code = main([str(a) for a in evaluate_argv(data, extra=("--prior", f"watchlist?file={data / 'ids.txt'}"))])
    out_text, err = capsys.readouterr()
    assert code == 0, err
    assert "prior: watchlist(1 ids, weight=10)" in out_text


@pytest.mark.parametrize("name", ["gzip", "utf16_bom", "utf16le_no_bom", "utf32_bom"])
@pytest.mark.parametrize("kind", ["watchlist", "explicit"])
def test_prior_files_in_another_encoding_are_refused_by_name(kind, name, folders, good_sets, capsys):
    data, out = folders
    ev = good_sets[1]
    encode, expect = ENCODED[name]
    text = (
        "\n".join(ev.enrolled) + "\n"
        if kind == "watchlist"
        else "enroll_spk,prior\n" + "".join(f"{s},{1 / 6}\n" for s in ev.enrolled)
    )
    (data / "f.txt").write_bytes(encode(text))
    argv = evaluate_argv(data, extra=("--prior", f"{kind}?file={data / 'f.txt'}", "--json", out / "s.json"))
    assert_refused(argv, capsys, expect=["f.txt", *expect], watch=[data, out])


def test_a_symlink_loop_input_with_a_report_folder_is_one_line(folders, links, capsys):
    """``--report`` compares its page with every input too: a loop among them is named, not a traceback."""
    data, out = folders
    bad = loop(links, "loop.npz")
    argv = evaluate_with(data, "--dev", bad, ("--report", out / "report"))
    assert_refused(argv, capsys, expect=["loop.npz", "is a symlink loop"], watch=[data, out])


@pytest.mark.parametrize("name", ["gzip", "utf16_bom"])
def test_the_other_text_readers_follow_the_same_rule(name, folders, fifo, capsys):
    """A per-trial table for ``compare``, the ids beside a ``.npy`` and a ``wav.scp`` go through the same text reader."""
    from tests.bad_input.test_scp_pipes import good_vectors, write_dirs

    data, out = folders
    encode, expect = ENCODED[name]
    (data / "a.csv").write_bytes(encode("trial_id,trial_spk,lid_bits\nt1,s1,0.5\n"))
    (data / "b.csv").write_text("trial_id,trial_spk,lid_bits\nt1,s1,0.5\n")
    argv = ["compare", data / "a.csv", data / "b.csv", "--json", out / "c.json"]
    assert_refused(argv, capsys, expect=["a.csv", *expect], watch=[data, out])

    enrol, trials = write_dirs(data / "dirs")
    table = good_vectors()
    np.save(data / "emb.npy", np.stack(list(table.values())))
    (data / "emb.ids").write_bytes(encode("\n".join(table) + "\n"))
    argv = ["score", "--attacker", "precomputed", "--embeddings", data / "emb.npy", "--enrol", enrol]
    assert_refused(
        [*argv, "--trials", trials, "--out", out / "s.npz"], capsys, expect=["emb.ids", *expect], watch=[data, out]
    )

    (data / "emb.ids").write_text("\n".join(table) + "\n")
    (trials / "wav.scp").write_bytes(encode((trials / "wav.scp").read_text()))
    argv = ["score", "--attacker", "precomputed", "--embeddings", data / "emb.npy", "--enrol", enrol]
    assert_refused(
        [*argv, "--trials", trials, "--out", out / "s.npz"], capsys, expect=["wav.scp", *expect], watch=[data, out]
    )
