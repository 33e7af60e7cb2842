"""The corpus's outsiders: speakers enrolled nowhere, with trials in dev or eval, and a split that does not move.

The engines are not run here (the synthesis is replaced by a stub): what is checked is the
plan the data dirs are written from -- which speakers are outsiders, that none of them is
enrolled or trains, that their trials are in ``dev_trials`` / ``eval_trials``, and that
the split speakers and their sentences are those of the corpus without outsiders.
"""

from __future__ import annotations

import shutil

import pytest

from lidframe import InputError
from lidframe.data.kaldi import read_data_dir

VOICES = 12
SENTENCES, ENROL = 5, 2


@pytest.fixture
def stub_engines(monkeypatch):
    """Twelve pretended split voices and four outsider voices; synthesis writes nothing."""
    import lidframe.audio.corpus as corpus

    split = [corpus.Voice("espeak", f"voice{k:02d}", ("-v", f"x{k}")) for k in range(VOICES)]
    extra = [corpus.Voice("espeak", f"outsider{k}", ("-v", f"o{k}")) for k in range(4)]
    monkeypatch.setattr(corpus, "available_voices", lambda: split)
    monkeypatch.setattr(corpus, "outsider_voices", lambda: extra)
    monkeypatch.setattr(corpus, "_engine_versions", lambda: {"espeak": "test"})
    monkeypatch.setattr(corpus, "_synthesize_missing", lambda work, *, jobs, progress: 0)
    return corpus, {v.speaker for v in split}, {v.speaker for v in extra}


def _dirs(folder):
    """data dir -> {utterance id: (speaker, wav.scp location)}."""
    names = ("train", "dev_enrolls", "dev_trials", "eval_enrolls", "eval_trials")
    return {
        name: {
            u.utt_id: (u.speaker, str(u.path).rsplit("/", 1)[-1])
            for u in read_data_dir(folder / name, wav_paths="data-dir")
        }
        for name in names
    }


def test_outsiders_are_enrolled_nowhere_and_their_trials_are_in_dev_and_eval(stub_engines, tmp_path):
    corpus, split_ids, outsider_ids = stub_engines
    report = corpus.build_corpus(
        tmp_path / "c", sentences=SENTENCES, enrol=ENROL, seed=3, outsiders=(1, 2), wav_paths="data-dir"
    )
    dirs = _dirs(tmp_path / "c")
    dev_out, eval_out = report["outsiders"]["dev"], report["outsiders"]["eval"]
    assert (len(dev_out), len(eval_out)) == (1, 2) and set(dev_out + eval_out) <= outsider_ids
    assert not set(dev_out) & set(eval_out)
    # enrolled and trained nowhere; the split speakers are the given voices only
    for name in ("train", "dev_enrolls", "eval_enrolls"):
        assert not {s for s, _ in dirs[name].values()} & outsider_ids, name
    assert {s for ids in report["speakers"].values() for s in ids} == split_ids
    # each outsider has the trials of an enrolled speaker (sentences - enrol), in its split's trials only
    for split, outsiders in (("dev", dev_out), ("eval", eval_out)):
        other = "eval" if split == "dev" else "dev"
        for speaker in outsiders:
            utts = [u for u, (s, _) in dirs[f"{split}_trials"].items() if s == speaker]
            assert sorted(utts) == [f"{speaker}-{k:03d}" for k in range(ENROL, SENTENCES)]
            assert not [u for u, (s, _) in dirs[f"{other}_trials"].items() if s == speaker]
    enrolled = {s for s, _ in dirs["eval_enrolls"].values()}
    assert {s for s, _ in dirs["eval_trials"].values()} - enrolled == set(eval_out)
    n_split = VOICES * SENTENCES
    assert report["utterances"] == n_split + 3 * (SENTENCES - ENROL)
    assert report["engines"] == {"espeak": VOICES + 3}


def test_the_split_and_its_sentences_are_those_of_the_corpus_without_outsiders(stub_engines, tmp_path):
    corpus, _, outsider_ids = stub_engines
    without = corpus.build_corpus(tmp_path / "a", sentences=SENTENCES, enrol=ENROL, seed=5, wav_paths="data-dir")
    with_ = corpus.build_corpus(
        tmp_path / "b", sentences=SENTENCES, enrol=ENROL, seed=5, outsiders=(2, 2), wav_paths="data-dir"
    )
    assert without["speakers"] == with_["speakers"] and without["outsiders"] == {"dev": [], "eval": []}
    a, b = _dirs(tmp_path / "a"), _dirs(tmp_path / "b")
    for name in a:
        # the same utterances of the split speakers, with the same audio (its name carries the sentence's digest)
        kept = {u: row for u, row in b[name].items() if row[0] not in outsider_ids}
        assert kept == a[name], name


def test_more_outsiders_than_voices_is_one_line_before_any_work(stub_engines, tmp_path):
    corpus, _, _ = stub_engines
    with pytest.raises(InputError, match=r"^5 outsider speakers asked for, 4 outsider voices here \(espeak-ng"):
        corpus.build_corpus(tmp_path / "c", sentences=SENTENCES, enrol=ENROL, outsiders=(2, 3))
    with pytest.raises(InputError, match="outsiders must be two non-negative counts"):
        corpus.build_corpus(tmp_path / "c", sentences=SENTENCES, enrol=ENROL, outsiders=(-1, 3))
    assert not (tmp_path / "c").exists()


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed (apt-get install espeak-ng)")
def test_the_outsider_voices_are_espeak_voices_no_split_speaker_has():
    from lidframe.audio.corpus import available_voices, outsider_voices

    extra = outsider_voices()
    assert len(extra) >= 9 and {v.engine for v in extra} == {"espeak"}
    assert len({v.speaker for v in extra}) == len(extra) == len({v.args for v in extra})
    split = available_voices()
    assert not {v.speaker for v in extra} & {v.speaker for v in split}
    assert not {v.args for v in extra} & {v.args for v in split}
    # every variant is one espeak-ng has (an unknown one would fall back silently to the default voice)
    import subprocess

    listing = subprocess.run(["espeak-ng", "--voices=variant"], capture_output=True, text=True, check=True).stdout
    known = {line.split()[-1].rsplit("/", 1)[-1] for line in listing.splitlines()[1:] if line.split()}
    assert {v.args[1].split("+")[1] for v in extra} <= known
