"""The analyses in the open set: sensitivity carries it, the N-sweep and the longitudinal attacker stay closed-set.

Sensitivity rows are compared with ``lidframe.evaluate`` of each calibrator under the same
open prior, spread and worst case with a max/min taken here; the closed-set analyses on
sets with outsider trials are compared with the same analyses on the sets without them
(the documented definition: outsider trials left out, calibrator fitted on the enrolled
dev trials).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lidframe import InputError, ScoreSet, evaluate, sensitivity
from lidframe.analyses.compare import paired_comparison
from lidframe.analyses.longitudinal import longitudinal
from lidframe.analyses.nsweep import nsweep
from lidframe.analyses.sensitivity import OPEN_SET_SENSITIVITY_METRICS, SENSITIVITY_METRICS
from lidframe.data.simulate import simulate_system

OPEN = "uniform?outside=0.25"


def with_outsiders(data: ScoreSet, n_dropped: int) -> ScoreSet:
    """*data* with its last *n_dropped* enrolled speakers removed: their trials become outsider trials."""
    return ScoreSet(data.scores[:, :-n_dropped], data.enrolled[:-n_dropped], data.trial_speakers, data.trial_ids)


@pytest.fixture(scope="module")
def sets():
    dev, ev = simulate_system(leakage=0.4, seed=8, n_enrolled=12, trials_per_speaker=8)
    return with_outsiders(dev, 3), with_outsiders(ev, 2)


def test_sensitivity_rows_carry_the_open_set_of_each_calibrator(sets):
    dev, ev = sets
    specs = ["logistic", "isotonic", "beta"]  # temperature has no LLR level: refused in the open set
    result = sensitivity(dev, ev, specs, prior=OPEN)
    for row in result.rows:
        s = evaluate(dev, ev, calibrator=row.calibrator, prior=OPEN).summary
        o = s.open_set
        assert o is not None
        for key in ("alid", "pdr", "lid_pos", "lid_neg", "lid_q99", "lid_max", "eer", "cllr"):
            assert row[key] == s[key], key  # over every trial, as the summary
        assert (row.alid_enrolled, row.alid_outsider) == (o.enrolled.alid, o.outsider.alid)
        assert (row.membership_enrolled, row.misattribution_rate) == (o.membership_enrolled.alid, o.misattribution_rate)
    for metric, direction in {**SENSITIVITY_METRICS, **OPEN_SET_SENSITIVITY_METRICS}.items():
        values = [getattr(r, metric) for r in result.rows]
        assert result.spread[metric] == pytest.approx(max(values) - min(values), abs=1e-15), metric
        best = max(values) if direction == "max" else min(values)
        assert result.worst_case[metric]["value"] == best
        assert getattr(result.rows[specs.index(result.worst_case[metric]["calibrator"])], metric) == best
    lids = result.lids()
    for spec, r in result.results.items():  # every trial's LID, outsiders included
        assert lids[spec].size == ev.n_trials and np.isfinite(lids[spec]).all()
        np.testing.assert_array_equal(lids[spec], r.lid)
    json.dumps(result.to_dict())


def test_closed_set_sensitivity_has_no_open_set_key(sets):
    dev, ev = sets
    result = sensitivity(dev, ev, ["logistic", "isotonic"])
    assert all(set(OPEN_SET_SENSITIVITY_METRICS).isdisjoint(row) for row in result.rows)
    assert set(result.spread) == set(result.worst_case) == set(SENSITIVITY_METRICS)
    assert all(v.size == ev.n_trials - ev.n_outsider_trials for v in result.lids().values())


def test_the_n_sweep_is_closed_set_whatever_the_sets_hold(sets):
    dev, ev = sets
    with_them = nsweep(dev, ev, sizes=[2, 5, ev.n_enrolled], repeats=4, seed=3)
    without = nsweep(dev.closed_set(), ev.closed_set(), sizes=[2, 5, ev.n_enrolled], repeats=4, seed=3)
    assert with_them.to_dict() == without.to_dict()
    full = with_them.rows[-1]
    assert full.alid == pytest.approx(evaluate(dev, ev).summary.alid, abs=1e-12)  # the closed-set evaluation
    assert not math.isclose(full.alid, evaluate(dev, ev, prior=OPEN).summary.alid, abs_tol=1e-6)


def test_the_longitudinal_attacker_is_closed_set_whatever_the_sets_hold(sets):
    dev, ev = sets
    kwargs = {"fusion": "temperature", "bootstrap": None, "seed": 2, "groups_per_speaker": 3}
    with_them = longitudinal(dev, ev, [1, 2, 4], **kwargs)
    without = longitudinal(dev.closed_set(), ev.closed_set(), [1, 2, 4], **kwargs)
    assert with_them.to_dict() == without.to_dict()
    one = longitudinal(dev, ev, [1], bootstrap=None).rows[0]  # k = 1, sum fusion: each trial's closed-set LID
    assert one.alid == pytest.approx(evaluate(dev, ev).summary.alid, abs=1e-12)


def test_a_paired_comparison_of_open_set_lids_uses_every_trial(sets):
    dev, ev = sets
    a = evaluate(dev, ev, prior=OPEN)
    b = evaluate(dev, ev, calibrator="isotonic", prior=OPEN)
    result = paired_comparison(a.lid, b.lid, speakers=ev.trial_speakers, n_perm=200)
    assert result["alid"].a == pytest.approx(a.summary.alid) and result["alid"].b == pytest.approx(b.summary.alid)
    closed = evaluate(dev, ev)
    with pytest.raises(InputError, match="outsider trials of a closed-set evaluation"):
        paired_comparison(closed.lid, a.lid, speakers=ev.trial_speakers)
