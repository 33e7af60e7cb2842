"""Options records (Bootstrap, Engine), z-norm-then-calibrate, and binary_metrics="auto"."""

import warnings

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import zscore

import lidframe
from lidframe import Bootstrap, Engine, evaluate, evaluate_fitted, fit_calibrator
from lidframe.calibrators import Identity, Logistic
from lidframe.calibrators.maps import AffineMap
from lidframe.core import evaluation
from lidframe.core.znorm import calibrated_llr, calibrator_input
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.simulate import simulate_system
from lidframe.errors import InputError
from tests.strategies import score_matrices


# ------------------------------------------------------------ z-norm then calibrate
@settings(max_examples=40)
@given(score_matrices(), st.sampled_from([0, 1]), st.floats(0.1, 4.0), st.floats(-2.0, 2.0))
def test_calibrated_llr_is_scipy_zscore_then_the_map(scores, ddof, slope, intercept):
    want = slope * zscore(scores, axis=1, ddof=ddof) + intercept
    got = calibrated_llr(scores, AffineMap(slope, intercept), znorm_ddof=ddof)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # a plain function is a map on z-scores too
    np.testing.assert_allclose(
        calibrated_llr(scores, lambda z: 2.0 * z, znorm_ddof=ddof), 2.0 * zscore(scores, axis=1, ddof=ddof), atol=1e-12
    )


@settings(max_examples=20)
@given(score_matrices())
def test_raw_calibrators_see_the_raw_scores(scores):
    identity = Identity().fit(scores.ravel(), np.arange(scores.size) % 2)
    np.testing.assert_array_equal(calibrator_input(scores, identity), scores)
    np.testing.assert_array_equal(calibrated_llr(scores, identity), scores)


def test_bad_input_scale_and_bad_map_shape_are_named():
    class Odd:
        input_scale = "log"

        def llr(self, z):
            return z

    with pytest.raises(InputError, match="input_scale must be 'znorm' or 'raw'"):
        calibrated_llr(np.eye(3), Odd())
    with pytest.raises(InputError, match="returned shape"):
        calibrated_llr(np.eye(3) + np.arange(3), lambda z: z[:, 0])


def test_identity_map_on_raw_scores_leaves_the_input_untouched():
    dev, ev = simulate_system(leakage=0.6, seed=3)
    before = ev.scores.copy()
    fitted = fit_calibrator(dev, "identity")
    evaluate_fitted(ev, fitted)
    np.testing.assert_array_equal(ev.scores, before)


# ------------------------------------------------------------------- the records
def test_bootstrap_record_defaults_and_validation():
    assert Bootstrap().to_dict() == {
        "n_boot": 1000,
        "level": 0.95,
        "unit": "speaker",
        "method": "bca",
        "seed": 0,
        "resample": "dev+eval",
    }
    for bad, match in [
        ({"resample": "dev"}, "'dev\\+eval'.*or 'eval'"),
        ({"n_boot": 99}, "n_boot"),
        ({"n_boot": True}, "n_boot"),
        ({"level": 1.0}, "level"),
        ({"unit": "utterance"}, "'speaker' or 'trial'"),
        ({"method": "student"}, "'bca' or 'percentile'"),
        ({"seed": -1}, "seed"),
    ]:
        with pytest.raises(InputError, match=match):
            Bootstrap(**bad)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        Bootstrap().n_boot = 5  # type: ignore[misc]


def test_engine_record_defaults_and_validation():
    assert Engine() == Engine(device="auto", precision="auto", kernel="auto", tile_rows=None, progress=False)
    assert Engine(precision="bf16").precision == "bfloat16"
    for bad, match in [
        ({"precision": "float16"}, "precision"),
        ({"kernel": "cuda"}, "kernel"),
        ({"tile_rows": 0}, "tile_rows"),
        ({"device": ""}, "device"),
        ({"progress": "yes"}, "progress"),
    ]:
        with pytest.raises(InputError, match=match):
            Engine(**bad)


def test_evaluate_takes_the_records_and_reports_them():
    dev, ev = simulate_system(leakage=0.5, seed=4)
    options = Bootstrap(n_boot=200, level=0.9, unit="trial", method="percentile", seed=3)
    s = evaluate(dev, ev, bootstrap=options, engine=Engine(tile_rows=5)).summary
    assert s["bootstrap"] == {
        "level": 0.9,
        "unit": "trial",
        "method": "percentile",
        "n_boot": 200,
        "seed": 3,
        "resample": "dev+eval",
    }
    assert set(s["intervals"]) >= {"alid", "pdr", "lid_q99", "eer", "cllr"}
    assert "intervals" not in evaluate(dev, ev).summary
    with pytest.raises(InputError, match="bootstrap must be None or a record of type Bootstrap"):
        evaluate(dev, ev, bootstrap={"n_boot": 200})
    with pytest.raises(InputError, match="engine must be None or a record of type Engine"):
        evaluate(dev, ev, engine="cpu")
    assert lidframe.evaluate_fitted is evaluate_fitted
    assert isinstance(lidframe.__version__, str) and s["lidframe_version"] == lidframe.__version__


# ------------------------------------------------------------ binary_metrics="auto"
def embedding_system(seed=0, n_speakers=12, dim=8):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_speakers, dim))
    enrolled = [f"s{j}" for j in range(n_speakers)]

    def split(tag):
        speakers = np.repeat(enrolled, 3)
        trials = centres[np.repeat(np.arange(n_speakers), 3)] + 0.8 * rng.normal(size=(speakers.size, dim))
        ids = [f"{tag}{i}" for i in range(speakers.size)]
        return EmbeddingSet(trials, centres + 0.1 * rng.normal(size=centres.shape), enrolled, speakers, ids)

    return split("d"), split("e")


def test_binary_metrics_auto_bins_large_embedding_sets(monkeypatch):
    from lidframe.metrics.binned_grid import DEFAULT_BINS

    dev, ev = embedding_system()
    n_pairs = ev.n_trials * ev.n_enrolled
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither path warns
        small = evaluate(dev, ev, engine=Engine(device="cpu")).summary
        monkeypatch.setattr(evaluation, "BINARY_PAIR_LIMIT", n_pairs - 1)
        big = evaluate(dev, ev, engine=Engine(device="cpu")).summary
    assert small["binary_metrics"] == "computed" and np.isfinite(small["eer"])
    assert small["binary_method"] == "exact" and small["binary_bins"] is None
    assert small["engine"]["kernel"] == "dense"
    # above the limit: binned in the streaming pass instead of skipped
    assert big["binary_metrics"] == "computed" and big["binary_method"] == "binned"
    assert big["binary_bins"] == DEFAULT_BINS
    assert big["engine"]["kernel"] == "numpy"  # streamed
    # the LID does not depend on the path: dense float64 reference vs streamed float64
    assert big["alid"] == pytest.approx(small["alid"], abs=1e-9)
    assert big["cllr"] == pytest.approx(small["cllr"], rel=1e-12)  # a sum: exact
    for key in ("eer", "min_cllr", "dece_bits", "eer_threshold", "dsys"):
        assert abs(big[key] - small[key]) <= big["binary_error_bounds"][key] + 1e-12, key
    # True bins an embedding set at any size, False skips without a warning; a score set is exact
    forced = evaluate(dev, ev, binary_metrics=True, engine=Engine(device="cpu")).summary
    assert forced["binary_method"] == "binned" and forced["eer"] == big["eer"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        off = evaluate(dev, ev, binary_metrics=False, engine=Engine(device="cpu")).summary
        assert off.binary_metrics == "skipped: binary_metrics=False" and off.binary is None
        scored = evaluate(dev.to_scoreset(), ev.to_scoreset()).summary
    assert scored["binary_metrics"] == "computed" and scored["binary_method"] == "exact"
    with pytest.raises(InputError, match="binary_metrics must be"):
        evaluate(dev, ev, binary_metrics="yes")


def test_calibrator_input_is_what_fit_calibrator_fits_on():
    dev, _ = simulate_system(leakage=0.7, seed=5)
    fitted = fit_calibrator(dev, Logistic(), znorm_ddof=0)
    z = zscore(dev.scores, axis=1, ddof=0)
    direct = Logistic().fit(z.ravel(), dev.mated_mask().ravel())
    np.testing.assert_allclose(fitted.llr(z), direct.llr(z), atol=1e-12)
