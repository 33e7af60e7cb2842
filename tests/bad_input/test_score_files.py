"""Bad score files (``.npz`` and long ``.csv``): each refused in one line naming the file and the problem.

Every case writes one broken score set next to a good dev set and runs ``lidframe
evaluate`` with it as ``--eval`` (or ``--dev``), asking for ``--json`` and ``--per-trial``
outputs: the run must exit 2 with one ``lidframe: error:`` line and leave nothing behind.
"""

from __future__ import annotations

import pickle
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from lidframe.data.scoreset import ScoreSet
from lidframe.data.simulate import simulate_system
from lidframe.errors import InputError
from tests.bad_input.conftest import assert_refused
from tests.data.npz_craft import DEFLATED, npy_header, stored, write_zip, zip_bomb_member

N_ENROLLED, PER_SPEAKER = 6, 4


@pytest.fixture(scope="module")
def good_sets():
    return simulate_system(leakage=0.5, seed=11, n_enrolled=N_ENROLLED, trials_per_speaker=PER_SPEAKER)


def fields(ev) -> dict[str, np.ndarray]:
    """The arrays of a good eval score-set archive (writable copies)."""
    return {
        "scores": np.array(ev.scores),
        "enrolled": np.array(ev.enrolled),
        "trial_speakers": np.array(ev.trial_speakers),
        "trial_ids": np.array(ev.trial_ids),
    }


def savez(path: Path, **arrays) -> Path:
    np.savez(path, **arrays)
    return path


def changed(ev, **changes) -> dict[str, np.ndarray]:
    out = fields(ev)
    out.update(changes)
    return {k: v for k, v in out.items() if v is not None}


# ----------------------------------------------------------------------------------- npz cases
# each: (folder, good eval set) -> (the bad file, fragments the message must hold)
def npz_missing_scores(d, ev):
    return savez(d / "e.npz", **changed(ev, scores=None)), ["e.npz", "missing key(s) scores"]


def npz_wrong_key_name(d, ev):
    arrays = changed(ev, scores=None)
    arrays["score"] = np.array(ev.scores)
    return savez(d / "e.npz", **arrays), ["e.npz", "missing key(s) scores", "'score'"]


def npz_missing_trial_speakers(d, ev):
    return savez(d / "e.npz", **changed(ev, trial_speakers=None)), ["e.npz", "missing key(s) trial_speakers"]


def npz_extra_key(d, ev):
    return savez(d / "e.npz", **changed(ev, labels=np.zeros(len(ev.trial_ids)))), ["e.npz", "unexpected key", "labels"]


def npz_nan_score(d, ev):
    s = np.array(ev.scores)
    s[3, 1] = np.nan
    return savez(d / "e.npz", **changed(ev, scores=s)), ["e.npz", f"trial '{ev.trial_ids[3]}'", "column 1", "nan"]


def npz_inf_score(d, ev):
    s = np.array(ev.scores)
    s[0, 4] = np.inf
    return savez(d / "e.npz", **changed(ev, scores=s)), ["e.npz", "(row 0)", "is inf", "finite"]


def npz_minus_inf_score(d, ev):
    s = np.array(ev.scores)
    s[5, 0] = -np.inf
    return savez(d / "e.npz", **changed(ev, scores=s)), ["e.npz", "(row 5)", "-inf"]


def npz_duplicate_enrolled(d, ev):
    enrolled = np.array(ev.enrolled)
    enrolled[2] = enrolled[0]
    return savez(d / "e.npz", **changed(ev, enrolled=enrolled)), ["e.npz", f"'{ev.enrolled[0]}'", "more than once"]


def npz_duplicate_trial_ids(d, ev):
    ids = np.array(ev.trial_ids)
    ids[7] = ids[1]
    return savez(d / "e.npz", **changed(ev, trial_ids=ids)), [
        "e.npz",
        f"trial id '{ev.trial_ids[1]}'",
        "more than once",
    ]


def npz_one_enrolled(d, ev):
    arrays = changed(ev, scores=np.array(ev.scores)[:, :1], enrolled=np.array(ev.enrolled)[:1])
    return savez(d / "e.npz", **arrays), ["e.npz", "N >= 2", "N = 1"]


def npz_no_trials(d, ev):
    arrays = changed(
        ev, scores=np.zeros((0, N_ENROLLED)), trial_speakers=np.array([], dtype=str), trial_ids=np.array([], dtype=str)
    )
    return savez(d / "e.npz", **arrays), ["e.npz", "T >= 1"]


def npz_enrolled_too_short(d, ev):
    return savez(d / "e.npz", **changed(ev, enrolled=np.array(ev.enrolled)[:-1])), [
        "e.npz",
        "enrolled has shape (5,)",
        "6 columns",
    ]


def npz_speakers_too_short(d, ev):
    return savez(d / "e.npz", **changed(ev, trial_speakers=np.array(ev.trial_speakers)[:-2])), [
        "e.npz",
        "trial_speakers has shape",
        "rows",
    ]


def npz_trial_ids_too_long(d, ev):
    ids = np.r_[np.array(ev.trial_ids), ["extra"]]
    return savez(d / "e.npz", **changed(ev, trial_ids=ids)), ["e.npz", "trial_ids has shape", "rows"]


def npz_scores_1d(d, ev):
    return savez(d / "e.npz", **changed(ev, scores=np.array(ev.scores).ravel())), ["e.npz", "2-D"]


def npz_scores_3d(d, ev):
    return savez(d / "e.npz", **changed(ev, scores=np.array(ev.scores)[:, :, None])), ["e.npz", "2-D"]


def npz_enrolled_2d(d, ev):
    return savez(d / "e.npz", **changed(ev, enrolled=np.array(ev.enrolled).reshape(2, 3))), [
        "e.npz",
        "enrolled has shape (2, 3)",
    ]


def npz_scores_as_text(d, ev):
    return savez(d / "e.npz", **changed(ev, scores=np.array(ev.scores).astype(str))), [
        "e.npz",
        "scores has dtype <U",
        "expected real numbers",
    ]


def npz_scores_complex(d, ev):
    return savez(d / "e.npz", **changed(ev, scores=np.array(ev.scores) * (1 + 1j))), [
        "e.npz",
        "scores has dtype complex128",
        "real numbers",
    ]


def npz_scores_bool(d, ev):
    return savez(d / "e.npz", **changed(ev, scores=np.array(ev.scores) > 0)), ["e.npz", "scores has dtype bool"]


def npz_enrolled_float(d, ev):
    return savez(d / "e.npz", **changed(ev, enrolled=np.arange(N_ENROLLED, dtype=float))), [
        "e.npz",
        "enrolled has dtype float64",
        "expected ids",
    ]


def npz_object_ids(d, ev):
    path = d / "e.npz"
    np.savez(path, **changed(ev, trial_ids=np.array(list(ev.trial_ids), dtype=object)), allow_pickle=True)
    return path, ["e.npz", "trial_ids.npy", "python objects", "unpickle"]


def npz_object_scores(d, ev):
    path = d / "e.npz"
    np.savez(path, **changed(ev, scores=np.array(ev.scores).astype(object)), allow_pickle=True)
    return path, ["e.npz", "scores.npy", "python objects"]


def npz_pickled_member(d, ev):
    # a member named .npy that is a pickle (numpy.load(allow_pickle=True) would run it)
    members = [stored(f"{k}.npy", v) for k, v in fields(ev).items() if k != "scores"]
    members.append({"name": "scores.npy", "data": pickle.dumps(np.array(ev.scores))})
    return write_zip(d / "e.npz", members), ["e.npz", "scores.npy", "not a .npy array"]


def npz_truncated_file(d, ev):
    path = savez(d / "e.npz", **fields(ev))
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path, ["e.npz", "not a .npz archive"]


def npz_truncated_member(d, ev):
    # honest zip directory, but the .npy inside was cut short before it was zipped
    members = [stored(f"{k}.npy", v) for k, v in fields(ev).items()]
    members[0]["data"] = members[0]["data"][:-40]
    return write_zip(d / "e.npz", members), ["e.npz", "scores.npy", "truncated", "declares"]


def npz_trailing_bytes_in_member(d, ev):
    members = [stored(f"{k}.npy", v) for k, v in fields(ev).items()]
    members[0]["data"] = members[0]["data"] + bytes(16)
    return write_zip(d / "e.npz", members), ["e.npz", "scores.npy", "bytes after the array"]


def npz_header_claims_36e9_floats(d, ev):
    members = [stored(f"{k}.npy", v) for k, v in fields(ev).items() if k != "scores"]
    members.insert(0, {"name": "scores.npy", "data": npy_header((6_000_000, 6_000)) + bytes(64)})
    return write_zip(d / "e.npz", members), ["e.npz", "scores.npy", "(6000000, 6000) float64", "288.0 GB", "truncated"]


def npz_bad_crc(d, ev):
    path = savez(d / "e.npz", **fields(ev))  # stored, uncompressed: the scores' bytes sit in the file as they are
    raw = bytearray(path.read_bytes())
    at = bytes(raw).index(np.array(ev.scores).tobytes()[:16]) + 3
    raw[at] ^= 0x40
    path.write_bytes(bytes(raw))
    return path, ["e.npz", "scores.npy", "crc", "corrupt"]


def npz_bad_deflate_stream(d, ev):
    path = d / "e.npz"
    np.savez_compressed(path, **fields(ev))
    raw = bytearray(path.read_bytes())
    start = 30 + len("scores.npy")  # the first member's data, after its local header
    for k in range(start + 40, start + 60):
        raw[k] ^= 0xFF
    path.write_bytes(bytes(raw))
    return path, ["e.npz", "scores.npy", "corrupt"]


def npz_zip_bomb(d, ev):
    # 1.1 GiB of zero scores deflated into about 1 MB: refused before a byte is decompressed
    members = [zip_bomb_member("scores.npy", 70)]  # (18350080, 8) float64
    members += [stored(f"{k}.npy", v) for k, v in fields(ev).items() if k != "scores"]
    return write_zip(d / "e.npz", members), ["e.npz", "zip bomb", "1.2 GB"]


def npz_forged_sizes(d, ev):
    # the directory claims 2 GB from 100 compressed bytes: more than deflate can ever give
    members = [stored(f"{k}.npy", v) for k, v in fields(ev).items() if k != "scores"]
    members.insert(
        0, {"name": "scores.npy", "data": bytes(100), "method": DEFLATED, "crc": 0, "file_size": 2_000_000_000}
    )
    return write_zip(d / "e.npz", members), ["e.npz", "scores.npy", "more than deflate can give", "forged"]


def npz_stored_sizes_differ(d, ev):
    members = [stored(f"{k}.npy", v) for k, v in fields(ev).items()]
    members[0]["file_size"] = len(members[0]["data"]) * 10
    return write_zip(d / "e.npz", members), ["e.npz", "scores.npy", "sizes differ"]


def npz_not_npy_member(d, ev):
    members = [stored(f"{k}.npy", v) for k, v in fields(ev).items()]
    members.append({"name": "README.txt", "data": b"scores of system B3\n"})
    return write_zip(d / "e.npz", members), ["e.npz", "README.txt", "not a .npy array"]


def npz_duplicate_member(d, ev):
    members = [stored(f"{k}.npy", v) for k, v in fields(ev).items()]
    members.append(stored("scores.npy", np.zeros_like(ev.scores)))
    return write_zip(d / "e.npz", members), ["e.npz", "scores.npy", "appears twice"]


def npz_garbage_member(d, ev):
    members = [stored(f"{k}.npy", v) for k, v in fields(ev).items() if k != "scores"]
    members.append({"name": "scores.npy", "data": b"\x93NUMPY\x09\x00garbage"})
    return write_zip(d / "e.npz", members), ["e.npz", "scores.npy", "not a .npy array"]


def npz_encrypted_member(d, ev):
    members = [stored(f"{k}.npy", v) for k, v in fields(ev).items()]
    members[0]["data"] = members[0]["data"]
    raw = write_zip(d / "e.npz", members).read_bytes()
    # set the "encrypted" flag bit in the first local header and its central directory entry
    patched = bytearray(raw)
    patched[6] |= 1
    central = bytes(patched).index(b"PK\x01\x02")
    patched[central + 8] |= 1
    (d / "e.npz").write_bytes(bytes(patched))
    return d / "e.npz", ["e.npz", "scores.npy", "encrypted"]


def npz_empty_file(d, ev):
    (d / "e.npz").write_bytes(b"")
    return d / "e.npz", ["e.npz", "empty file"]


def npz_not_a_zip(d, ev):
    (d / "e.npz").write_text("enroll_spk,trial_spk,trial_id,score\n")
    return d / "e.npz", ["e.npz", "not a .npz archive", "not a zip file"]


def npz_directory(d, ev):
    (d / "e.npz").mkdir()
    return d / "e.npz", ["e.npz", "is a folder", "expected a score-set file (.npz or .csv)"]


def npz_absent(d, ev):
    return d / "absent.npz", ["absent.npz", "no such file"]


def npz_unknown_suffix(d, ev):
    (d / "e.txt").write_text("1 2 3\n")
    return d / "e.txt", ["e.txt", "unknown score-set format '.txt'"]


def npz_constant_row(d, ev):
    s = np.array(ev.scores)
    s[9] = 0.25
    return savez(d / "e.npz", **changed(ev, scores=s)), [
        "e.npz (eval)",
        "z-norm is undefined",
        f"'{ev.trial_ids[9]}'",
    ]


def npz_all_outsiders(d, ev):
    speakers = np.array([f"outsider{i}" for i in range(len(ev.trial_ids))])
    return savez(d / "e.npz", **changed(ev, trial_speakers=speakers)), [
        "e.npz (eval)",
        "no trial's speaker is enrolled",
    ]


# ----------------------------------------------------------------------------------- csv cases
HEADER = "enroll_spk,trial_spk,trial_id,score\n"


def long_rows(ev) -> list[str]:
    frame = ev.to_frame()
    return [f"{a},{b},{c},{s!r}\n" for a, b, c, s in frame.itertuples(index=False)]


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def csv_missing_column(d, ev):
    frame = ev.to_frame().drop(columns="trial_id")
    frame.to_csv(d / "e.csv", index=False)
    return d / "e.csv", ["e.csv", "missing column(s) trial_id"]


def csv_extra_column(d, ev):
    frame = ev.to_frame()
    frame["label"] = "target"
    frame.to_csv(d / "e.csv", index=False)
    return d / "e.csv", ["e.csv", "unexpected column", "'label'"]


def csv_pandas_index_column(d, ev):
    ev.to_frame().to_csv(d / "e.csv")  # index=True: an unnamed first column
    return d / "e.csv", ["e.csv", "unexpected column", "unnamed: 0"]


def csv_repeated_header_column(d, ev):
    rows = [line.rstrip("\n") + ",0.5\n" for line in long_rows(ev)]
    return write(d / "e.csv", HEADER.rstrip("\n") + ",score\n" + "".join(rows)), [
        "e.csv",
        "unexpected column",
        "score.1",
    ]


def csv_empty_file(d, ev):
    return write(d / "e.csv", ""), ["e.csv", "empty file"]


def csv_header_only(d, ev):
    return write(d / "e.csv", HEADER), ["e.csv", "no data rows"]


def csv_nan_score(d, ev):
    rows = long_rows(ev)
    a, b, c, _ = rows[4].split(",")
    rows[4] = f"{a},{b},{c},nan\n"
    return write(d / "e.csv", HEADER + "".join(rows)), ["e.csv", "line 6", "'nan'", "finite number"]


def csv_inf_score(d, ev):
    rows = long_rows(ev)
    a, b, c, _ = rows[0].split(",")
    rows[0] = f"{a},{b},{c},-inf\n"
    return write(d / "e.csv", HEADER + "".join(rows)), ["e.csv", "line 2", "'-inf'"]


def csv_text_score(d, ev):
    rows = long_rows(ev)
    a, b, c, _ = rows[7].split(",")
    rows[7] = f"{a},{b},{c},high\n"
    return write(d / "e.csv", HEADER + "".join(rows)), ["e.csv", "line 9", "'high'", "expected a finite number"]


def csv_truncated_last_line(d, ev):
    text = HEADER + "".join(long_rows(ev))
    cut = text.rstrip("\n")
    cut = cut[: cut.rindex(",") + 1]  # the last score is gone
    return write(d / "e.csv", cut), ["e.csv", f"line {len(ev.to_frame()) + 1}", "score ''"]


def csv_duplicate_pair(d, ev):
    rows = long_rows(ev)
    return write(d / "e.csv", HEADER + "".join(rows + [rows[3]])), ["e.csv", "duplicate pair", "lines 5 and"]


def csv_missing_pair(d, ev):
    rows = long_rows(ev)
    del rows[8]
    return write(d / "e.csv", HEADER + "".join(rows)), ["e.csv", "missing pair", "1 pairs missing"]


def csv_two_speakers_for_a_trial(d, ev):
    rows = long_rows(ev)
    a, _, c, s = rows[1].split(",")
    rows[1] = f"{a},someone-else,{c},{s}"
    return write(d / "e.csv", HEADER + "".join(rows)), ["e.csv", "line 3", "a trial has one speaker"]


def csv_one_enrolled(d, ev):
    frame = ev.to_frame()
    frame[frame["enroll_spk"] == ev.enrolled[0]].to_csv(d / "e.csv", index=False)
    return d / "e.csv", ["e.csv", "N >= 2"]


def csv_too_many_fields(d, ev):
    rows = long_rows(ev)
    rows[2] = rows[2].rstrip("\n") + ",0.1,0.2\n"
    return write(d / "e.csv", HEADER + "".join(rows)), ["e.csv", "not a readable csv", "line 4"]


def csv_binary_content(d, ev):
    np.savez_compressed(d / "x.npz", **fields(ev))
    (d / "e.csv").write_bytes((d / "x.npz").read_bytes())
    (d / "x.npz").unlink()
    return d / "e.csv", ["e.csv", "is a zip archive", "unzip it first"]


def csv_empty_trial_id(d, ev):
    rows = long_rows(ev)
    a, b, _, s = rows[5].split(",")
    rows[5] = f"{a},{b},,{s}"
    return write(d / "e.csv", HEADER + "".join(rows)), ["e.csv", "line 7", "empty trial_id"]


def csv_directory(d, ev):
    (d / "e.csv").mkdir()
    return d / "e.csv", ["e.csv", "is a folder", "expected a score-set file"]


def csv_5_mb_trial_id_with_a_bad_score(d, ev):
    rows = long_rows(ev)
    a, b, _, _ = rows[6].split(",")
    rows[6] = f"{a},{b},{'t' * 5_000_000},high\n"
    return write(d / "e.csv", HEADER + "".join(rows)), ["e.csv", "line 8", "'ttt", "more characters", "'high'"]


def csv_5_mb_score(d, ev):
    rows = long_rows(ev)
    a, b, c, _ = rows[2].split(",")
    rows[2] = f"{a},{b},{c},{'9' * 5_000_000}x\n"
    return write(d / "e.csv", HEADER + "".join(rows)), ["e.csv", "line 4", "more characters", "finite number"]


def csv_5_mb_column_name(d, ev):
    text = HEADER.rstrip("\n") + f",{'c' * 5_000_000}\n" + "".join(r.rstrip("\n") + ",x\n" for r in long_rows(ev))
    return write(d / "e.csv", text), ["e.csv", "unexpected column", "more characters"]


def csv_constant_row(d, ev):
    frame = ev.to_frame()
    frame.loc[frame["trial_id"] == ev.trial_ids[2], "score"] = 0.5
    frame.to_csv(d / "e.csv", index=False)
    return d / "e.csv", ["e.csv (eval)", "z-norm is undefined", f"'{ev.trial_ids[2]}'"]


CASES: list[Callable] = [
    npz_missing_scores,
    npz_wrong_key_name,
    npz_missing_trial_speakers,
    npz_extra_key,
    npz_nan_score,
    npz_inf_score,
    npz_minus_inf_score,
    npz_duplicate_enrolled,
    npz_duplicate_trial_ids,
    npz_one_enrolled,
    npz_no_trials,
    npz_enrolled_too_short,
    npz_speakers_too_short,
    npz_trial_ids_too_long,
    npz_scores_1d,
    npz_scores_3d,
    npz_enrolled_2d,
    npz_scores_as_text,
    npz_scores_complex,
    npz_scores_bool,
    npz_enrolled_float,
    npz_object_ids,
    npz_object_scores,
    npz_pickled_member,
    npz_truncated_file,
    npz_truncated_member,
    npz_trailing_bytes_in_member,
    npz_header_claims_36e9_floats,
    npz_bad_crc,
    npz_bad_deflate_stream,
    npz_zip_bomb,
    npz_forged_sizes,
    npz_stored_sizes_differ,
    npz_not_npy_member,
    npz_duplicate_member,
    npz_garbage_member,
    npz_encrypted_member,
    npz_empty_file,
    npz_not_a_zip,
    npz_directory,
    npz_absent,
    npz_unknown_suffix,
    npz_constant_row,
    npz_all_outsiders,
    csv_missing_column,
    csv_extra_column,
    csv_pandas_index_column,
    csv_repeated_header_column,
    csv_empty_file,
    csv_header_only,
    csv_nan_score,
    csv_inf_score,
    csv_text_score,
    csv_truncated_last_line,
    csv_duplicate_pair,
    csv_missing_pair,
    csv_two_speakers_for_a_trial,
    csv_one_enrolled,
    csv_too_many_fields,
    csv_binary_content,
    csv_empty_trial_id,
    csv_directory,
    csv_constant_row,
]

# a hostile field is cut in the message: the line stays short whatever the file holds
LONG_FIELDS = [csv_5_mb_trial_id_with_a_bad_score, csv_5_mb_score, csv_5_mb_column_name]


@pytest.fixture()
def folders(tmp_path, good_sets):
    dev, _ = good_sets
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    dev.save(data / "dev.npz")
    return data, out


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_bad_eval_file_is_refused(case, folders, good_sets, capsys):
    data, out = folders
    bad, expect = case(data, good_sets[1])
    argv = [
        "evaluate",
        "--dev",
        data / "dev.npz",
        "--eval",
        bad,
        "--json",
        out / "s.json",
        "--per-trial",
        out / "p.csv",
    ]
    assert_refused(argv, capsys, expect=expect, watch=[data, out])


DEV_CASES = [npz_nan_score, npz_zip_bomb, npz_object_ids, npz_constant_row, csv_missing_pair, csv_constant_row]


@pytest.mark.parametrize("case", DEV_CASES, ids=[c.__name__ for c in DEV_CASES])
def test_bad_dev_file_is_refused_and_named_as_dev(case, folders, good_sets, capsys):
    data, out = folders
    _, ev = good_sets
    ev.save(data / "eval.npz")
    bad, expect = case(data, good_sets[0])
    expect = [e.replace("(eval)", "(dev)") for e in expect]
    argv = ["evaluate", "--dev", bad, "--eval", data / "eval.npz", "--json", out / "s.json"]
    assert_refused(argv, capsys, expect=expect, watch=[data, out])


@pytest.mark.parametrize(
    "command",
    [
        ["sensitivity", "--calibrators", "logistic,isotonic"],
        ["nsweep", "--repeats", "2"],
        ["longitudinal", "--k", "1,2", "--n-boot", "100"],
    ],
    ids=["sensitivity", "nsweep", "longitudinal"],
)
@pytest.mark.parametrize("case", [npz_header_claims_36e9_floats, csv_duplicate_pair, npz_constant_row])
def test_other_commands_refuse_the_same_files(command, case, folders, good_sets, capsys):
    data, out = folders
    bad, expect = case(data, good_sets[1])
    argv = [command[0], "--dev", data / "dev.npz", "--eval", bad, *command[1:], "--json", out / "r.json"]
    assert_refused(argv, capsys, expect=expect, watch=[data, out])


def test_the_zip_bomb_is_refused_before_it_is_decompressed(folders, good_sets, capsys):
    """The directory and the headers suffice: the run's peak allocation stays far below the bomb's 1.2 GB."""
    data, out = folders
    bad, expect = npz_zip_bomb(data, good_sets[1])
    tracemalloc.start()
    try:
        assert_refused(["evaluate", "--dev", data / "dev.npz", "--eval", bad], capsys, expect=expect, watch=[data, out])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000, f"peak allocation {peak:,} bytes"


@pytest.mark.parametrize("case", LONG_FIELDS, ids=[c.__name__ for c in LONG_FIELDS])
def test_a_5_mb_field_gives_a_short_line_naming_file_and_row(case, folders, good_sets, capsys):
    data, out = folders
    bad, expect = case(data, good_sets[1])
    argv = ["evaluate", "--dev", data / "dev.npz", "--eval", bad, "--json", out / "s.json"]
    line = assert_refused(argv, capsys, expect=expect, watch=[data, out])
    assert len(line.replace(str(data), "<dir>")) < 500, line[:1000]


# ------------------------------------------------------------------------- Kaldi score files
KALDI_KEY = "A t1 target\nB t1 nontarget\nA t2 nontarget\nB t2 target\n"


@pytest.mark.parametrize(
    "scores, expect",
    [
        ("A t1 0.9\nB t1 0.1\nA t2 high\nB t2 0.7\n", r"scores: line 3 \(trial 't2', enrolled 'A'\) has score 'high'"),
        ("A t1 0.9\nB t1 nan\nA t2 0.2\nB t2 0.7\n", r"scores: line 2 \(trial 't1', enrolled 'B'\)"),
        ("A t1 0.9\nB t1 0.1\nA t2 0.2\nB t2 0.7\nA t1 0.5\n", r"at lines 1 and 5; each pair"),
        ("\nA t1 0.9\n\nB t1 0.1\nA t2 0.2\n\nB t2 x\n", r"scores: line 7 \(trial 't2', enrolled 'B'\)"),
    ],
    ids=["bad-score-line-3", "nan-line-2", "duplicate-lines-1-and-5", "blank-lines-skipped"],
)
def test_kaldi_score_file_errors_name_the_line_of_the_file(tmp_path, scores, expect):
    """Kaldi score files have no header: the first line is line 1, and blank lines still count."""
    from lidframe.data.kaldi import scoreset_from_kaldi

    (tmp_path / "scores").write_text(scores)
    (tmp_path / "key").write_text(KALDI_KEY)
    with pytest.raises(InputError, match=expect):
        scoreset_from_kaldi(tmp_path / "scores", key_path=tmp_path / "key")


def test_from_frame_names_the_lines_it_is_given(good_sets):
    frame = good_sets[1].to_frame().astype({"score": object})
    frame.loc[5, "score"] = "oops"
    with pytest.raises(InputError, match=r"table: line 7 \(trial .*\) has score 'oops'"):
        ScoreSet.from_frame(frame)  # a CSV: header on line 1, row 5 on line 7 ... row r on line r + 2
    with pytest.raises(InputError, match=r"x.txt: line 106 \(trial"):
        ScoreSet.from_frame(frame, source="x.txt", lines=np.arange(len(frame)) + 101)
