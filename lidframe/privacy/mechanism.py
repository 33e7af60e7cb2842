"""The Gaussian speaker mechanism (DP-Voxlet) and Gaussian differential privacy (GDP) theory.

Mechanism
---------
:class:`GaussianSpeakerMechanism` releases a speaker embedding x as

    M(x) = clip_U(x) + N(0, sigma^2 I),   clip_U(x) = x * min(1, U / ||x||),   sigma = Delta / mu

Any two clipped embeddings are at most Delta apart, and a Gaussian mechanism with
L2 sensitivity Delta and noise sigma is mu-GDP with mu = Delta / sigma (Dong, Roth & Su
2022): telling any two speakers apart from one release is no easier than telling
N(0, 1) from N(mu, 1).

``sensitivity="diameter"`` (default): Delta = 2U, the largest distance between two
    points of the ball of radius U -- the standard Gaussian-mechanism sensitivity, which
    gives mu-GDP for *arbitrary* embeddings.
``sensitivity="radius"``: Delta = U, i.e. sigma = U / mu, the noise scale the DP-Voxlet
    paper and code use.  It gives the claimed mu only for embeddings whose pairwise
    distances stay below U (e.g. all on one side of the origin); for arbitrary
    embeddings it is (2 mu)-GDP.

Both conventions rest on what the clipping delivers.  :meth:`GaussianSpeakerMechanism.guarantee`
checks it on the clipped embeddings that are released and returns the :class:`Guarantee`
that holds among them: mu_held = mu max(1, D / Delta), D the largest distance between
two of them, which is mu exactly when every clipped norm is at most U and (for
``"radius"``) no two lie more than U apart, both within a relative :data:`TOLERANCE`.
Releases of speakers whose embeddings are mixtures of these points are mu_held-GDP too
(the hockey-stick divergences of a mixture pair are at most the largest over the pairs
of its components).

Theory
------
* ``gdp_tradeoff(alpha, mu) = Phi(Phi^-1(1 - alpha) - mu)``: the smallest miss rate of any
  test at false-alarm rate alpha;
* ``gdp_eer_bound(mu) = Phi(-mu / 2)``: hence any attacker's EER between two speakers is
  at least this (the trade-off curve meets the diagonal there);
* ``gdp_mi_bound_bits(mu) = mu^2 / (2 ln 2)``: the mutual information between identity
  and one release is at most the largest KL divergence between two release
  distributions, Delta^2 / (2 sigma^2) = mu^2 / 2 nats (for any distribution of the
  identity); an attacker's expected LID is below it when the trial speakers are drawn
  from the attacker's prior;
* ``compose_mu(mu, k) = mu sqrt(k)``: k independent releases of the same speaker (k trial
  utterances that a longitudinal attacker links together) are together
  (mu sqrt k)-GDP.  Releases of the *enrolled* speakers (an anonymised enrolment,
  averaged over k utterances) do not weaken the guarantee of linking one trial: that
  trial's release is mu-GDP whatever the attacker knows about the enrolled speakers;
* ``mu_for_eer(eer)``: the mu whose EER bound is *eer*.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, overload

import attrs
import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import norm

from lidframe.errors import InputError

if TYPE_CHECKING:
    import torch

__all__ = [
    "GaussianSpeakerMechanism",
    "Guarantee",
    "TOLERANCE",
    "clip_to_norm",
    "clipped_extent",
    "gdp_tradeoff",
    "gdp_eer_bound",
    "gdp_mi_bound_bits",
    "compose_mu",
    "mu_for_eer",
]

SENSITIVITIES = ("diameter", "radius")

#: Relative tolerance of :meth:`GaussianSpeakerMechanism.guarantee`: a clipped norm up to
#: U (1 + TOLERANCE), and (``"radius"``) a distance up to U (1 + TOLERANCE), count as
#: within U.  :func:`clip_to_norm` in float64 leaves a clipped norm within a few units in
#: the last place (about 1e-16 relative) of U; an excess below 1e-9 would change the bounds'
#: mu by less than 1e-9 relative.
TOLERANCE = 1e-9

#: Rows per block of the pairwise distances in :meth:`GaussianSpeakerMechanism.guarantee`.
_DISTANCE_BLOCK = 2048


class TensorLike(Protocol):
    """A ``torch.Tensor`` as the overloads of this module tell it from an array: it has ``detach``.

    Typed without naming torch, so that the static checks read this module the same with
    torch installed or not: where torch is missing, ``torch.Tensor`` would be ``Any`` and
    its overload would take every argument (mypy: the array overload "will never be matched").
    """

    def detach(self) -> Any: ...


#: A tensor in, the same kind of tensor out (:func:`clip_to_norm`, :meth:`GaussianSpeakerMechanism.anonymise`).
TensorT = TypeVar("TensorT", bound=TensorLike)


def _check_mu(mu: float) -> float:
    value = float(mu)
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"mu must be positive and finite, got {value}")
    return value


@overload
def gdp_tradeoff(alpha: float, mu: float) -> float: ...
@overload
def gdp_tradeoff(alpha: ArrayLike, mu: float) -> np.ndarray: ...
def gdp_tradeoff(alpha: ArrayLike, mu: float) -> float | np.ndarray:
    """Trade-off curve of mu-GDP: minimal miss rate Phi(Phi^-1(1 - alpha) - mu) at false-alarm alpha.

    Parameters
    ----------
    alpha : float or array_like
        False-alarm rate(s), within [0, 1].
    mu : float
        GDP parameter (positive).

    Returns
    -------
    float or numpy.ndarray
        Miss rate(s), the shape of *alpha* (a numpy float for a scalar *alpha*).
    """
    checked_mu = _check_mu(mu)
    rates = np.asarray(alpha, dtype=np.float64)
    if ((rates < 0) | (rates > 1)).any():
        raise InputError("alpha must be within [0, 1]")
    return norm.cdf(norm.ppf(1.0 - rates) - checked_mu)


def gdp_eer_bound(mu: float) -> float:
    """Lower bound Phi(-mu / 2) on any attacker's equal error rate (one release)."""
    return float(norm.cdf(-_check_mu(mu) / 2.0))


def gdp_mi_bound_bits(mu: float) -> float:
    """Upper bound mu^2 / (2 ln 2) bits on the mutual information of identity and one release."""
    return _check_mu(mu) ** 2 / (2.0 * math.log(2.0))


def compose_mu(mu: float, k: int) -> float:
    """mu of k independent releases of one speaker under a mu-GDP mechanism: mu sqrt(k)."""
    if not (isinstance(k, (int, np.integer)) and k >= 1):
        raise InputError(f"k must be a positive integer, got {k!r}")
    return _check_mu(mu) * math.sqrt(int(k))


def mu_for_eer(eer: float) -> float:
    """The mu whose EER bound Phi(-mu / 2) equals *eer* (0 < eer < 0.5): -2 Phi^-1(eer)."""
    target = float(eer)
    if not 0 < target < 0.5:
        raise InputError(f"target EER must be in (0, 0.5), got {target}")
    return float(-2.0 * norm.ppf(target))


@overload
def clip_to_norm(emb: TensorT, clip_norm: float) -> TensorT: ...
@overload
def clip_to_norm(emb: ArrayLike, clip_norm: float) -> np.ndarray: ...
def clip_to_norm(emb: TensorLike | ArrayLike, clip_norm: float) -> TensorLike | np.ndarray:
    """Scale each row (or the vector) to L2 norm <= clip_norm; numpy or torch in, same out.

    Parameters
    ----------
    emb : array_like or torch.Tensor, shape (d,) or (n, d)
        Embedding(s); a tensor stays a tensor (same device and dtype), anything else becomes float64.
    clip_norm : float
        U, the largest L2 norm kept.
    """
    if _is_torch(emb):
        import torch

        tensor = cast("torch.Tensor", emb)
        norms = torch.linalg.vector_norm(tensor, dim=-1, keepdim=True)
        return tensor * torch.clamp(clip_norm / torch.clamp(norms, min=1e-30), max=1.0)
    array = np.asarray(cast(ArrayLike, emb), dtype=np.float64)
    row_norms = np.linalg.norm(array, axis=-1, keepdims=True)
    return array * np.minimum(1.0, clip_norm / np.maximum(row_norms, 1e-300))


def _is_torch(x: object) -> bool:
    return type(x).__module__.startswith("torch")


def clipped_extent(clipped: ArrayLike) -> tuple[float, float]:
    """(largest L2 norm, largest distance between two rows) of clipped embeddings, in embedding units.

    Parameters
    ----------
    clipped : array_like, shape (n, d) or (d,)
        Clipped embeddings (finite); the distance of a single one is 0.

    Returns
    -------
    max_norm, diameter : float
        The distances come from blocks of :data:`_DISTANCE_BLOCK` rows of the Gram matrix
        (||a||^2 + ||b||^2 - 2 a.b, memory O(block n)); their rounding is about 1e-16
        relative for embeddings of norm about U.

    Raises
    ------
    InputError
        If *clipped* is not a finite (n, d) or (d,) array with n >= 1.
    """
    points = np.atleast_2d(np.asarray(clipped, dtype=np.float64))
    if points.ndim != 2 or points.shape[0] == 0 or not np.isfinite(points).all():
        raise InputError("the clipped embeddings must be a finite (n, d) or (d,) array")
    squared = np.einsum("ij,ij->i", points, points)
    largest = 0.0
    for start in range(0, points.shape[0], _DISTANCE_BLOCK):
        block = points[start : start + _DISTANCE_BLOCK]
        gram = squared[start : start + _DISTANCE_BLOCK, None] + squared[None, :] - 2.0 * block @ points.T
        largest = max(largest, float(gram.max(initial=0.0)))
    return math.sqrt(float(squared.max())), math.sqrt(largest)


@attrs.frozen(kw_only=True)
class Guarantee:
    """The GDP parameter that holds for the releases of given clipped embeddings.

    What :meth:`GaussianSpeakerMechanism.guarantee` returns (module docstring).

    Attributes
    ----------
    mu : float
        The mechanism's mu, the one its sensitivity convention claims.
    mu_held : float
        The mu that holds among these embeddings: mu max(1, diameter / Delta), equal to
        ``mu`` when ``holds``.
    holds : bool
        Whether the claimed mu holds: every clipped norm at most U and (``"radius"``)
        the diameter at most U, within the relative :data:`TOLERANCE`.
    max_norm : float
        The largest L2 norm of a clipped embedding (embedding units).
    diameter : float
        The largest distance between two clipped embeddings (embedding units).
    reason : str
        One line: which convention, what was measured, and what holds.
    """

    mu: float
    mu_held: float
    holds: bool
    max_norm: float
    diameter: float
    reason: str


class GaussianSpeakerMechanism:
    """Clip to norm ``clip_norm`` and add isotropic Gaussian noise: mu-GDP per release.

    Parameters
    ----------
    mu : float
        Privacy parameter (smaller = more private).
    clip_norm : float
        U, the clipping radius.
    sensitivity : {"diameter", "radius"}
        Delta = 2U (valid for any embeddings) or Delta = U (the DP-Voxlet paper's noise
        scale); see the module docstring.
    seed : int, optional
        Seed of the noise; each call draws fresh noise from the seeded stream.

    Attributes
    ----------
    sigma : float
        Noise standard deviation per dimension, Delta / mu.
    """

    def __init__(self, mu: float, clip_norm: float = 1.0, sensitivity: str = "diameter", seed: int | None = None):
        self.mu = _check_mu(mu)
        if not (math.isfinite(clip_norm) and clip_norm > 0):
            raise InputError(f"clip_norm must be positive and finite, got {clip_norm}")
        if sensitivity not in SENSITIVITIES:
            raise InputError(f"sensitivity must be one of {SENSITIVITIES}, got {sensitivity!r}")
        self.clip_norm = float(clip_norm)
        self.sensitivity = sensitivity
        self.seed = seed
        self._rng = np.random.default_rng(seed)

    @property
    def delta(self) -> float:
        """L2 sensitivity: 2U ("diameter") or U ("radius")."""
        return (2.0 if self.sensitivity == "diameter" else 1.0) * self.clip_norm

    @property
    def sigma(self) -> float:
        """Noise standard deviation per dimension: delta / mu."""
        return self.delta / self.mu

    @overload
    def anonymise(self, emb: TensorT) -> TensorT: ...
    @overload
    def anonymise(self, emb: ArrayLike) -> np.ndarray: ...
    def anonymise(self, emb: TensorLike | ArrayLike) -> TensorLike | np.ndarray:
        """Release *emb* (shape (d,) or (n, d); numpy array or torch tensor, same type back).

        ``add_noise(clip(emb))``: the noise is drawn from the mechanism's seeded stream.
        """
        return self.add_noise(self.clip(emb))

    @overload
    def clip(self, emb: TensorT) -> TensorT: ...
    @overload
    def clip(self, emb: ArrayLike) -> np.ndarray: ...
    def clip(self, emb: TensorLike | ArrayLike) -> TensorLike | np.ndarray:
        """*emb* scaled to L2 norm at most U, row by row (:func:`clip_to_norm` with ``clip_norm``)."""
        return clip_to_norm(emb, self.clip_norm)

    @overload
    def add_noise(self, clipped: TensorT) -> TensorT: ...
    @overload
    def add_noise(self, clipped: ArrayLike) -> np.ndarray: ...
    def add_noise(self, clipped: TensorLike | ArrayLike) -> TensorLike | np.ndarray:
        """*clipped* plus N(0, sigma^2 I) noise of its shape (a tensor stays a tensor, same device and dtype)."""
        if _is_torch(clipped):
            import torch

            tensor = cast("torch.Tensor", clipped)
            noise = self._rng.standard_normal(tuple(tensor.shape)) * self.sigma
            return tensor + torch.as_tensor(noise, dtype=tensor.dtype, device=tensor.device)
        array = np.asarray(cast(ArrayLike, clipped), dtype=np.float64)
        return array + self._rng.standard_normal(array.shape) * self.sigma

    def guarantee(self, clipped: ArrayLike) -> Guarantee:
        """The mu that holds for releases of these clipped embeddings (module docstring).

        Parameters
        ----------
        clipped : array_like, shape (n, d) or (d,)
            The embeddings as released before the noise: what :meth:`clip` returned for
            them (numpy, float64).

        Returns
        -------
        Guarantee
            ``mu_held`` = mu max(1, diameter / Delta) and whether the claimed mu holds:
            every norm at most U and (``"radius"``) every distance at most U, within
            the relative :data:`TOLERANCE`.  A norm above U means the clipping failed:
            then nothing holds for other embeddings, and ``mu_held`` holds among these.

        Raises
        ------
        InputError
            If *clipped* is not a finite (n, d) or (d,) array.
        """
        return self.guarantee_of(*clipped_extent(clipped))

    def guarantee_of(self, max_norm: float, diameter: float) -> Guarantee:
        """:meth:`guarantee` from the largest norm and the diameter of the clipped embeddings (:func:`clipped_extent`)."""
        limit = self.clip_norm * (1.0 + TOLERANCE)
        clipped_ok = max_norm <= limit
        holds = clipped_ok and (self.sensitivity == "diameter" or diameter <= limit)
        mu_held = self.mu if holds else self.mu * max(1.0, diameter / self.delta)
        u, d, m = f"U = {self.clip_norm:g}", f"{diameter:.6g}", f"{mu_held:.6g}"
        if not clipped_ok:
            reason = (
                f"clipping failed: a clipped embedding has norm {max_norm:.6g} > {u}, so the mechanism guarantees "
                f"nothing for other embeddings; these are at most {d} apart: {m}-GDP among them"
            )
        elif self.sensitivity == "diameter":
            reason = (
                f"sensitivity diameter (sigma = 2U / mu): every clipped norm <= {u}, so any two embeddings are at "
                f"most 2U apart: mu-GDP for any embeddings (these are at most {d} apart)"
            )
        elif holds:
            reason = (
                f"sensitivity radius (sigma = U / mu): these clipped embeddings are at most {d} <= {u} apart: "
                f"mu-GDP among them (for arbitrary embeddings, 2 mu)"
            )
        else:
            reason = (
                f"sensitivity radius (sigma = U / mu) gives mu only for embeddings at most {u} apart; these are up "
                f"to {d} apart: {m}-GDP among them (for arbitrary embeddings, 2 mu)"
            )
        return Guarantee(
            mu=self.mu, mu_held=mu_held, holds=holds, max_norm=float(max_norm), diameter=float(diameter), reason=reason
        )

    @classmethod
    def from_spec(cls, spec: str) -> GaussianSpeakerMechanism:
        """Build from ``gaussian?mu=1&clip_norm=1&sensitivity=diameter&seed=0`` (the grid syntax)."""
        from lidframe.registry import parse_spec

        name, params = parse_spec(spec, cls)  # values typed by __init__'s annotations
        params.pop("enrolment", None)
        if name != "gaussian":
            raise InputError(f"unknown mechanism {name!r} in {spec!r}; available: gaussian")
        unknown = set(params) - {"mu", "clip_norm", "sensitivity", "seed"}
        if unknown or "mu" not in params:
            raise InputError(f"mechanism {spec!r}: needs mu=..., may set clip_norm, sensitivity, seed, enrolment")
        return cls(**params)

    def __repr__(self) -> str:
        return (
            f"GaussianSpeakerMechanism(mu={self.mu:g}, clip_norm={self.clip_norm:g}, "
            f"sensitivity={self.sensitivity!r}, sigma={self.sigma:.4g})"
        )
