"""``PrecomputedEmbeddings``: an attacker whose embeddings were extracted elsewhere.

Embeddings are looked up by utterance id in one or more files:

``.npz``
    arrays ``utt_ids`` (n,) str and ``vectors`` (n, d); or one (d,) array per utterance id
    (``np.savez(path, **{utt_id: vector})``).
``.npy``
    a (n, d) array, with the ids in a text file of the same name and suffix ``.ids``
    (one id per line, in row order).
``.ark`` / ``.scp``
    Kaldi archives or scp indexes of vectors (:mod:`lidframe.data.kaldi_ark`: an scp entry
    must be ``PATH`` or ``PATH:OFFSET``; pipes, ``-`` and slices are refused, so no shell
    command ever runs).
``.parquet``
    the published LID code's layout: one row per utterance with an utterance-id column,
    a speaker-id column and the vector as a list column (column names chosen with
    ``id_column`` / ``vector_column``; defaults ``utt_id`` / ``vector``, and the LID
    code's ``utterance_id`` / ``embedding`` are recognised).

Scoring is :class:`~lidframe.attackers.EmbeddingAttacker`'s: enrolment profiles
(``"mean_of_normalised"`` or ``"mean"``) and cosine (or the PLDA back end) against every
enrolled speaker.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from lidframe.data.fileio import StrPath, check_input_file, open_input, read_text
from lidframe.data.kaldi_ark import read_ark, read_scp_vectors, scp_archives
from lidframe.data.npzfile import npz_keys, read_npy, read_npz
from lidframe.data.utterance import Utterance, check_utterances
from lidframe.errors import InputError, preview
from lidframe.registry.ranges import Range

from .base import SCORING_RANGES, EmbeddingAttacker

__all__ = ["PrecomputedEmbeddings", "read_embeddings"]

_ID_COLUMNS = ("utt_id", "utterance_id", "utt", "id")
_VECTOR_COLUMNS = ("vector", "embedding", "emb", "xvector")


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    keys = npz_keys(path)
    if "utt_ids" in keys or "vectors" in keys:
        data = read_npz(
            path, ("utt_ids", "vectors"), kinds={"utt_ids": "ids", "vectors": "numbers"}, what="embeddings file"
        )
        ids, vectors = data["utt_ids"], data["vectors"]
        if vectors.ndim != 2 or ids.shape != (vectors.shape[0],):
            raise InputError(
                f"{path}: utt_ids {ids.shape} and vectors {vectors.shape} do not match; "
                "expected utt_ids (n,) and vectors (n, d)"
            )
        return _rows_by_id(path, [str(u) for u in ids], vectors)
    data = read_npz(path, kinds=dict.fromkeys(keys, "numbers"), what="embeddings file")
    bad = [key for key, vector in data.items() if vector.ndim not in (1, 2) or vector.shape[:-1] not in ((), (1,))]
    if bad:
        raise InputError(
            f"{path}: arrays {preview(bad)} are not vectors (shape {data[bad[0]].shape}); "
            "expected one (d,) vector per utterance id, or utt_ids (n,) with vectors (n, d)"
        )
    return {key: np.asarray(vector, dtype=np.float64).ravel() for key, vector in data.items()}


def _rows_by_id(path: Path, ids: list[str], vectors: np.ndarray) -> dict[str, np.ndarray]:
    """``{id: row}``; a repeated id is an error (one of its rows would be dropped)."""
    table = {u: np.asarray(v, dtype=np.float64) for u, v in zip(ids, vectors)}
    if len(table) != len(ids):
        repeated = [u for u, count in Counter(ids).items() if count > 1]
        raise InputError(f"{path}: utterance ids repeated: {preview(repeated)}")
    return table


def _read_npy(path: Path) -> dict[str, np.ndarray]:
    ids_path = path.with_suffix(".ids")
    if not os.path.lexists(ids_path):
        raise InputError(f"{path}: a .npy of embeddings needs its ids in {ids_path.name} (one per line)")
    vectors = read_npy(path, kind="numbers", what="embeddings")
    ids = [
        line.strip()
        for line in read_text(ids_path, "an id file (one utterance id per line)").splitlines()
        if line.strip()
    ]
    if vectors.ndim != 2 or len(ids) != vectors.shape[0]:
        raise InputError(f"{path}: {vectors.shape} array but {len(ids)} ids in {ids_path.name}")
    return _rows_by_id(path, ids, vectors)


def _read_kaldi(path: Path) -> dict[str, np.ndarray]:
    """An archive or scp index, read by :mod:`lidframe.data.kaldi_ark` (no pipes, no pickles)."""
    table = read_scp_vectors(path) if path.suffix.lower() == ".scp" else read_ark(path)
    return {utt_id: array.ravel() for utt_id, array in table.items()}


def _read_parquet(path: Path, id_column: str | None, vector_column: str | None) -> dict[str, np.ndarray]:
    import pandas as pd

    with open_input(path, "a parquet file of embeddings") as handle:  # the one opener: a FIFO is never waited on
        try:
            frame = pd.read_parquet(handle)
        # pyarrow missing, or a bad file: pyarrow's own errors (ArrowInvalid, ...) cannot be named where it is missing
        except Exception as exc:  # noqa: BLE001 -- one line naming the file, whatever the reader raised
            raise InputError(f"{path}: cannot read parquet ({exc})") from None
    id_col = id_column or next((c for c in _ID_COLUMNS if c in frame.columns), None)
    vec_col = vector_column or next((c for c in _VECTOR_COLUMNS if c in frame.columns), None)
    if id_col not in frame.columns or vec_col not in frame.columns:
        raise InputError(
            f"{path}: need an utterance-id column and a vector column; found {list(frame.columns)} "
            "(set id_column= / vector_column=)"
        )
    return {str(u): np.asarray(v, dtype=np.float64).ravel() for u, v in zip(frame[id_col], frame[vec_col])}


def read_embeddings(
    path: StrPath, *, id_column: str | None = None, vector_column: str | None = None
) -> dict[str, np.ndarray]:
    """Read ``{utt_id: vector}`` from one embeddings file (format by suffix; module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npz``, ``.npy`` (with its ``.ids``), ``.ark``, ``.scp`` or ``.parquet`` file.
    id_column, vector_column : str, optional
        Parquet column names (default: the first of the usual names present).

    Returns
    -------
    dict of str to numpy.ndarray
        Utterance id -> float64 vector of shape (d,), d the same for every id.
    """
    path = Path(path)
    if not os.path.lexists(path):
        raise InputError(f"{path}: no such embeddings file")
    check_input_file(path, "an embeddings file (.npz, .npy, .ark, .scp or .parquet)")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        table = _read_npz(path)
    elif suffix == ".npy":
        table = _read_npy(path)
    elif suffix in (".ark", ".scp"):
        table = _read_kaldi(path)
    elif suffix == ".parquet":
        table = _read_parquet(path, id_column, vector_column)
    else:
        raise InputError(
            f"{path}: unknown embeddings format {path.suffix!r}; expected .npz, .npy, .ark, .scp or .parquet"
        )
    dims = {v.shape[0] for v in table.values()}
    if len(dims) > 1:
        raise InputError(f"{path}: embeddings of different dimensions {sorted(dims)}")
    bad = [u for u, v in table.items() if not np.isfinite(v).all()]
    if bad:
        raise InputError(f"{path}: non-finite embedding values for {preview(bad)}")
    return table


class PrecomputedEmbeddings(EmbeddingAttacker):
    """Embeddings read from files, looked up by utterance id.

    Parameters
    ----------
    path : str, os.PathLike, or a list or tuple of them
        Embedding files (module docstring); several are merged (an id in two files is an
        error).
    id_column, vector_column : str, optional
        Parquet column names.
    enrolment : {"mean_of_normalised", "mean"}
    **scoring
        The scoring options of :class:`~lidframe.attackers.EmbeddingAttacker` (``backend``,
        ``plda_train``, ``plda_dim``, ``score_norm``, ``cohort``, ``cohort_top_k``); a data-dir
        cohort's utterances are looked up here too.
    """

    name = "precomputed"
    #: Embeddings are looked up by utterance id: the audio files are never read.
    reads_audio = False
    option_ranges: ClassVar[Mapping[str, Range]] = SCORING_RANGES

    @classmethod
    def input_files(cls, params: dict) -> list[Path]:
        """Files read besides the ``path`` values (for cache keys): the ``.ids`` of a ``.npy``, the archives of a ``.scp``, its scoring options' (PLDA training set, cohort).

        Raises
        ------
        InputError
            An scp entry is a pipe, standard input or a slice (:func:`~lidframe.data.kaldi_ark.read_scp`):
            a grid spec naming such a file is refused when it is validated, before any cell runs.
        """
        value = params.get("path", ())
        paths = [Path(p) for p in (value if isinstance(value, (list, tuple)) else [value])]
        extra: list[Path] = []
        for path in paths:
            if path.suffix.lower() == ".npy" and path.with_suffix(".ids").is_file():
                extra.append(path.with_suffix(".ids"))
            elif path.suffix.lower() == ".scp" and path.is_file():
                extra.extend(archive for archive in scp_archives(path) if archive not in extra)
        return [*extra, *super().input_files(params)]

    def __init__(
        self,
        *,
        path: StrPath | list[StrPath] | tuple[StrPath, ...],
        id_column: str | None = None,
        vector_column: str | None = None,
        enrolment: str = "mean_of_normalised",
        **scoring: Any,
    ):
        super().__init__(enrolment=enrolment, **scoring)
        self.path = path
        self.id_column = id_column
        self.vector_column = vector_column
        self._table: dict[str, np.ndarray] | None = None

    @property
    def table(self) -> dict[str, np.ndarray]:
        """``{utt_id: vector}`` of all files (read on first use)."""
        if self._table is None:
            paths = self.path if isinstance(self.path, (list, tuple)) else [self.path]
            merged: dict[str, np.ndarray] = {}
            for p in paths:
                part = read_embeddings(p, id_column=self.id_column, vector_column=self.vector_column)
                clash = set(part) & set(merged)
                if clash:
                    raise InputError(f"{p}: utterance ids also in an earlier embeddings file: {preview(sorted(clash))}")
                merged.update(part)
            if len({v.shape[0] for v in merged.values()}) > 1:
                raise InputError("embedding files hold vectors of different dimensions")
            self._table = merged
        return self._table

    def embed(self, utterances: Sequence[Utterance]) -> np.ndarray:
        """(n, d) float64 embeddings of the utterances, by id."""
        utterances = check_utterances(utterances, "utterances")
        table = self.table
        missing = [u.utt_id for u in utterances if u.utt_id not in table]
        if missing:
            raise InputError(f"no embedding for utterance id(s) {preview(missing)} in {self.path}")
        return np.stack([table[u.utt_id] for u in utterances])
