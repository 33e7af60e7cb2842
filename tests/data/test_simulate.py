"""The simulator's outsider speakers: not enrolled, appended after the enrolled speakers' trials, the rest unchanged."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe import InputError
from lidframe.data.simulate import simulate_scoreset, simulate_system


@given(
    n_enrolled=st.integers(2, 6),
    trials_per_speaker=st.integers(1, 4),
    n_outsiders=st.integers(0, 4),
    leaky_share=st.sampled_from([0.0, 0.5, 1.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_outsiders_are_appended_and_leave_every_other_score_as_it_was(
    n_enrolled, trials_per_speaker, n_outsiders, leaky_share, seed
):
    common = {
        "leakage": 0.4,
        "n_enrolled": n_enrolled,
        "trials_per_speaker": trials_per_speaker,
        "leaky_share": leaky_share,
        "dim": 8,
    }
    alone = simulate_scoreset(**common, rng=seed)
    both = simulate_scoreset(**common, n_outsiders=n_outsiders, rng=seed)
    n_enrolled_trials = n_enrolled * trials_per_speaker
    n_outsider_trials = n_outsiders * trials_per_speaker
    assert both.scores.shape == (n_enrolled_trials + n_outsider_trials, n_enrolled)
    assert list(both.enrolled) == [f"spk{k:03d}" for k in range(n_enrolled)] == list(alone.enrolled)
    # the enrolled speakers' trials come first, bit for bit the draw without outsiders
    np.testing.assert_array_equal(both.scores[:n_enrolled_trials], alone.scores)
    assert list(both.trial_ids[:n_enrolled_trials]) == list(alone.trial_ids)
    # then the outsiders': speakers numbered on after the enrolled ones, none of them enrolled
    outsiders = [f"spk{k:03d}" for k in range(n_enrolled, n_enrolled + n_outsiders)]
    assert list(both.trial_speakers[n_enrolled_trials:]) == [s for s in outsiders for _ in range(trials_per_speaker)]
    assert both.is_outsider.tolist() == [False] * n_enrolled_trials + [True] * n_outsider_trials
    assert both.n_outsider_trials == n_outsider_trials and len(set(both.trial_ids)) == both.n_trials
    assert np.all(np.abs(both.scores) <= 1.0 + 1e-12)  # cosines


def test_no_profile_is_an_outsiders_own():
    # without anonymisation and with little within-speaker noise a mated cosine is near 1,
    # while an outsider's trial is near no profile: its best score stays below every mated one
    s = simulate_scoreset(leakage=1.0, within_sd=0.05, n_enrolled=29, trials_per_speaker=5, n_outsiders=10, rng=3)
    enrolled_rows = np.flatnonzero(~s.is_outsider)
    mated = s.scores[enrolled_rows, s.true_index[enrolled_rows]]
    assert s.scores[s.is_outsider].max() < mated.min()
    assert mated.min() > 0.95


def test_simulate_system_gives_dev_and_eval_their_own_outsiders():
    dev, ev = simulate_system(leakage=0.5, seed=4, n_enrolled=3, trials_per_speaker=2, n_outsiders=2)
    assert dev.n_outsider_trials == ev.n_outsider_trials == 4
    assert list(dev.trial_speakers[-4:]) == ["dev-spk003"] * 2 + ["dev-spk004"] * 2
    assert list(ev.trial_speakers[-4:]) == ["eval-spk003"] * 2 + ["eval-spk004"] * 2


def test_a_negative_number_of_outsiders_is_an_input_error():
    with pytest.raises(InputError, match="n_outsiders >= 0"):
        simulate_scoreset(leakage=0.5, n_outsiders=-1)
