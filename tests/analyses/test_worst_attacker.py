"""The worst case across attackers (lidframe.analyses.worst_attacker): the pick, its separation, its verdict.

The pick is checked against pandas (``groupby(...).idxmax()``, the first row of a group's
largest value) over Hypothesis-drawn tables, the separation against the rule written out
here, and the verdict of a system's worst case against ``judge`` of each attacker: the
system fails where one of its attackers fails a limit, even when the others pass.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe.analyses.verdict import Judgement, Limit, Policy, Verdict, judge, read_policy
from lidframe.analyses.worst_attacker import AttackScore, judge_worst, worst_attackers, worst_case_json
from lidframe.core.evaluation import evaluate
from lidframe.data.simulate import simulate_system
from lidframe.errors import InputError
from lidframe.stats.bootstrap import Bootstrap
from lidframe.stats.interval import Interval

pd = pytest.importorskip("pandas")

NAN = math.nan
#: Estimates from a small set, so that draws tie often; NaN: the metric was not computed.
estimates = st.one_of(st.sampled_from([0.0, 0.5, 1.0, 2.0]), st.floats(0, 4, allow_nan=False), st.just(NAN))


@st.composite
def attack_tables(draw):
    """Rows (system, attacker, alid, alid_low, alid_high, q99, q99_low, q99_high): some without intervals."""
    rows = []
    for system in draw(st.lists(st.sampled_from("abcd"), min_size=1, max_size=4, unique=True)):
        attackers = draw(st.lists(st.sampled_from(["x", "y", "z", "w", "v"]), min_size=1, max_size=5, unique=True))
        for attacker in attackers:
            row = [system, attacker]
            for _ in ("alid", "lid_q99"):
                estimate = draw(estimates)
                if draw(st.booleans()) and not math.isnan(estimate):
                    below, above = draw(st.floats(0, 1)), draw(st.floats(0, 1))
                    row += [estimate, estimate - below, estimate + above]
                else:
                    row += [estimate, NAN, NAN]
            rows.append(row)
    return pd.DataFrame(
        rows, columns=["system", "attacker", "alid", "alid_low", "alid_high", "q99", "q99_low", "q99_high"]
    )


def _scores(frame):
    return [
        AttackScore(
            r.system,
            r.attacker,
            Interval(r.alid, r.alid_low, r.alid_high),
            Interval(r.q99, r.q99_low, r.q99_high),
        )
        for r in frame.itertuples()
    ]


def _separation(frame, pick_row, column):
    """The separation rule written out: the runner-up is the largest estimate of the other rows."""
    others = frame.drop(index=pick_row).dropna(subset=[column])
    if others.empty:
        return "alone", None
    runner = others[column].idxmax()
    mine, theirs = frame.loc[pick_row], frame.loc[runner]
    if theirs[column] == mine[column]:
        return "tied", theirs["attacker"]
    bounds = [mine[f"{column}_low"], mine[f"{column}_high"], theirs[f"{column}_low"], theirs[f"{column}_high"]]
    if any(math.isnan(b) for b in bounds):
        return "no interval", theirs["attacker"]
    return ("separated" if mine[f"{column}_low"] > theirs[f"{column}_high"] else "overlapping"), theirs["attacker"]


@settings(max_examples=150, deadline=None)
@given(frame=attack_tables())
def test_the_worst_attacker_is_the_groups_first_largest_value(frame):
    cases = {case.system: case for case in worst_attackers(_scores(frame))}
    assert list(cases) == list(dict.fromkeys(frame["system"]))
    for key, column in (("alid", "alid"), ("lid_q99", "q99")):
        for system, group in frame.groupby("system", sort=False):
            pick = cases[system].pick(key)
            if group[column].isna().all():
                assert pick is None
                continue
            expected = group[column].idxmax()  # pandas: the first row of the largest, NaN skipped
            assert pick.attacker == frame.loc[expected, "attacker"]
            assert pick.value.estimate == frame.loc[expected, column]
            assert (pick.value.low, pick.value.high) == pytest.approx(
                (frame.loc[expected, f"{column}_low"], frame.loc[expected, f"{column}_high"]), nan_ok=True
            )
            separation, runner_up = _separation(group.dropna(subset=[column]), expected, column)
            assert pick.separation == separation
            assert pick.runner_up == runner_up
            tied = group[(group[column] == group.loc[expected, column]) & (group.index != expected)]
            assert list(pick.tied_with) == list(tied["attacker"])
            assert pick.clear == (separation in ("alone", "separated"))


def test_overlapping_and_tied_picks_say_so():
    scores = [
        AttackScore("anon", "ge2e", Interval(0.40, 0.30, 0.50), Interval(2.0, 1.9, 2.1)),
        AttackScore("anon", "ecapa", Interval(0.45, 0.35, 0.55), Interval(2.0, 1.5, 2.5)),
        AttackScore("anon", "random", Interval(0.0, -0.01, 0.01), Interval(0.1, 0.0, 0.2)),
    ]
    (case,) = worst_attackers(scores)
    assert case.alid.attacker == "ecapa" and case.alid.separation == "overlapping" and not case.alid.clear
    assert "not clearly separated" in case.alid.describe() and "ge2e (0.40 [0.30, 0.50])" in case.alid.describe()
    assert case.lid_q99.attacker == "ge2e" and case.lid_q99.separation == "tied"
    assert case.lid_q99.tied_with == ("ecapa",) and case.lid_q99.describe() == "tied with ecapa"
    block = worst_case_json([case])
    assert block["systems"]["anon"]["alid"]["runner_up"] == "ge2e"
    assert block["systems"]["anon"]["lid_q99"]["separation"] == "tied"
    assert "outcome" not in block


def test_a_system_attacked_twice_under_one_name_is_refused():
    one = AttackScore("anon", "ge2e", Interval(0.4, NAN, NAN), Interval(1.0, NAN, NAN))
    with pytest.raises(InputError, match="attacker 'ge2e' of system 'anon' is given twice"):
        worst_attackers([one, one])
    with pytest.raises(InputError, match="AttackScore"):
        worst_attackers([("anon", "ge2e", 0.4)])


@pytest.fixture(scope="module")
def two_attackers():
    """Two attacks of one system, evaluated with intervals: a random one (ALID 0) and a leaky one."""
    boot = Bootstrap(n_boot=100, seed=1)
    out = {}
    for name, leakage in (("random", 0.0), ("leaky", 0.7)):
        dev, ev = simulate_system(leakage=leakage, seed=4, n_enrolled=12, trials_per_speaker=6)
        out[name] = evaluate(dev, ev, bootstrap=boot).summary
    return out


def test_a_system_fails_when_only_one_of_its_attackers_exceeds_the_limit(tmp_path, two_attackers):
    path = tmp_path / "policy.toml"
    path.write_text('[[limit]]\nmetric = "alid"\nat_most = 0.5\n[[limit]]\nmetric = "eer"\nat_least = 0.0\n')
    policy = read_policy(path)
    verdicts = {name: judge(policy, summary, system=name) for name, summary in two_attackers.items()}
    # each attacker judged alone: the random one passes, the leaky one fails the ALID limit
    assert verdicts["random"].outcome == "pass"
    assert two_attackers["leaky"].intervals["alid"].low > 0.5
    assert [j.outcome for j in verdicts["leaky"].judgements] == ["fail", "pass"]
    worst = judge_worst("anon", verdicts)
    assert worst.outcome == "fail" and worst.attackers[0] == "leaky"
    assert worst.verdict.judgements[0] is verdicts["leaky"].judgements[0]
    block = worst.to_dict()
    assert block["system"] == "anon" and block["outcome"] == "fail"
    assert block["limits"][0]["attacker"] == "leaky"
    # the random attacker alone passes: the worst case is the system's, not any one attacker's
    assert judge_worst("anon", {"random": verdicts["random"]}).outcome == "pass"
    scores = [AttackScore.of_summary("anon", name, s) for name, s in two_attackers.items()]
    (case,) = worst_attackers(scores)
    assert case.alid.attacker == "leaky" and case.alid.value.estimate == two_attackers["leaky"].alid
    assert worst_case_json([case], {"anon": worst})["outcome"] == "fail"


_POLICY = Policy(
    name="p",
    limits=(Limit(metric="alid", bound="at_most", value=0.1), Limit(metric="eer", bound="at_least", value=0.3)),
    path="p.toml",
    sha256="0" * 64,
)
_RANK = {"pass": 0, "undecided": 1, "fail": 2}


@settings(max_examples=150, deadline=None)
@given(
    table=st.lists(
        st.tuples(st.sampled_from(["pass", "undecided", "fail"]), st.sampled_from(["pass", "undecided", "fail"])),
        min_size=1,
        max_size=5,
    )
)
def test_the_worst_verdict_is_the_worst_outcome_of_each_limit_over_the_attackers(table):
    verdicts = {}
    for k, outcomes in enumerate(table):
        judgements = tuple(
            Judgement(limit=limit, estimate=0.1 * k, low=NAN, high=NAN, threshold=limit.value, outcome=o, reason="r")
            for limit, o in zip(_POLICY.limits, outcomes, strict=True)
        )
        verdicts[f"attacker {k}"] = Verdict(policy=_POLICY, system=f"attacker {k}", judgements=judgements)
    worst = judge_worst("anon", verdicts)
    for limit in range(2):
        column = [outcomes[limit] for outcomes in table]
        assert worst.verdict.judgements[limit].outcome == max(column, key=_RANK.__getitem__)
    every = [o for outcomes in table for o in outcomes]
    expected = "fail" if "fail" in every else "undecided" if "undecided" in every else "pass"
    assert worst.outcome == expected


def test_verdicts_under_two_policies_are_refused():
    other = Policy(name="q", limits=_POLICY.limits, path="q.toml", sha256="1" * 64)
    verdicts = {
        "a": Verdict(policy=_POLICY, system="a", judgements=()),
        "b": Verdict(policy=other, system="b", judgements=()),
    }
    with pytest.raises(InputError, match="another policy"):
        judge_worst("anon", verdicts)
    with pytest.raises(InputError, match="no attacker's verdict"):
        judge_worst("anon", {})
