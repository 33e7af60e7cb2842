"""Streaming engine (lidframe.core.streaming): closed-form row stats, every path against a dense float64 reference."""

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lidframe import WatchList
from lidframe.calibrators import Beta, GaussianBackend, Identity, Isotonic, Logistic, Temperature
from lidframe.calibrators.maps import AffineMap, CallbackMap, PiecewiseLinearMap, llr_map_of
from lidframe.core.engine import Engine
from lidframe.core.streaming import cosine_row_stats, lid_from_embeddings
from lidframe.errors import InputError
from tests.reference import dense_lid, dense_znorm
from tests.strategies import priors_of_every_kind

ROOT = Path(__file__).resolve().parents[2]


def embeddings(seed, n_trials, n_enrolled, dim, noise=1.5):
    rng = np.random.default_rng(seed)
    enrol = rng.normal(size=(n_enrolled, dim))
    true_index = rng.integers(0, n_enrolled, n_trials)
    trial = enrol[true_index] + noise * rng.normal(size=(n_trials, dim))
    return trial, enrol, true_index


def cosine(trial, enrol):
    """Materialised cosine matrix (the dense reference's input)."""
    trial = trial / np.linalg.norm(trial, axis=1, keepdims=True)
    enrol = enrol / np.linalg.norm(enrol, axis=1, keepdims=True)
    return trial @ enrol.T


def fitted(calibrator, z, true_index):
    labels = np.zeros(z.shape)
    labels[np.arange(z.shape[0]), true_index] = 1
    if isinstance(calibrator, Temperature):
        return calibrator.fit_rows(z, true_index)
    return calibrator.fit(z.ravel(), labels.ravel())


def log_priors(n_enrolled):
    uniform = np.full(n_enrolled, -np.log(n_enrolled))
    weights = np.ones(n_enrolled)
    weights[: max(1, n_enrolled // 5)] = 10.0  # a watch list: 10x the mass
    return {"uniform": uniform, "watchlist": np.log(weights / weights.sum())}


def reference_lid(trial, enrol, true_index, calibrator, log_prior, ddof):
    scores = cosine(trial, enrol)
    z = scores if calibrator.input_scale == "raw" else dense_znorm(scores, ddof)
    return dense_lid(calibrator.llr(z), log_prior, true_index)


def relative_l2(value, reference):
    return np.linalg.norm(value - reference) / np.linalg.norm(reference)


@st.composite
def drawn_embeddings(draw, noise=1.5):
    """(trial (T, d), enrol (N, d)) as :func:`embeddings` builds them, with the numbers drawn.

    The enrolled vectors are a fixed Gaussian base plus a drawn offset, and each trial is
    its speaker's vector plus *noise* times a drawn offset, so that a shrunk example is
    the base itself rather than zero or identical vectors (whose rows are constant: the
    z-norm raises for them, which tests below check).
    """
    n_trials, n_enrolled, dim = draw(st.integers(1, 40)), draw(st.integers(2, 60)), draw(st.integers(2, 24))
    offsets = st.floats(-2.0, 2.0, allow_nan=False, width=64)
    base = np.random.default_rng(0).normal(size=(n_enrolled, dim))
    enrol = base + draw(arrays(np.float64, (n_enrolled, dim), elements=offsets))
    true_index = np.array(draw(st.lists(st.integers(0, n_enrolled - 1), min_size=n_trials, max_size=n_trials)))
    trial = enrol[true_index] + noise * draw(arrays(np.float64, (n_trials, dim), elements=offsets))
    return trial, enrol


# a trial whose cosines to both enrolled speakers agree to 1e-9 (std 1.04e-9): the closed form's
# std is 9 % off that of the materialised row, within the rounding bound of its variance
@example((np.array([[1.0, 0.29194023]]), np.array([[-0.45, -0.22], [-2.02, -0.23]])), 1)
@given(drawn_embeddings(), st.sampled_from([0, 1]))
def test_closed_form_row_stats_equal_materialised(case, ddof):
    """Row means to 1e-14; row variances to the rounding bound of the closed form t' C t.

    The closed form sums d^2 products of the (d, d) key covariance C = K'K / (N - ddof)
    (K: the centred unit enrolment vectors, each of norm <= 2, so trace C <= 4 N / (N - ddof))
    and C sums N: its error is at most (2 d + N) eps t'|K|'|K|t / (N - ddof) <= (2 d + N) eps
    trace C for a unit trial t, plus the rounding of the unit vectors (the + 8).  That is
    about 1e-13 absolute, finer than a relative 1e-10 for any row spread above 1e-2; a row
    whose cosines are all but equal has a tiny variance and its std only this absolute bound
    (a relative std tolerance fails on such rows, which the strategy can draw: the example).
    """
    trial, enrol = case
    n_enrolled, dim = enrol.shape
    scores = cosine(trial, enrol)
    mean, std = cosine_row_stats(trial, enrol, znorm_ddof=ddof)
    np.testing.assert_allclose(mean, scores.mean(axis=1), rtol=0, atol=1e-14)
    bound = (2 * dim + n_enrolled + 8) * np.finfo(np.float64).eps * 4 * n_enrolled / (n_enrolled - ddof)
    np.testing.assert_allclose(std**2, scores.var(axis=1, ddof=ddof), rtol=0, atol=bound)


class PlainLogistic:
    """A third-party calibrator without llr_map(): the engine must fall back to llr()."""

    input_scale = "znorm"

    def __init__(self, slope):
        self.slope = slope

    def llr(self, z):
        return self.slope * np.asarray(z) - 3.0


CALIBRATORS = {
    "logistic": Logistic(),
    "isotonic": Isotonic(),
    "beta": Beta(),
    "gaussian-unequal": GaussianBackend(shared_variance=False),
    "temperature": Temperature(),
    "identity": Identity(),
}


@pytest.mark.parametrize("name", sorted(CALIBRATORS))
@pytest.mark.parametrize("shape", [(50, 7, 5), (120, 40, 16), (33, 300, 48)])
@pytest.mark.parametrize("ddof", [0, 1])
@pytest.mark.parametrize("prior", ["uniform", "watchlist"])
def test_numpy_float64_equals_dense_reference(name, shape, ddof, prior):
    n_trials, n_enrolled, dim = shape
    trial, enrol, true_index = embeddings(hash((name, shape)) % 1000, n_trials, n_enrolled, dim)
    calibrator = CALIBRATORS[name]
    z = cosine(trial, enrol) if calibrator.input_scale == "raw" else dense_znorm(cosine(trial, enrol), ddof)
    calibrator = fitted(type(calibrator)(**calibrator.get_params()), z, true_index)
    log_prior = log_priors(n_enrolled)[prior]
    ref = reference_lid(trial, enrol, true_index, calibrator, log_prior, ddof)
    # small tiles so that several tiles (and a ragged last one) are exercised
    out = lid_from_embeddings(
        trial, enrol, true_index, calibrator, log_prior, znorm_ddof=ddof, engine=Engine(device="cpu", tile_rows=16)
    )
    assert out.kernel == "numpy"
    np.testing.assert_allclose(out.lid_bits, ref, rtol=0, atol=1e-9)
    scores = cosine(trial, enrol)
    rank = 1 + (scores > scores[np.arange(n_trials), true_index][:, None]).sum(axis=1)
    assert np.array_equal(out.true_rank, rank)


def test_plugin_calibrator_without_closed_form_goes_through_llr():
    trial, enrol, true_index = embeddings(3, 60, 25, 8)
    plugin = PlainLogistic(slope=2.5)
    assert isinstance(llr_map_of(plugin), CallbackMap)
    log_prior = log_priors(25)["watchlist"]
    ref = reference_lid(trial, enrol, true_index, plugin, log_prior, 1)
    for kernel in ("numpy", "torch"):
        if kernel == "torch":  # numpy is checked above; the torch kernel needs torch
            pytest.importorskip("torch", reason="the torch kernel needs torch (pip install -e '.[audio]')")
        out = lid_from_embeddings(
            trial, enrol, true_index, plugin, log_prior, engine=Engine(device="cpu", kernel=kernel, tile_rows=7)
        )
        np.testing.assert_allclose(out.lid_bits, ref, rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", ["logistic", "isotonic", "beta", "gaussian-unequal"])
def test_reduced_precision_within_stated_tolerances(name):
    pytest.importorskip("torch")
    # the size of a real attacker's embeddings: d = 192 (ECAPA-TDNN)
    trial, enrol, true_index = embeddings(11, 400, 300, 192, noise=4.0)
    calibrator = CALIBRATORS[name]
    calibrator = fitted(type(calibrator)(**calibrator.get_params()), dense_znorm(cosine(trial, enrol), 1), true_index)
    log_prior = log_priors(300)["uniform"]
    ref = reference_lid(trial, enrol, true_index, calibrator, log_prior, 1)
    assert np.abs(ref).max() > 1.0  # the comparison is not against a trivial all-zero LID
    for kernel, precision, tolerance in [
        ("torch", "float64", 1e-12),
        ("numpy", "float32", 1e-6),
        ("torch", "float32", 1e-6),
        ("torch", "bfloat16", 3e-3),
    ]:
        out = lid_from_embeddings(
            trial,
            enrol,
            true_index,
            calibrator,
            log_prior,
            engine=Engine(device="cpu", kernel=kernel, precision=precision),
        )
        assert relative_l2(out.lid_bits, ref) <= tolerance, (kernel, precision, relative_l2(out.lid_bits, ref))


@pytest.mark.parametrize("name", sorted(CALIBRATORS))
def test_closed_form_maps_equal_llr_on_numpy_and_torch(name):
    torch = pytest.importorskip("torch")
    trial, enrol, true_index = embeddings(5, 200, 30, 12)
    calibrator = CALIBRATORS[name]
    z = dense_znorm(cosine(trial, enrol), 1)
    calibrator = fitted(type(calibrator)(**calibrator.get_params()), z, true_index)
    form = llr_map_of(calibrator)
    assert not isinstance(form, CallbackMap)
    grid = np.concatenate([np.linspace(-15, 15, 3001), z.ravel()])
    np.testing.assert_allclose(form(grid), calibrator.llr(grid), rtol=0, atol=1e-12)
    np.testing.assert_allclose(form(torch.from_numpy(grid)).numpy(), calibrator.llr(grid), rtol=0, atol=1e-12)


def test_piecewise_linear_map_matches_np_interp_beyond_the_ends():
    torch = pytest.importorskip("torch")
    form = PiecewiseLinearMap([-1.0, 0.5, 2.0], [-3.0, 0.0, 4.0])
    z = np.array([-5.0, -1.0, -0.25, 0.5, 1.0, 2.0, 9.0])
    np.testing.assert_array_equal(form(torch.from_numpy(z)).numpy(), np.interp(z, form.knots_z, form.knots_llr))
    with pytest.raises(InputError, match="strictly increasing"):
        PiecewiseLinearMap([0.0, 0.0], [1.0, 2.0])


def test_non_increasing_affine_map_gives_zero_lid_and_true_ranks():
    trial, enrol, true_index = embeddings(2, 30, 10, 6)
    out = lid_from_embeddings(
        trial, enrol, true_index, AffineMap(0.0, 1.0), log_priors(10)["uniform"], engine=Engine(device="cpu")
    )
    assert np.array_equal(out.lid_bits, np.zeros(30))
    scores = cosine(trial, enrol)
    assert np.array_equal(out.true_rank, 1 + (scores > scores[np.arange(30), true_index][:, None]).sum(axis=1))


class ConstantPlugin:
    """A third-party calibrator without llr_map() that found no evidence: one LLR for every pair."""

    input_scale = "znorm"

    def __init__(self, value):
        self.value = value

    def llr(self, z):
        return np.full(np.shape(z), self.value)


#: maps whose LLR is the same for every enrolled speaker of a trial, and one that is flat
#: only for z <= 1.5 (a trial whose z-scores all lie there is constant, the others not)
ZERO_EVIDENCE_MAPS = {
    "affine slope 0": lambda c: AffineMap(0.0, c),
    "one-knot piecewise": lambda c: PiecewiseLinearMap([0.0], [c]),
    "plugin": ConstantPlugin,
}
FLAT_BELOW = 1.5
STREAMING_PATHS = [("numpy", "float64"), ("numpy", "float32"), ("torch", "float64"), ("torch", "float32")]


@given(
    drawn_embeddings(),
    st.data(),
    st.floats(-50.0, 50.0),
    st.sampled_from([*ZERO_EVIDENCE_MAPS, "flat below 1.5"]),
    st.sampled_from(STREAMING_PATHS),
    st.integers(1, 16),
)
def test_no_evidence_rows_give_exactly_zero_lid_on_every_streaming_path(case, data, value, name, path, tile_rows):
    pytest.importorskip("torch")
    trial, enrol = case
    n_trials, n_enrolled = trial.shape[0], enrol.shape[0]
    kind, log_prior = data.draw(priors_of_every_kind(n_enrolled), label="prior")
    true_index = data.draw(arrays(np.intp, n_trials, elements=st.integers(0, n_enrolled - 1)), label="true_index")
    if name == "flat below 1.5":
        llr_map = PiecewiseLinearMap([FLAT_BELOW, FLAT_BELOW + 1.0], [value, value + 2.0])
    else:
        llr_map = ZERO_EVIDENCE_MAPS[name](value)
    kernel, precision = path
    out = lid_from_embeddings(
        trial,
        enrol,
        true_index,
        llr_map,
        log_prior,
        engine=Engine(device="cpu", kernel=kernel, precision=precision, tile_rows=tile_rows),
    )
    assert out.kernel == kernel
    z = dense_znorm(cosine(trial, enrol), 1)
    if name == "flat below 1.5":
        # rows clearly inside the flat part are constant whatever the rounding of z
        flat = z.max(axis=1) < FLAT_BELOW - 1e-6
        ref = dense_lid(np.interp(z, llr_map.knots_z, llr_map.knots_llr), log_prior, true_index)
        tolerance = 1e-9 if precision == "float64" else 1e-4
        np.testing.assert_allclose(out.lid_bits[~flat], ref[~flat], rtol=0, atol=tolerance)
    else:
        flat = np.ones(n_trials, bool)
    assert (out.lid_bits[flat] == 0.0).all() and not np.signbit(out.lid_bits[flat]).any(), (kind, out.lid_bits[flat])
    scores = cosine(trial, enrol)
    rank = 1 + (scores > scores[np.arange(n_trials), true_index][:, None]).sum(axis=1)
    if precision == "float64":
        assert np.array_equal(out.true_rank, rank)


@pytest.mark.parametrize("name", sorted(ZERO_EVIDENCE_MAPS))
@pytest.mark.parametrize("path", STREAMING_PATHS, ids=[f"{k}-{p}" for k, p in STREAMING_PATHS])
def test_no_evidence_on_the_demo_size_with_a_watch_list_is_exactly_zero(name, path):
    # the size of the demo's random system (N = 29, a 3-speaker watch list of weight 10),
    # where the floating-point sum left 1e-16 (float64) to 9e-8 bit (float32 torch)
    pytest.importorskip("torch")
    trial, enrol, true_index = embeddings(1, 40, 29, 8)
    enrolled = [f"spk{j}" for j in range(29)]
    log_prior = WatchList(enrolled[:3], 10.0).log_prior(enrolled)
    kernel, precision = path
    out = lid_from_embeddings(
        trial,
        enrol,
        true_index,
        ZERO_EVIDENCE_MAPS[name](0.3),
        log_prior,
        engine=Engine(device="cpu", kernel=kernel, precision=precision),
    )
    assert np.array_equal(out.lid_bits, np.zeros(40)) and not np.signbit(out.lid_bits).any()


@pytest.mark.parametrize("kernel", ["numpy", "torch"])
def test_decreasing_affine_map_is_refused(kernel):
    trial, enrol, true_index = embeddings(2, 12, 6, 5)
    with pytest.raises(InputError, match=r"non-decreasing: affine map with slope -0.5"):
        lid_from_embeddings(
            trial, enrol, true_index, AffineMap(-0.5, 1.0), log_priors(6)["watchlist"], engine=Engine(kernel=kernel)
        )


def test_bad_input_is_named():
    trial, enrol, true_index = embeddings(1, 10, 5, 4)
    log_prior = log_priors(5)["uniform"]
    cal = AffineMap(2.0)
    with pytest.raises(InputError, match="outsider"):
        lid_from_embeddings(trial, enrol, np.r_[true_index[:-1], -1], cal, log_prior)
    bad = trial.copy()
    bad[3, 1] = np.nan
    with pytest.raises(InputError, match=r"trial embeddings hold NaN or inf in rows '3'"):
        lid_from_embeddings(bad, enrol, true_index, cal, log_prior)
    with pytest.raises(InputError, match="zero enrolled rows: '2'"):
        lid_from_embeddings(trial, np.where(np.arange(5)[:, None] == 2, 0.0, enrol), true_index, cal, log_prior)
    with pytest.raises(InputError, match="precision"):
        lid_from_embeddings(trial, enrol, true_index, cal, log_prior, engine=Engine(precision="float16"))
    # without torch, the device itself is refused first
    on_cuda = (
        "kernel 'numpy' runs on the CPU only" if importlib.util.find_spec("torch") else "device 'cuda' needs PyTorch"
    )
    with pytest.raises(InputError, match=on_cuda):
        lid_from_embeddings(trial, enrol, true_index, cal, log_prior, engine=Engine(kernel="numpy", device="cuda"))
    # a trial orthogonal to the spread of the enrolled vectors has constant scores
    flat = np.zeros((3, 4))
    flat[:, 0] = 1.0
    flat_enrol = np.array([[1.0, 1.0, 0, 0], [1.0, -1.0, 0, 0], [1.0, 0, 1.0, 0]])
    with pytest.raises(InputError, match="z-norm is undefined for 3 trials.*'a'"):
        lid_from_embeddings(
            flat, flat_enrol, np.array([0, 1, 2]), cal, np.log(np.full(3, 1 / 3)), row_names=["a", "b", "c"]
        )


_INTERPRETER_CHECK = textwrap.dedent(
    """
    import os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    import numpy as np, torch
    sys.path.insert(0, {root!r})
    from tests.core.test_streaming import embeddings, cosine, reference_lid, log_priors, relative_l2
    from tests.reference import dense_znorm
    from lidframe.calibrators import Logistic
    from lidframe.calibrators.maps import AffineMap
    from lidframe.core.engine import Engine
    from lidframe.core.streaming import lid_from_embeddings
    from lidframe.core.triton_lid import lid_lse_triton
    trial, enrol, true_index = embeddings(4, 45, 70, 20)
    z = dense_znorm(cosine(trial, enrol), 1)
    labels = np.zeros(z.shape); labels[np.arange(45), true_index] = 1
    cal = Logistic().fit(z.ravel(), labels.ravel())
    scores = cosine(trial, enrol)
    rank = 1 + (scores > scores[np.arange(45), true_index][:, None]).sum(axis=1)
    for name, log_prior in log_priors(70).items():
        ref = reference_lid(trial, enrol, true_index, cal, log_prior, 1)
        out = lid_from_embeddings(trial, enrol, true_index, cal, log_prior,
                                  engine=Engine(device="cpu", kernel="triton", precision="float32"),
                                  triton_blocks={{"block_m": 16, "block_n": 32}})
        assert out.kernel == "triton"
        assert relative_l2(out.lid_bits, ref) <= 1e-6, (name, relative_l2(out.lid_bits, ref))
        assert (out.true_rank == rank).mean() >= 0.97, name
        # a slope-0 map (no evidence): exactly 0 under any prior, as on the other paths
        zero = lid_from_embeddings(trial, enrol, true_index, AffineMap(0.0, 1.7), log_prior,
                                   engine=Engine(device="cpu", kernel="triton", precision="float32"),
                                   triton_blocks={{"block_m": 16, "block_n": 32}})
        assert zero.kernel == "triton" and np.array_equal(zero.lid_bits, np.zeros(45)), (name, zero.lid_bits)
        assert not np.signbit(zero.lid_bits).any() and (zero.true_rank == rank).mean() >= 0.97, name
    # the low-precision dot: fp16 inputs, fp32 accumulation, against the same rounded inputs in float64
    rng = np.random.default_rng(0)
    q = torch.from_numpy(rng.normal(size=(37, 24))).half(); k = torch.from_numpy(rng.normal(size=(50, 24))).half()
    cols = torch.from_numpy(rng.integers(0, 50, 37)).int()
    s = q.double() @ k.double().T
    lse, peak, mated, above = lid_lse_triton(q, k, None, cols, torch.zeros(37), block_m=16, block_n=16)
    want = torch.logsumexp(s * np.log(2), 1) / np.log(2)
    assert torch.allclose(lse.double(), want, atol=1e-4), (lse.double() - want).abs().max()
    assert torch.allclose(peak.double(), s.max(1).values, atol=1e-4), (peak.double() - s.max(1).values).abs().max()
    assert torch.allclose(mated.double(), s[torch.arange(37), cols.long()], atol=1e-4)
    others = (s > 0) & (torch.arange(50)[None, :] != cols.long()[:, None])
    assert torch.equal(above.long(), others.sum(1))
    print("ok")
    """
)


@pytest.mark.slow
def test_triton_kernel_in_the_interpreter():
    """The fused kernel's logic, run by Triton's CPU interpreter (bf16 needs a GPU: see bench/gpu_all.py)."""
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    env = dict(os.environ, TRITON_INTERPRET="1")
    result = subprocess.run(
        [sys.executable, "-c", _INTERPRETER_CHECK.format(root=str(ROOT))],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]


def _cuda():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA device")
@pytest.mark.parametrize(
    "kernel,precision,tolerance",
    [
        ("torch", "float64", 1e-12),
        ("torch", "float32", 1e-6),
        ("torch", "bfloat16", 3e-3),
        ("triton", "float32", 1e-6),
        ("triton", "bfloat16", 3e-3),
    ],
)
def test_cuda_paths_against_reference(kernel, precision, tolerance):
    if kernel == "triton":
        pytest.importorskip("triton")
    trial, enrol, true_index = embeddings(8, 3000, 2000, 192, noise=4.0)
    z = dense_znorm(cosine(trial, enrol), 1)
    cal = fitted(Logistic(), z, true_index)
    for log_prior in log_priors(2000).values():
        ref = reference_lid(trial, enrol, true_index, cal, log_prior, 1)
        out = lid_from_embeddings(
            trial, enrol, true_index, cal, log_prior, engine=Engine(device="cuda", kernel=kernel, precision=precision)
        )
        assert relative_l2(out.lid_bits, ref) <= tolerance
