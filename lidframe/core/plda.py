"""Two-covariance PLDA with LDA: a speaker-verification back end for embeddings (instead of cosine).

Pipeline, fitted on a training set of M embeddings of S speakers (:class:`PLDA`)::

    x  ->  x / ||x||  (length normalisation, optional)  ->  z = P^T (x - m)  ->  two-covariance model on z

m (d,) is the mean of the (normalised) training embeddings and P (d, k) the LDA projection:
the k = ``lda_dim`` leading solutions of S_b p = lambda S_w p, with S_w the within-speaker
and S_b the between-speaker scatter of the centred training embeddings (each speaker's mean
weighted by its count), normalised so that P^T S_w P = I (k <= min(d, S - 1), where S_b has
rank at most S - 1; k = d keeps every direction and only rotates and scales, which leaves
the LLR below unchanged).  Length normalisation comes first, and everything after it is
affine: so the mean of a speaker's n normalised embeddings -- the profile that
:meth:`lidframe.attackers.EmbeddingAttacker.enrol` makes with ``"mean_of_normalised"`` --
maps to the mean of their z, which is what the LLR below takes.

**Two-covariance model** (Brümmer & de Villiers 2010) in the k-dimensional z space: a speaker's
mean y ~ N(mu, B^-1), and each embedding of that speaker is z = y + e, e ~ N(0, W^-1), all
independent; B and W are the between- and within-speaker *precisions*.

**Fitting.**  Initialisation in closed form: mu the mean of the speakers' means,
W^-1 the within-speaker scatter divided by M - S, B^-1 the covariance of the speakers'
means (divided by S).  Then ``n_iter`` EM iterations (maximum likelihood; the marginal
log-likelihood never decreases, recorded in ``log_likelihood_``).  For a speaker with n
embeddings summing to f, the posterior of y is N(m_s, L_s^-1) with L_s = B + n W and
m_s = L_s^-1 (B mu + W f); the M step sets::

    mu     = (1/S) sum_s m_s
    B^-1   = (1/S) sum_s (L_s^-1 + m_s m_s^T) - mu mu^T
    W^-1   = (1/M) sum_s sum_i [(z_i - m_s)(z_i - m_s)^T + L_s^-1]

and the marginal log-likelihood of the speaker's embeddings Z_s is::

    log p(Z_s) = -(n k / 2) log 2 pi + (1/2) log|B| + (n/2) log|W| - (1/2) log|L_s|
                 - (1/2) [mu^T B mu + sum_i z_i^T W z_i - m_s^T L_s m_s]

**Verification LLR** of an enrolment of n embeddings with mean a against one test embedding
b (same speaker y against two independent speakers): (a, b) is Gaussian with mean (mu, mu)
and covariance [[S_b + S_w / n, C], [C, S_b + S_w]], C = S_b under "same" and C = 0 under
"different" (S_b = B^-1, S_w = W^-1)::

    LLR(a, b; n) = log N([a; b]; [mu; mu], Sigma_same(n)) - log N([a; b]; [mu; mu], Sigma_diff(n))

In closed form: V diagonalises both covariances, V^T S_w V = I and V^T S_b V = diag(psi)
(the generalised eigenproblem S_b v = psi S_w v), and with u = V^T (a - mu),
w = V^T (b - mu) the LLR is a sum over the k dimensions::

    D_j     = psi_j (1 + 1/n) + 1/n
    LLR     = sum_j [ (1/2) log((psi_j + 1/n)(psi_j + 1) / D_j)
                      + alpha_j u_j^2 + beta_j w_j^2 + gamma_j u_j w_j ]
    alpha_j = -(1/2) [(psi_j + 1) / D_j - 1 / (psi_j + 1/n)]
    beta_j  = -(1/2) [(psi_j + 1/n) / D_j - 1 / (psi_j + 1)]
    gamma_j = psi_j / D_j

:func:`two_covariance_llr` computes it for T test embeddings against N enrolments (each
with its own n) as two (T, k) x (k, N) products: O(T N k).  n = 1 makes it symmetric in
a and b.  Scores are natural-log likelihood ratios under the model; on real embeddings the
model is only approximate, so they still go through the calibrator like cosines do.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike

from lidframe.errors import InputError, preview

__all__ = ["PLDA", "two_covariance_llr", "MIN_EMBEDDINGS_PER_SPEAKER"]

#: Embeddings each training speaker needs: one gives no within-speaker variation (it is
#: refused, not dropped: a training set is never thinned silently).
MIN_EMBEDDINGS_PER_SPEAKER = 2


def _finite_matrix(values: ArrayLike, what: str, ndim: int = 2) -> np.ndarray:
    """*values* as a float64 array with *ndim* axes, all finite, else :class:`InputError`."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be numbers") from None
    if array.ndim != ndim:
        raise InputError(f"{what} must have {ndim} axes, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise InputError(f"{what} hold NaN or inf")
    return array


def _covariance(precision: np.ndarray, what: str) -> np.ndarray:
    """The inverse of a symmetric positive-definite precision matrix, else :class:`InputError`."""
    try:
        factor = scipy.linalg.cho_factor(precision, lower=True)
    except np.linalg.LinAlgError:
        raise InputError(f"{what} must be symmetric positive definite") from None
    return scipy.linalg.cho_solve(factor, np.eye(precision.shape[0]))


def _joint_diagonaliser(between: np.ndarray, within: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(psi (k,), V (k, k))`` with V^T S_w V = I and V^T S_b V = diag(psi), S = inverse precision."""
    between_cov = _covariance(between, "the between-speaker precision B")
    within_cov = _covariance(within, "the within-speaker precision W")
    psi, vectors = scipy.linalg.eigh(between_cov, within_cov)
    return psi, vectors


def _check_counts(counts: ArrayLike | None, n_enrolled: int) -> np.ndarray:
    """Enrolment counts as an (N,) float array of integers >= 1 (None: all 1)."""
    if counts is None:
        return np.ones(n_enrolled)
    array = np.asarray(counts)
    if array.shape != (n_enrolled,):
        raise InputError(f"counts must have one entry per enrolment ({n_enrolled}), got shape {array.shape}")
    if array.dtype.kind not in "iuf" or not np.isfinite(array).all() or (array < 1).any() or (array % 1).any():
        raise InputError(f"counts must be whole numbers >= 1 (embeddings per enrolment), got {preview(array)}")
    return array.astype(np.float64)


def two_covariance_llr(
    test: ArrayLike,
    enrol_means: ArrayLike,
    counts: ArrayLike | None = None,
    *,
    mean: ArrayLike,
    between: ArrayLike,
    within: ArrayLike,
) -> np.ndarray:
    """Two-covariance PLDA log-likelihood ratios of every test embedding against every enrolment.

    Parameters
    ----------
    test : array_like, shape (T, k)
        Test embeddings (in the model's space: z, after any projection).
    enrol_means : array_like, shape (N, k)
        Each enrolment's mean of its n_j embeddings.
    counts : array_like of int, shape (N,), optional
        n_j, the embeddings averaged into each enrolment mean (default 1 each).
    mean : array_like, shape (k,)
        mu, the mean of speaker means.
    between, within : array_like, shape (k, k)
        B and W, the between- and within-speaker precision matrices (symmetric positive definite).

    Returns
    -------
    numpy.ndarray, shape (T, N), float64
        LLR (natural log) of "same speaker" against "different speakers" (module docstring).

    Raises
    ------
    InputError
        Shapes that do not match, non-finite values, counts that are not whole numbers
        >= 1, or a precision that is not positive definite.
    """
    test = _finite_matrix(test, "test embeddings")
    enrol_means = _finite_matrix(enrol_means, "enrolment means")
    mu = _finite_matrix(mean, "the mean mu", ndim=1)
    between = _finite_matrix(between, "the between-speaker precision B")
    within = _finite_matrix(within, "the within-speaker precision W")
    k = mu.shape[0]
    if test.shape[1] != k or enrol_means.shape[1] != k or between.shape != (k, k) or within.shape != (k, k):
        raise InputError(
            f"shapes do not match: test {test.shape}, enrolment means {enrol_means.shape}, mu {mu.shape}, "
            f"B {between.shape}, W {within.shape}; expected (T, k), (N, k), (k,), (k, k), (k, k)"
        )
    n = _check_counts(counts, enrol_means.shape[0])
    psi, vectors = _joint_diagonaliser(between, within)
    u = (enrol_means - mu) @ vectors  # (N, k)
    w = (test - mu) @ vectors  # (T, k)
    inv_n = 1.0 / n[:, None]  # (N, 1)
    det = psi * (1.0 + inv_n) + inv_n  # (N, k)
    alpha = -0.5 * ((psi + 1.0) / det - 1.0 / (psi + inv_n))
    beta = -0.5 * ((psi + inv_n) / det - 1.0 / (psi + 1.0))
    gamma = psi / det
    offset = 0.5 * np.log((psi + inv_n) * (psi + 1.0) / det).sum(axis=1) + (alpha * u**2).sum(axis=1)  # (N,)
    return offset[None, :] + (w**2) @ beta.T + w @ (gamma * u).T


def _check_options(lda_dim: object, n_iter: object, length_norm: object) -> None:
    """One :class:`InputError` line for the first option of :class:`PLDA` out of its range."""
    if lda_dim is not None and (isinstance(lda_dim, bool) or not isinstance(lda_dim, (int, np.integer)) or lda_dim < 1):
        raise InputError(f"lda_dim must be None or an integer >= 1, got {lda_dim!r}")
    if isinstance(n_iter, bool) or not isinstance(n_iter, (int, np.integer)) or n_iter < 0:
        raise InputError(f"n_iter must be an integer >= 0 (EM iterations), got {n_iter!r}")
    if not isinstance(length_norm, (bool, np.bool_)):
        raise InputError(f"length_norm must be True or False, got {length_norm!r}")


def _speaker_index(speaker_ids: ArrayLike, n_embeddings: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(speakers (S,), owner (M,) index into them, counts (S,))``; refuses one speaker and singletons."""
    ids = np.asarray(speaker_ids)
    if ids.shape != (n_embeddings,):
        raise InputError(f"speaker_ids must have one id per embedding ({n_embeddings}), got shape {ids.shape}")
    speakers, owner, counts = np.unique(ids.astype(str), return_inverse=True, return_counts=True)
    if speakers.size < 2:
        raise InputError(
            f"a PLDA training set needs at least 2 speakers, got {speakers.size} "
            f"({preview(speakers)}): between-speaker variation cannot be estimated from one"
        )
    few = speakers[counts < MIN_EMBEDDINGS_PER_SPEAKER]
    if few.size:
        raise InputError(
            f"PLDA training speakers need at least {MIN_EMBEDDINGS_PER_SPEAKER} embeddings each; "
            f"{few.size} have 1: {preview(few)}"
        )
    return speakers, owner.ravel(), counts


def _speaker_sums(values: np.ndarray, owner: np.ndarray, n_speakers: int) -> np.ndarray:
    """(S, k) sums of the rows of *values* per speaker."""
    order = np.argsort(owner, kind="stable")
    starts = np.searchsorted(owner[order], np.arange(n_speakers))
    return np.add.reduceat(values[order], starts, axis=0)


def _lda(centred: np.ndarray, owner: np.ndarray, counts: np.ndarray, lda_dim: int | None) -> np.ndarray:
    """The (d, k) LDA projection of centred embeddings, P^T S_w P = I (module docstring)."""
    n_embeddings, dim = centred.shape
    n_speakers = counts.size
    most = min(dim, n_speakers - 1)
    k = most if lda_dim is None else int(lda_dim)
    if k > most:
        raise InputError(
            f"lda_dim {k} is more than the data allows: at most min(d, S - 1) = min({dim}, {n_speakers - 1}) = {most} "
            "(the between-speaker scatter of S speakers has rank S - 1)"
        )
    if n_embeddings - n_speakers < dim:
        raise InputError(
            f"the within-speaker scatter of {n_embeddings} embeddings of {n_speakers} speakers has rank at most "
            f"M - S = {n_embeddings - n_speakers} < d = {dim}: PLDA training needs at least d + S embeddings"
        )
    means = _speaker_sums(centred, owner, n_speakers) / counts[:, None]
    residual = centred - means[owner]
    within = residual.T @ residual
    between = (means * counts[:, None]).T @ means
    spread = np.linalg.eigvalsh(within)
    try:
        if spread[0] <= 1e-10 * spread[-1]:
            raise np.linalg.LinAlgError
        _, vectors = scipy.linalg.eigh(between, within)
    except np.linalg.LinAlgError:
        raise InputError(
            f"the within-speaker scatter of the training embeddings is singular: they span fewer than d = {dim} "
            "dimensions within speakers (give lda_dim, or more varied training embeddings)"
        ) from None
    return vectors[:, ::-1][:, :k]


def _posteriors(
    sums: np.ndarray, counts: np.ndarray, mu: np.ndarray, between: np.ndarray, within: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    """E step: ``(m (S, k), sum_s n_s^p L_s^-1 for p = 0, 1 (2, k, k), sum_s log|L_s|)``.

    L_s = B + n_s W depends on the speaker through n_s only: one inverse per distinct count.
    """
    k = mu.shape[0]
    shift = mu @ between  # B mu, a row
    posterior_means = np.empty_like(sums)
    covariance_sums = np.zeros((2, k, k))
    log_dets = 0.0
    for n in np.unique(counts):
        rows = counts == n
        precision = between + n * within
        factor = scipy.linalg.cho_factor(precision, lower=True)
        covariance = scipy.linalg.cho_solve(factor, np.eye(k))
        posterior_means[rows] = (shift + sums[rows] @ within) @ covariance
        covariance_sums += rows.sum() * np.array([1.0, n])[:, None, None] * covariance
        log_dets += rows.sum() * 2.0 * np.log(np.diag(factor[0])).sum()
    return posterior_means, covariance_sums, log_dets


def _log_likelihood(
    z: np.ndarray, sums: np.ndarray, posterior: tuple, mu: np.ndarray, between: np.ndarray, within: np.ndarray
) -> float:
    """Marginal log-likelihood of the training embeddings under (mu, B, W), nats (module docstring).

    *posterior* is what :func:`_posteriors` gives for these parameters.
    """
    n_embeddings, k = z.shape
    n_speakers = sums.shape[0]
    means, _, log_dets = posterior
    fit = (mu @ between) + sums @ within  # h_s = B mu + W f_s, and L_s m_s = h_s
    quadratic = (
        n_speakers * mu @ between @ mu + np.einsum("ij,jk,ik->", z, within, z) - np.einsum("ij,ij->", means, fit)
    )
    return float(
        -0.5 * n_embeddings * k * np.log(2 * np.pi)
        + 0.5 * n_speakers * np.linalg.slogdet(between)[1]
        + 0.5 * n_embeddings * np.linalg.slogdet(within)[1]
        - 0.5 * log_dets
        - 0.5 * quadratic
    )


def _em(z: np.ndarray, owner: np.ndarray, counts: np.ndarray, n_iter: int) -> tuple[np.ndarray, ...]:
    """``(mu, B, W, log-likelihoods (n_iter + 1,))``: closed-form start, then *n_iter* EM steps."""
    n_embeddings = z.shape[0]
    n_speakers = counts.size
    sums = _speaker_sums(z, owner, n_speakers)
    means = sums / counts[:, None]
    mu = means.mean(axis=0)
    residual = z - means[owner]
    within_cov = residual.T @ residual / (n_embeddings - n_speakers)
    between_cov = (means - mu).T @ (means - mu) / n_speakers
    scatter = z.T @ z
    trace = []
    for step in range(n_iter + 1):
        between = _covariance((between_cov + between_cov.T) / 2, "the fitted between-speaker covariance")
        within = _covariance((within_cov + within_cov.T) / 2, "the fitted within-speaker covariance")
        posterior = _posteriors(sums, counts, mu, between, within)
        trace.append(_log_likelihood(z, sums, posterior, mu, between, within))
        if step == n_iter:
            break
        posterior_means, covariance_sums, _ = posterior
        mu = posterior_means.mean(axis=0)
        between_cov = (covariance_sums[0] + posterior_means.T @ posterior_means) / n_speakers - np.outer(mu, mu)
        cross = sums.T @ posterior_means
        within_cov = (
            scatter - cross - cross.T + (posterior_means * counts[:, None]).T @ posterior_means + covariance_sums[1]
        ) / n_embeddings
    return mu, between, within, np.array(trace)


class PLDA:
    """Two-covariance PLDA with LDA, fitted on labelled training embeddings (module docstring).

    Parameters
    ----------
    lda_dim : int, optional
        k, the LDA dimension, at most min(d, S - 1) for d-dimensional embeddings of S
        training speakers; None (default): that maximum.
    n_iter : int
        EM iterations after the closed-form start (>= 0; 0 keeps the closed form).
    length_norm : bool
        Scale every embedding to unit L2 norm first (default True, as is standard).

    Attributes
    ----------
    mean_ : ndarray, shape (d,)
        m, the mean of the (normalised) training embeddings.
    projection_ : ndarray, shape (d, k)
        P, the LDA projection.
    mu_ : ndarray, shape (k,)
    between_, within_ : ndarray, shape (k, k)
        B and W, the fitted between- and within-speaker precisions.
    speakers_ : ndarray of str, shape (S,)
    log_likelihood_ : ndarray, shape (n_iter + 1,)
        Marginal log-likelihood (nats) of the projected training embeddings at the start and
        after each EM iteration; never decreasing.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> speakers = np.repeat(np.arange(50), 4)
    >>> x = 2 * rng.standard_normal((50, 8))[speakers] + rng.standard_normal((200, 8))
    >>> plda = PLDA(lda_dim=6).fit(x, speakers)
    >>> plda.score(x[:3], x[[0, 4]], counts=[1, 1]).shape
    (3, 2)
    """

    def __init__(self, *, lda_dim: int | None = None, n_iter: int = 10, length_norm: bool = True):
        self.lda_dim = lda_dim
        self.n_iter = n_iter
        self.length_norm = length_norm

    def fit(self, embeddings: ArrayLike, speaker_ids: ArrayLike) -> PLDA:
        """Fit the LDA projection, then B and W by EM.

        Parameters
        ----------
        embeddings : array_like, shape (M, d)
            Training embeddings.
        speaker_ids : array_like, shape (M,)
            Each embedding's speaker; at least 2 speakers, each with at least
            :data:`MIN_EMBEDDINGS_PER_SPEAKER` embeddings.

        Returns
        -------
        PLDA
            self, fitted.

        Raises
        ------
        InputError
            An option out of range, non-finite or zero embeddings, one speaker, a speaker
            with one embedding, ``lda_dim`` above min(d, S - 1), or fewer than d + S
            embeddings (a singular within-speaker scatter).
        """
        _check_options(self.lda_dim, self.n_iter, self.length_norm)
        x = _finite_matrix(embeddings, "PLDA training embeddings")
        speakers, owner, counts = _speaker_index(speaker_ids, x.shape[0])
        if self.length_norm:
            x = self._normalised(x, "PLDA training embeddings")
        self.mean_ = x.mean(axis=0)
        self.projection_ = _lda(x - self.mean_, owner, counts, self.lda_dim)
        z = (x - self.mean_) @ self.projection_
        self.mu_, self.between_, self.within_, self.log_likelihood_ = _em(z, owner, counts, int(self.n_iter))
        self.speakers_ = speakers
        return self

    @staticmethod
    def _normalised(x: np.ndarray, what: str) -> np.ndarray:
        from lidframe.data.vectors import unit_rows

        return unit_rows(x, what=what)

    def _check_input(self, values: ArrayLike, what: str) -> np.ndarray:
        if not hasattr(self, "projection_"):
            raise InputError("this PLDA is not fitted yet: call fit(embeddings, speaker_ids) first")
        x = _finite_matrix(values, what)
        if x.shape[1] != self.mean_.shape[0]:
            raise InputError(
                f"{what} have dimension {x.shape[1]}, the PLDA was trained on dimension {self.mean_.shape[0]}"
            )
        return x

    def transform(self, embeddings: ArrayLike) -> np.ndarray:
        """(n, k) z of single embeddings (n, d): normalised (where ``length_norm``), centred, projected."""
        x = self._check_input(embeddings, "embeddings")
        if self.length_norm:
            x = self._normalised(x, "embeddings")
        return (x - self.mean_) @ self.projection_

    def score(self, test: ArrayLike, enrol_means: ArrayLike, counts: ArrayLike | None = None) -> np.ndarray:
        """LLRs of every test embedding against every enrolment, shape (T, N).

        Parameters
        ----------
        test : array_like, shape (T, d)
            Single test embeddings (normalised here where ``length_norm``).
        enrol_means : array_like, shape (N, d)
            Each enrolment's mean of its n_j embeddings, each embedding normalised *before*
            averaging where ``length_norm`` (the mean itself is not normalised again: the
            steps after normalisation are affine, so it maps to the mean of the z).
        counts : array_like of int, shape (N,), optional
            n_j (default 1 each).

        Returns
        -------
        numpy.ndarray, shape (T, N), float64
            :func:`two_covariance_llr` under the fitted parameters.
        """
        z_test = self.transform(test)
        z_enrol = (self._check_input(enrol_means, "enrolment means") - self.mean_) @ self.projection_
        return two_covariance_llr(z_test, z_enrol, counts, mean=self.mu_, between=self.between_, within=self.within_)
