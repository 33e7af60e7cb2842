"""The verdict policy (lidframe.analyses.verdict): reading a policy file, interval-aware judging, the CLI's exit status."""

from __future__ import annotations

import hashlib
import json
import math

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe.analyses.legal_criteria import legal_criteria
from lidframe.analyses.verdict import EXIT_NOT_MET, judge, read_policy
from lidframe.cli.main import main
from lidframe.core.evaluation import evaluate
from lidframe.data.simulate import simulate_system
from lidframe.errors import InputError
from lidframe.stats.bootstrap import Bootstrap
from lidframe.stats.interval import Interval


@pytest.fixture(scope="module")
def run():
    """A simulated system evaluated with intervals, and its legal block."""
    dev, ev = simulate_system(leakage=0.4, seed=3, n_enrolled=12, trials_per_speaker=6)
    boot = Bootstrap(n_boot=100, seed=1)
    result = evaluate(dev, ev, bootstrap=boot)
    return dev, ev, result, legal_criteria(result, ev, bootstrap=boot, seed=0)


def _write(tmp_path, text, name="policy.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _expected(bound, low, high, threshold):
    """The interval-aware rule, written out: pass only where the whole interval meets the limit."""
    if bound == "at_most":
        return "pass" if high <= threshold else "fail" if low > threshold else "undecided"
    return "pass" if low >= threshold else "fail" if high < threshold else "undecided"


finite = st.floats(-5, 5, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(
    a=finite, b=finite, estimate_at=st.floats(0, 1), threshold=finite, bound=st.sampled_from(["at_most", "at_least"])
)
def test_a_limit_passes_only_where_its_whole_interval_meets_it(
    run, tmp_path_factory, a, b, estimate_at, threshold, bound
):
    _, _, result, legal = run
    low, high = min(a, b), max(a, b)
    estimate = low + estimate_at * (high - low)
    summary = result.summary
    intervals = dict(summary.intervals)
    intervals["alid"] = Interval(estimate, low, high, level=0.95, method="bca")

    changed = attrs.evolve(summary, alid=estimate, intervals=intervals)
    folder = tmp_path_factory.mktemp("p")
    policy = read_policy(_write(folder, f'[[limit]]\nmetric = "alid"\n{bound} = {threshold!r}\n'))
    (judgement,) = judge(policy, changed, legal).judgements
    assert judgement.outcome == _expected(bound, low, high, threshold)
    assert (judgement.low, judgement.high, judgement.threshold) == (low, high, threshold)


def test_times_chance_limits_scale_by_each_metrics_chance_level(run, tmp_path):
    _, ev, result, legal = run
    policy = read_policy(
        _write(
            tmp_path,
            """
name = "chance"
[[limit]]
metric = "pi_link"
n_prime = 2
at_most_times_chance = 1.5
[[limit]]
metric = "pi_link"
n_prime = "N"
at_most_times_chance = 2
[[limit]]
metric = "pi_sing"
at_most_times_chance = 1.1
[[limit]]
metric = "rank1_rate"
at_most_times_chance = 3
""",
        )
    )
    verdict = judge(policy, result.summary, legal, system="sim")
    n = ev.n_enrolled
    thresholds = [j.threshold for j in verdict.judgements]
    assert thresholds == pytest.approx([1.5 / 2, 2 / n, 1.1 * math.exp(-1), 3 / n], rel=1e-12)
    at_n = legal.linkability.points[-1]
    # rank-1 is pi_link(N): its estimate, and the interval judged, are that point's
    assert verdict.judgements[3].estimate == pytest.approx(at_n.pi_link, abs=1e-12)
    assert (verdict.judgements[3].low, verdict.judgements[3].high) == (at_n.low, at_n.high)
    for j in verdict.judgements:
        assert j.outcome == _expected("at_most", j.low, j.high, j.threshold)


def test_without_intervals_a_metric_that_has_one_is_undecided(run, tmp_path):
    dev, ev, _, _ = run
    result = evaluate(dev, ev)  # no bootstrap
    policy = read_policy(_write(tmp_path, '[[limit]]\nmetric = "alid"\nat_most = 100\n'))
    (j,) = judge(policy, result.summary, None).judgements
    assert j.outcome == "undecided" and "bootstrap" in j.reason
    policy = read_policy(_write(tmp_path, '[[limit]]\nmetric = "pi_sing"\nat_most = 1\n', "p2.toml"))
    (j,) = judge(policy, result.summary, None).judgements
    assert j.outcome == "undecided" and "not computed" in j.reason


def test_the_overall_outcome_is_the_worst_of_its_limits(run, tmp_path):
    _, _, result, legal = run
    hi = result.summary.intervals["alid"].high
    lo = result.summary.intervals["alid"].low
    text = '[[limit]]\nmetric = "alid"\nat_most = {}\n'
    cases = {"pass": [hi + 1], "fail": [hi + 1, lo - 1], "undecided": [hi + 1, (lo + hi) / 2]}
    for want, values in cases.items():
        path = _write(tmp_path, "".join(text.format(v) for v in values), f"{want}.toml")
        assert judge(read_policy(path), result.summary, legal).outcome == want


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name = 'x'\n", "no [[limit]] table"),
        ("[[limit]]\nmetric = 'alid'\n", "exactly one of"),
        ("[[limit]]\nmetric = 'alid'\nat_most = 1\nat_least = 0\n", "exactly one of"),
        ("[[limit]]\nmetric = 'nope'\nat_most = 1\n", "not a key of the metric catalogue"),
        ("[[limit]]\nmetric = 'n_enrolled'\nat_most = 1\n", "not one a policy judges"),
        ("[[limit]]\nmetric = 'alid'\nat_most = 'high'\n", "expected a finite number"),
        ("[[limit]]\nmetric = 'alid'\nat_most = nan\n", "expected a finite number"),
        ("[[limit]]\nmetric = 'alid'\nat_most_times_chance = 2\n", "at_most_times_chance needs"),
        ("[[limit]]\nmetric = 'pi_link'\nat_most = 0.6\n", "n_prime = None"),
        ("[[limit]]\nmetric = 'pi_link'\nn_prime = 1\nat_most = 0.6\n", "n_prime = 1"),
        ("[[limit]]\nmetric = 'alid'\nn_prime = 2\nat_most = 0.6\n", "n_prime is for metric 'pi_link' only"),
        ("[[limit]]\nmetric = 'alid'\nat_mots = 0.6\n", "unknown key 'at_mots'"),
        ("[limits]\nx = 1\n", "unknown key 'limits'"),
        ("[[limit]\n", "not valid TOML"),
    ],
)
def test_a_bad_policy_is_one_line_naming_the_file_and_limit(tmp_path, text, words):
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        read_policy(path)
    message = str(caught.value)
    assert str(path) in message and words in message and "\n" not in message


def test_evaluate_exits_3_unless_the_policy_passes_and_records_it_in_the_json(run, tmp_path, capsys):
    dev, ev, result, _ = run
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    hi = result.summary.intervals["alid"].high
    common = ["evaluate", "--dev", str(tmp_path / "dev.npz"), "--eval", str(tmp_path / "eval.npz"), "--bootstrap"]
    common += ["--n-boot", "100", "--seed", "1"]
    for want, limit in (("pass", hi + 0.5), ("fail", 0.0)):
        policy = _write(tmp_path, f'[[limit]]\nmetric = "alid"\nat_most = {limit}\n', f"{want}.toml")
        out = tmp_path / f"{want}.json"
        status = main([*common, "--policy", str(policy), "--json", str(out)])
        assert status == (0 if want == "pass" else EXIT_NOT_MET)
        block = json.loads(out.read_text())["verdict"]
        assert block["outcome"] == want
        assert block["policy_sha256"] == hashlib.sha256(policy.read_bytes()).hexdigest()
        assert f"verdict of policy '{want}'" in capsys.readouterr().out


def test_a_bad_policy_stops_evaluate_before_any_work(run, tmp_path, capsys):
    dev, ev, _, _ = run
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    policy = _write(tmp_path, "[[limit]]\nmetric = 'alid'\n")
    out = tmp_path / "s.json"
    args = ["evaluate", "--dev", str(tmp_path / "dev.npz"), "--eval", str(tmp_path / "eval.npz")]
    status = main([*args, "--policy", str(policy), "--json", str(out)])
    captured = capsys.readouterr()
    assert status == 2 and not out.exists()
    assert "exactly one of" in captured.err and "ALID" not in captured.out
