"""Bad Kaldi data dirs (``wav.scp``, ``utt2spk``, ``spk2utt``): one line naming the file, line or id.

Run through ``lidframe score --attacker random`` (which never opens the audio, so only the
data dirs are under test) and, for the enrolment dir, ``lidframe anonymise``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.bad_input.conftest import assert_refused

ENROL = [(f"e{j}{k}", f"spk{j}") for j in range(3) for k in range(2)]
TRIALS = [(f"t{i}", f"spk{i % 3}") for i in range(6)]


def data_dir(folder: Path, utts: list[tuple[str, str]]) -> Path:
    folder.mkdir()
    (folder / "wav.scp").write_text("".join(f"{u} wav/{u}.wav\n" for u, _ in utts))
    (folder / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utts))
    return folder


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


# each: (enrolment dir, trial dir) -> (fragments the message must hold); it breaks one of them
def dir_missing(e, t):
    e.rename(e.with_name("gone"))
    return ["enrol", "no such data directory"]


def dir_is_a_file(e, t):
    for f in e.iterdir():
        f.unlink()
    e.rmdir()
    e.write_text("not a folder\n")
    return ["enrol", "is a file; expected a data directory"]


def dir_is_a_symlink_loop(e, t):
    shutil.rmtree(e)
    e.symlink_to(e.name)  # the link points at itself
    return ["enrol", "is a symlink loop", "expected a data directory"]


def wav_scp_missing(e, t):
    (e / "wav.scp").unlink()
    return ["wav.scp", "no such wav.scp file"]


def utt2spk_missing(e, t):
    (t / "utt2spk").unlink()
    return ["trials/utt2spk", "no such utt2spk file"]


def wav_scp_is_a_directory(e, t):
    (e / "wav.scp").unlink()
    (e / "wav.scp").mkdir()
    return ["wav.scp", "is a folder"]


def wav_scp_empty(e, t):
    (e / "wav.scp").write_text("")
    return ["wav.scp", "empty wav.scp file"]


def utt2spk_blank_lines_only(e, t):
    (t / "utt2spk").write_text("\n  \n\n")
    return ["utt2spk", "empty utt2spk file"]


def wav_scp_piped_command(e, t):
    (e / "wav.scp").write_text("".join(f"{u} sox wav/{u}.flac -t wav - |\n" for u, _ in ENROL))
    return ["wav.scp", "'e00'", "piped command", "does not run shell commands"]


def wav_scp_piped_with_trailing_space(e, t):
    lines = (t / "wav.scp").read_text().splitlines()
    lines[2] = "t2 flac -c -d -s wav/t2.flac |   "
    (t / "wav.scp").write_text("\n".join(lines) + "\n")
    return ["trials/wav.scp", "'t2'", "piped command"]


def wav_scp_stdin(e, t):
    lines = (t / "wav.scp").read_text().splitlines()
    lines[0] = "t0 -"
    (t / "wav.scp").write_text("\n".join(lines) + "\n")
    return ["wav.scp", "'t0'", "standard input"]


def wav_scp_archive_offset(e, t):
    lines = (t / "wav.scp").read_text().splitlines()
    lines[1] = "t1 data/wav.ark:10234"
    (t / "wav.scp").write_text("\n".join(lines) + "\n")
    return ["wav.scp", "'t1'", "offset into a kaldi archive"]


def wav_scp_line_without_path(e, t):
    append(e / "wav.scp", "e99\n")
    return ["wav.scp", "line 7", "1 field(s)", "expected 2"]


def wav_scp_duplicate_utterance(e, t):
    append(e / "wav.scp", "e00 wav/other.wav\n")
    return ["wav.scp", "'e00' appears twice"]


def utt2spk_duplicate_utterance(e, t):
    append(t / "utt2spk", "t3 spk2\n")
    return ["utt2spk", "'t3' appears twice"]


def utt2spk_line_without_speaker(e, t):
    append(e / "utt2spk", "e21\n")
    return ["utt2spk", "line 7", "1 field(s)", "exactly 2"]


def utt2spk_three_fields(e, t):
    lines = (e / "utt2spk").read_text().splitlines()
    lines[3] = "e11 spk1 male"
    (e / "utt2spk").write_text("\n".join(lines) + "\n")
    return ["utt2spk", "line 4", "3 field(s)", "exactly 2"]


def utt2spk_not_utf8(e, t):
    (t / "utt2spk").write_bytes((t / "utt2spk").read_bytes() + b"t9 J\xf6rg\n")
    return ["utt2spk", "line 7", "not utf-8"]


def utterance_without_speaker(e, t):
    (t / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in TRIALS[:-1]))
    return ["trials", "wav.scp and utt2spk disagree", "no speaker for 't5'"]


def speaker_without_audio(e, t):
    append(e / "utt2spk", "e30 spk3\n")
    return ["enrol", "wav.scp and utt2spk disagree", "no audio for 'e30'"]


def spk2utt_stale(e, t):
    (e / "spk2utt").write_text("spk0 e00 e01\nspk1 e10\nspk2 e11 e20 e21\n")
    return ["spk2utt", "'e11'", "under speaker 'spk2'", "utt2spk says 'spk1'"]


def spk2utt_incomplete(e, t):
    (e / "spk2utt").write_text("spk0 e00 e01\nspk1 e10 e11\nspk2 e20\n")
    return ["spk2utt", "not in spk2utt: 'e21'"]


def spk2utt_repeats_an_utterance(e, t):
    (e / "spk2utt").write_text("spk0 e00 e01\nspk1 e10 e11 e00\nspk2 e20 e21\n")
    return ["spk2utt", "'e00'", "listed under 'spk0' and 'spk1'"]


def trial_also_enrolled(e, t):
    append(t / "wav.scp", "e10 wav/e10.wav\n")
    append(t / "utt2spk", "e10 spk1\n")
    return ["--trials", "'e10'", "also in --enrol"]


CASES: list[Callable] = [
    dir_missing,
    dir_is_a_file,
    dir_is_a_symlink_loop,
    wav_scp_missing,
    utt2spk_missing,
    wav_scp_is_a_directory,
    wav_scp_empty,
    utt2spk_blank_lines_only,
    wav_scp_piped_command,
    wav_scp_piped_with_trailing_space,
    wav_scp_stdin,
    wav_scp_archive_offset,
    wav_scp_line_without_path,
    wav_scp_duplicate_utterance,
    utt2spk_duplicate_utterance,
    utt2spk_line_without_speaker,
    utt2spk_three_fields,
    utt2spk_not_utf8,
    utterance_without_speaker,
    speaker_without_audio,
    spk2utt_stale,
    spk2utt_incomplete,
    spk2utt_repeats_an_utterance,
    trial_also_enrolled,
]


@pytest.fixture()
def dirs(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    return data_dir(data / "enrol", ENROL), data_dir(data / "trials", TRIALS), out


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_bad_data_dir_is_refused_by_score(case, dirs, capsys):
    enrol, trials, out = dirs
    expect = case(enrol, trials)
    argv = ["score", "--attacker", "random", "--enrol", enrol, "--trials", trials, "--out", out / "s.npz"]
    assert_refused(argv, capsys, expect=expect, watch=[enrol.parent, out])


def test_the_same_trial_in_two_trial_dirs_is_refused(dirs, capsys):
    enrol, trials, out = dirs
    more = data_dir(trials.parent / "more", [("t4", "spk1"), ("t9", "spk0")])
    argv = ["score", "--attacker", "random", "--enrol", enrol, "--trials", trials, "--trials", more]
    assert_refused(
        [*argv, "--out", out / "s.npz"],
        capsys,
        expect=["--trials", "more", "'t4'", "also in"],
        watch=[enrol.parent, out],
    )


@pytest.mark.parametrize("case", [wav_scp_piped_command, utt2spk_three_fields, spk2utt_stale], ids=lambda c: c.__name__)
def test_anonymise_refuses_the_same_dirs(case, dirs, capsys):
    pytest.importorskip("soundfile")
    enrol, trials, out = dirs
    expect = case(enrol, trials)
    assert_refused(
        ["anonymise", "--method", "resample", enrol, out / "anon"], capsys, expect=expect, watch=[enrol.parent, out]
    )


def test_a_good_data_dir_is_read_in_wav_scp_order(dirs):
    """The checks are not blanket refusals: the same dirs, unbroken (with a matching spk2utt), read as written."""
    from lidframe.data.kaldi import read_data_dir

    enrol, _, _ = dirs
    (enrol / "spk2utt").write_text("spk0 e00 e01\nspk1 e10 e11\nspk2 e20 e21\n")
    utts = read_data_dir(enrol, wav_paths="data-dir")
    assert [(u.utt_id, u.speaker) for u in utts] == ENROL
    assert [u.path for u in utts] == [str(enrol / "wav" / f"{u}.wav") for u, _ in ENROL]
    # by default a relative path is read against the current folder, as Kaldi reads it
    assert [u.path for u in read_data_dir(enrol)] == [os.path.join(os.getcwd(), "wav", f"{u}.wav") for u, _ in ENROL]


def test_lines_are_an_editors_and_fields_are_split_at_ascii_blanks_only(tmp_path):
    """A form feed or U+2028 inside a line does not start another line (later lines keep their numbers), and a
    non-breaking space is part of an id, as in Kaldi (which splits at ASCII blanks only)."""
    from lidframe.data.kaldi import numbered_rows
    from lidframe.errors import InputError

    table = tmp_path / "utt2spk"
    table.write_text("u1 s1\nu2\u2028x s2\n\nu3\u00a0y s3\nu4 s4 extra\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 5 has 3 field"):
        numbered_rows(table, what="utt2spk", exact=True)
    table.write_text("u1 s1\nu2\u2028x s2\n\nu3\u00a0y\x0cs3\n", encoding="utf-8")
    assert numbered_rows(table, what="utt2spk", exact=True) == [
        (1, ["u1", "s1"]),
        (2, ["u2\u2028x", "s2"]),
        (4, ["u3\u00a0y", "s3"]),
    ]
