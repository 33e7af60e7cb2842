"""Binned binary metrics in the streaming pass, against the exact sorted view of the materialised pairs.

The reference: the dense cosine matrix, row z-norm, the calibrator's ``llr`` and
:func:`lidframe.metrics.binary_view.binary_summary` of every pair -- no streaming, no bins.
"""

import gc
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe import evaluate
from lidframe.calibrators import Beta, GaussianBackend, Isotonic, Logistic
from lidframe.calibrators.maps import AffineMap
from lidframe.core import streaming
from lidframe.core.dev_pairs import dev_pair_groups
from lidframe.core.engine import Engine
from lidframe.core.streaming import lid_from_embeddings
from lidframe.data.embedset import EmbeddingSet
from lidframe.errors import InputError
from lidframe.metrics.binary_view import binary_summary
from lidframe.metrics.binned import binned_summary
from lidframe.metrics.binned_grid import DEFAULT_BINS
from tests.core.test_streaming import cosine, embeddings, fitted
from tests.metrics.test_binned import assert_within_bounds
from tests.reference import dense_znorm

ISSUE_BOUND = 1e-3  # |dEER|, |dminCllr| (bit), |dD_ECE| (bit) of issue 18


def exact_reference(trial, enrol, true_index, calibrator, ddof=1):
    z = dense_znorm(cosine(trial, enrol), ddof)
    llr = calibrator.llr(z) if hasattr(calibrator, "llr") else calibrator(z)  # a calibrator or a map
    mask = np.zeros(llr.shape, dtype=bool)
    mask[np.arange(llr.shape[0]), true_index] = True
    return binary_summary(llr[mask], llr[~mask])


def uniform_prior(n):
    return np.full(n, -np.log(n))


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["numpy", "torch"])
@pytest.mark.parametrize("name", ["affine", "isotonic", "beta", "gaussian-unequal"])
def test_streamed_bins_agree_with_the_exact_view(kernel, name):
    if kernel == "torch":
        pytest.importorskip("torch")
    trial, enrol, true_index = embeddings(5, 600, 400, 32, noise=2.0)
    z = dense_znorm(cosine(trial, enrol), 1)
    calibrator = {
        "affine": Logistic(),
        "isotonic": Isotonic(),
        "beta": Beta(),
        "gaussian-unequal": GaussianBackend(shared_variance=False),
    }[name]
    calibrator = fitted(calibrator, z, true_index)
    out = lid_from_embeddings(
        trial,
        enrol,
        true_index,
        calibrator,
        uniform_prior(400),
        engine=Engine(device="cpu", kernel=kernel, precision="float64", tile_rows=97),
        binary_bins=DEFAULT_BINS,
    )
    pairs = out.binned_pairs
    assert pairs.n_mated == 600 and pairs.n_non_mated == 600 * 399
    assert pairs.grid.edges[0] <= pairs.low and pairs.high <= pairs.grid.edges[-1]  # the z bound held
    exact = exact_reference(trial, enrol, true_index, calibrator)
    binned = binned_summary(pairs)
    assert_within_bounds(binned, exact, pairs.error_bounds(), slack=1e-9)
    for key in ("eer", "min_cllr", "dece_bits"):
        assert abs(binned[key] - exact[key]) <= ISSUE_BOUND


@settings(max_examples=25)
# slopes 0 or >= 1e-3: LLRs spread over less than ~1e-300 overflow the exact path's D_sys densities
@given(
    st.integers(2, 40),
    st.integers(2, 30),
    st.integers(0, 1),
    st.one_of(st.just(0.0), st.floats(1e-3, 6.0)),
    st.floats(-5.0, 5.0),
)
def test_the_grid_holds_every_pair_and_cllr_is_exact(n_trials, n_enrolled, ddof, slope, intercept):
    trial, enrol, true_index = embeddings(n_trials * 31 + n_enrolled, n_trials, n_enrolled, 6, noise=1.0)
    calibrator = AffineMap(slope, intercept)
    out = lid_from_embeddings(
        trial,
        enrol,
        true_index,
        calibrator,
        uniform_prior(n_enrolled),
        znorm_ddof=ddof,
        engine=Engine(device="cpu", kernel="numpy", tile_rows=7),
        binary_bins=1024,
    )
    pairs = out.binned_pairs
    assert pairs.grid.edges[0] <= pairs.low and pairs.high <= pairs.grid.edges[-1]
    exact = exact_reference(trial, enrol, true_index, calibrator, ddof)
    # the intercept is in the counted LLRs (the LID path leaves it out): Cllr is that of slope z + intercept
    assert pairs.cllr() == pytest.approx(exact["cllr"], rel=1e-12)
    assert_within_bounds(binned_summary(pairs), exact, pairs.error_bounds(), slack=1e-9)


def embedding_sets(n, seed, dim=48, noise=2.5):
    rng = np.random.default_rng(seed)
    ids = [f"s{j}" for j in range(n)]

    def split(tag, k):
        enrol = rng.normal(size=(n, dim))
        speaker = rng.permutation(n)
        trial = enrol[speaker] + noise * rng.normal(size=(n, dim))
        return EmbeddingSet(trial, enrol, ids, [ids[s] for s in speaker], [f"{tag}{i}" for i in range(n)])

    return split("d", 0), split("e", 1)


def check_evaluate_bins_within_the_bounds(n, seed):
    dev, ev = embedding_sets(n, seed)
    cpu = Engine(device="cpu")
    binned = evaluate(dev, ev, binary_metrics=True, engine=cpu).summary
    exact = evaluate(dev, ev.to_scoreset(), binary_metrics=True).summary  # dense, sorted
    assert binned["binary_method"] == "binned" and binned["binary_bins"] == DEFAULT_BINS
    assert exact["binary_method"] == "exact" and exact["binary_bins"] is None
    assert binned["engine"]["kernel"] == "numpy"
    assert binned["alid"] == pytest.approx(exact["alid"], abs=1e-9)
    bounds = binned["binary_error_bounds"]
    assert_within_bounds(binned, exact, bounds, slack=1e-9)
    for key in ("eer", "min_cllr", "dece_bits"):
        assert bounds[key] <= ISSUE_BOUND / 2, (key, bounds)
        assert abs(binned[key] - exact[key]) <= ISSUE_BOUND


@pytest.mark.slow
def test_evaluate_bins_an_embedding_set_within_the_bounds():
    check_evaluate_bins_within_the_bounds(2048, 1)


@pytest.mark.slow
def test_evaluate_bins_an_embedding_set_within_the_bounds_at_4096():
    check_evaluate_bins_within_the_bounds(4096, 2)


@pytest.mark.slow
def test_streamed_binned_pass_holds_only_tiles():
    n = 4096
    trial, enrol, true_index = embeddings(7, n, n, 32, noise=2.0)
    calibrator = AffineMap(3.0, -4.0)
    engine = Engine(device="cpu", kernel="numpy", tile_rows=128)  # (128, N) tiles of 4 MiB
    gc.collect()
    tracemalloc.start()
    try:
        out = lid_from_embeddings(
            trial, enrol, true_index, calibrator, uniform_prior(n), engine=engine, binary_bins=DEFAULT_BINS
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.binned_pairs.n_non_mated == n * (n - 1)
    # a few tiles and the 2 x 2^16 counts, nowhere near the 128 MiB of the T x N pair LLRs
    assert peak < 0.25 * n * n * 8, peak / 2**20


def test_triton_falls_back_to_torch_for_binned_metrics(monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setattr(streaming, "_choose_kernel", lambda *args: "triton")  # as on a CUDA device
    trial, enrol, true_index = embeddings(3, 50, 30, 8)
    out = lid_from_embeddings(
        trial, enrol, true_index, AffineMap(2.0), uniform_prior(30), engine=Engine(device="cpu"), binary_bins=256
    )
    assert out.kernel == "torch" and out.binned_pairs is not None


def test_bad_bin_counts_are_refused():
    trial, enrol, true_index = embeddings(3, 5, 4, 3)
    with pytest.raises(InputError, match="binary_bins"):
        lid_from_embeddings(trial, enrol, true_index, AffineMap(1.0), uniform_prior(4), binary_bins=0)
    with pytest.raises(InputError, match="bins"):
        dev_pair_groups(trial, enrol, true_index, bins=1)


def test_dev_pair_groups_are_the_pooled_dev_pairs():
    trial, enrol, true_index = embeddings(9, 300, 200, 16)
    z = dense_znorm(cosine(trial, enrol), 1)
    mated = np.zeros(z.shape, dtype=bool)
    mated[np.arange(300), true_index] = True
    scores, labels, weights = dev_pair_groups(trial, enrol, true_index, bins=512, tile_rows=37)
    assert weights[labels == 1].sum() == 300 and weights[labels == 0].sum() == 300 * 199
    # per class, the weighted means carry the exact first moments of the z-scores
    for cls, mask in ((1, mated), (0, ~mated)):
        total = (scores[labels == cls] * weights[labels == cls]).sum()
        assert total == pytest.approx(z[mask].sum(), abs=1e-8 * mask.sum())
    # a pooled fit from the embeddings equals the fit on every materialised pair to O(h^2):
    # at the default 2^16 bins over +-z_bound (h ~ 4e-4) about 1e-8 (calibrators/logistic.py)
    scores, labels, weights = dev_pair_groups(trial, enrol, true_index)
    full = Logistic(max_pairs=None, standard_errors=False).fit(z.ravel(), mated.ravel())
    pooled = Logistic(standard_errors=False).fit(scores, labels, sample_weight=weights)
    assert pooled.slope_ == pytest.approx(full.slope_, abs=1e-7)
    assert pooled.intercept_ == pytest.approx(full.intercept_, abs=1e-7)


def _cuda():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA device")
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_cuda_binned_pass_agrees_with_the_exact_view(precision):
    trial, enrol, true_index = embeddings(11, 2048, 2048, 64, noise=2.0)
    calibrator = AffineMap(3.0, -4.0)
    out = lid_from_embeddings(
        trial,
        enrol,
        true_index,
        calibrator,
        uniform_prior(2048),
        engine=Engine(device="cuda", kernel="auto", precision=precision),
        binary_bins=DEFAULT_BINS,
    )
    assert out.kernel == "torch"  # the fused Triton kernel counts no pairs
    exact = exact_reference(trial, enrol, true_index, calibrator)
    binned = binned_summary(out.binned_pairs)
    bounds = out.binned_pairs.error_bounds()
    if precision == "float64":
        assert_within_bounds(binned, exact, bounds, slack=1e-9)
    for key in ("eer", "min_cllr", "dece_bits"):  # float32 LLRs move by ~1e-6: far inside the issue bounds
        assert abs(binned[key] - exact[key]) <= ISSUE_BOUND
    assert binned["cllr"] == pytest.approx(exact["cllr"], rel=1e-12 if precision == "float64" else 1e-5)
