"""Which corpus voices a word error rate holds for (:func:`lidframe.audio.corpus.recognisable_voice`)."""

from lidframe.audio import corpus
from lidframe.audio.corpus import RECOGNISABLE_VOICES, Voice, recognisable_voice

#: Written out here: the English voices built from one real speaker's recordings (flite's, festival's).
ENGLISH_FROM_RECORDINGS = {
    "flite-kal16",
    "flite-awb",
    "flite-rms",
    "flite-slt",
    "festival-ked_diphone",
    "festival-kal_diphone",
    "festival-cmu_us_slt_arctic_hts",
}


def test_recognisable_voices_are_the_english_voices_built_from_recordings():
    assert set(RECOGNISABLE_VOICES) == ENGLISH_FROM_RECORDINGS and len(RECOGNISABLE_VOICES) == 7
    assert all(recognisable_voice(voice) for voice in ENGLISH_FROM_RECORDINGS)
    others = [
        "espeak-en-us-m1",  # formant synthesis: ~90 % WER before any anonymisation
        "festival-czech_dita",  # Czech, Russian, Catalan, Finnish voices reading English: 110-150 %
        "festival-msu_ru_nsh_clunits",
        "festival-upc_ca_ona_hts",
        "festival-suo_fi_lj_diphone",
        "mb-us1",  # recorded diphones, not measured
        "flite",
        "rms",
        "",
    ]
    assert not any(recognisable_voice(voice) for voice in others)


def test_every_recognisable_voice_is_one_the_corpus_can_make(monkeypatch):
    """The names are the corpus's own speaker ids (a typo would leave a voice out of the utility column)."""
    made = {f"flite-{name}" for name in corpus._FLITE_VOICES}
    made |= {f"festival-{name}" for name, _ in corpus._FESTIVAL_VOICES}
    assert set(RECOGNISABLE_VOICES) <= made
    # and available_voices gives them those ids: flite's listing and festival's voice folders, pretended here
    monkeypatch.setattr(
        corpus.shutil, "which", lambda name: f"/usr/bin/{name}" if name in ("flite", "festival") else None
    )

    class Listing:
        stdout = "Voices available: " + " ".join(corpus._FLITE_VOICES)

    monkeypatch.setattr(corpus.subprocess, "run", lambda *args, **kwargs: Listing())
    monkeypatch.setattr(corpus, "_festival_installed", lambda: {"ked_diphone", "czech_dita"})
    voices = corpus.available_voices()
    assert all(isinstance(v, Voice) for v in voices)
    assert {v.speaker for v in voices if recognisable_voice(v.speaker)} == {
        "flite-kal16",
        "flite-awb",
        "flite-rms",
        "flite-slt",
        "festival-ked_diphone",
    }
