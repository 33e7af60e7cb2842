"""The real-voice demo end to end: :func:`run_voice_demo` runs its stages in order (see :mod:`lidframe.demo.voice`).

Before any work it says which rows or columns are left out here (:func:`_left_out`); then
the corpus and the anonymised systems (:mod:`lidframe.demo.voice.corpus`), the utility
column (:mod:`lidframe.demo.voice.utility`), the attackers' scores
(:mod:`lidframe.demo.voice.attackers`), the evaluation of every row
(:func:`_evaluate_rows`) with its legal criteria (:func:`_legal_rows`), and what is printed and written
(:mod:`lidframe.demo.voice.outputs`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lidframe.data.fileio import StrPath, check_output_dir
from lidframe.demo.voice.attackers import _score_attackers, ge2e_unavailable
from lidframe.demo.voice.corpus import _anonymise_systems, _synthesize_corpus, _system_roots
from lidframe.demo.voice.outputs import _write_outputs, demo_text
from lidframe.demo.voice.plan import (
    CALIBRATOR,
    N_BOOT,
    OPEN_SET_PRIOR,
    RECOGNISER,
    SENSITIVITY_CALIBRATORS,
    _DemoRun,
    demo_rows,
)
from lidframe.demo.voice.stronger import stronger_comparison
from lidframe.demo.voice.utility import utility_column, utility_unavailable

if TYPE_CHECKING:
    from lidframe.analyses.legal import SinglingOut
    from lidframe.analyses.legal_criteria import LegalCriteria
    from lidframe.analyses.sensitivity import SensitivityResult
    from lidframe.core.evaluation import Result
    from lidframe.report.sections.ladder_model import LadderEntry
    from lidframe.stats.bootstrap import Bootstrap
    from lidframe.utility import Utility

__all__ = ["run_voice_demo"]


def run_voice_demo(
    out_dir: StrPath,
    *,
    seed: int = 0,
    epochs: int = 15,
    sentences: int = 8,
    voices: Sequence[str] | None = None,
    jobs: int = 1,
    n_boot: int = N_BOOT,
    recogniser: str = RECOGNISER,
    progress: bool = False,
    log: Callable[[str], object] = print,
) -> tuple[str, dict]:
    """Run the real-voice demo into *out_dir* (:mod:`lidframe.demo.voice`); return the table and per-row summaries.

    Parameters
    ----------
    out_dir : path
        Output and cache folder (checked before any work; made when missing).
    seed : int
        Seed of the corpus split, the anonymisers, the training, the random attacker and the bootstrap.
    epochs : int
        Training epochs of each small ECAPA-TDNN (a rerun with more continues the checkpoint).
    sentences : int
        Sentences per voice.
    voices : sequence of str, optional
        Speaker ids of :func:`lidframe.audio.corpus.available_voices` (default: all).
    jobs : int
        Speech engines run at once, and worker processes of the anonymisers (the
        training uses torch's threads).
    n_boot : int
        Resamples of the speaker bootstrap behind each row's intervals (and the utility column's).
    recogniser : str
        Registry spec of the utility column's recogniser (default :data:`~lidframe.demo.voice.plan.RECOGNISER`).
    progress : bool
        tqdm bars for synthesis, training (one per epoch), embedding and scoring.
    log : callable
        Receives each stage's lines (its name as it starts, what it did or reused).

    Returns
    -------
    table : str
        The comparison table, the ladder and the utility table (also in ``table.txt``).
    summaries : dict
        Row label (:func:`~lidframe.demo.voice.plan.demo_rows`) -> ``Result.to_dict()`` (also in ``summary.json``).
    """
    run = _DemoRun(check_output_dir(out_dir, "--out"), seed=seed, epochs=epochs, jobs=jobs, progress=progress, log=log)
    run.out.mkdir(exist_ok=True)
    no_ge2e, no_utility = _left_out(recogniser, log)
    rows = demo_rows(ge2e=no_ge2e is None)
    corpus = _synthesize_corpus(run, sentences=sentences, voices=voices)
    roots = _system_roots(run.out)
    _anonymise_systems(run.out, roots, seed=seed, jobs=jobs, progress=progress, log=log)
    utilities, utility_note = _utility_stage(run, roots, no_utility, recogniser=recogniser, n_boot=n_boot)
    scored = _score_attackers(run, roots, ge2e=no_ge2e is None, n_train=len(corpus["speakers"]["train"]))
    rows = [row for row in rows if row.label in scored]  # a stronger row its data could not make is left out (logged)
    results = _evaluate_rows(run, rows, scored, n_boot=n_boot)
    legal = _legal_rows(run, rows, scored, results, n_boot=n_boot)
    stronger = stronger_comparison(rows, results, n_boot=n_boot, seed=seed)
    beside = _evaluate_open_set(run, rows, scored)
    sensitivity = _sensitivity_rows(run, rows, scored)
    text = demo_text(rows, results, utilities, utility_note, open_set=beside, stronger=stronger)
    _write_outputs(
        run,
        rows,
        results,
        table=text,
        corpus=corpus,
        sentences=sentences,
        scored=scored,
        n_boot=n_boot,
        utilities=utilities,
        utility_note=utility_note,
        stronger=stronger,
        open_set=beside,
        sensitivity=sensitivity,
        legal=legal,
    )
    return text, {label: r.to_dict() for label, r in results.items()}


def _left_out(recogniser: str, log: Callable[[str], object]) -> tuple[str | None, str | None]:
    """Why the GE2E rows and the utility column cannot run here (None where they can), each said in one line.

    A *recogniser* spec that names no recogniser is refused here, before any work.
    """
    no_ge2e = ge2e_unavailable()
    if no_ge2e is not None:
        log(f"the pretrained GE2E rows are left out: {no_ge2e}")
    no_utility = utility_unavailable(recogniser)
    if no_utility is not None:
        log(f"the utility column is left out: {no_utility}")
    else:
        from lidframe.utility.evaluate import resolve_recogniser

        resolve_recogniser(recogniser)  # a spec that names no recogniser is refused before any work
    return no_ge2e, no_utility


def _utility_stage(
    run: _DemoRun, roots: Mapping[str, Path], no_utility: str | None, *, recogniser: str, n_boot: int
) -> tuple[dict[str, Utility], str]:
    """The utility column (:func:`~lidframe.demo.voice.utility.utility_column`), or none where *no_utility* says why."""
    if no_utility is not None:
        return {}, f"the utility column is left out: {no_utility}"
    return utility_column(run, roots, recogniser=recogniser, n_boot=n_boot)


def _evaluate_rows(
    run: _DemoRun, rows: Sequence[LadderEntry], scored: Mapping[str, Mapping[str, Path]], *, n_boot: int
) -> dict[str, Result]:
    """Each row calibrated on its dev scores and evaluated on eval, with speaker-bootstrap intervals.

    The calibrator is :data:`~lidframe.demo.voice.plan.CALIBRATOR`; the bootstrap resamples speakers *n_boot* times.
    """
    from lidframe.core.evaluation import evaluate

    bootstrap = _rows_bootstrap(run, n_boot)
    run.log(f"[evaluate] {len(rows)} rows: {CALIBRATOR} calibration on dev, LID on eval, {n_boot} speaker resamples")
    return {
        row.label: evaluate(
            scored[row.label]["dev"], scored[row.label]["eval"], calibrator=CALIBRATOR, bootstrap=bootstrap
        )
        for row in rows
    }


def _rows_bootstrap(run: _DemoRun, n_boot: int) -> Bootstrap:
    """The speaker bootstrap of every row's intervals, its ALID's and its legal criteria's: *n_boot* resamples."""
    from lidframe.stats.bootstrap import Bootstrap

    return Bootstrap(n_boot=n_boot, unit="speaker", seed=run.seed)


def _legal_rows(
    run: _DemoRun,
    rows: Sequence[LadderEntry],
    scored: Mapping[str, Mapping[str, Path]],
    results: Mapping[str, Result],
    *,
    n_boot: int,
) -> dict[str, LegalCriteria]:
    """Each row's legal criteria, as ``lidframe evaluate`` computes them (docs/legal.md): milliseconds a row.

    Linkability pi_link(N') from the row's Result, singling out pi_sing(N) from its eval
    scores (:func:`lidframe.analyses.legal_criteria.legal_criteria`), under the rows'
    speaker bootstrap (:func:`_rows_bootstrap`) and the run's seed.  Singling out depends
    on the eval set only, so rows that share an eval score file share it (computed once).
    A criterion a row's eval set does not allow is absent with its reason, never an error.
    """
    from lidframe.analyses.legal_criteria import legal_criteria, singling_out_criterion
    from lidframe.data.scoreset import ScoreSet

    bootstrap = _rows_bootstrap(run, n_boot)
    run.log(f"[legal] {len(rows)} rows: linkability and singling out on eval, {n_boot} speaker resamples")
    singled: dict[Path, tuple[SinglingOut | None, str | None]] = {}
    found = {}
    for row in rows:
        path = Path(scored[row.label]["eval"])
        eval_set = ScoreSet.load(path)
        if path not in singled:
            singled[path] = singling_out_criterion(eval_set, bootstrap=bootstrap, seed=run.seed)
        found[row.label] = legal_criteria(
            results[row.label], eval_set, bootstrap=bootstrap, seed=run.seed, singled_out=singled[path]
        )
    return found


def _evaluate_open_set(
    run: _DemoRun, rows: Sequence[LadderEntry], scored: Mapping[str, Mapping[str, Path]]
) -> dict[str, Result]:
    """Each row evaluated again in the open set, beside its closed-set evaluation; empty without outsider trials.

    The prior is :data:`~lidframe.demo.voice.plan.OPEN_SET_PRIOR` and the calibrator
    :data:`~lidframe.demo.voice.plan.CALIBRATOR`, fitted on dev with its outsider trials'
    pairs; no bootstrap (the membership attack's intervals are Clopper-Pearson).
    """
    from lidframe.core.evaluation import evaluate
    from lidframe.data.scoreset import ScoreSet

    found = {row.label: ScoreSet.load(scored[row.label]["eval"]) for row in rows}
    if not any(data.n_outsider_trials for data in found.values()):
        return {}
    n_out = max(data.n_outsider_trials for data in found.values())
    run.log(f"[evaluate] the open set: {len(rows)} rows again under {OPEN_SET_PRIOR} ({n_out} outsider eval trials)")
    return {
        row.label: evaluate(scored[row.label]["dev"], found[row.label], calibrator=CALIBRATOR, prior=OPEN_SET_PRIOR)
        for row in rows
    }


def _sensitivity_rows(
    run: _DemoRun, rows: Sequence[LadderEntry], scored: Mapping[str, Mapping[str, Path]]
) -> dict[str, SensitivityResult]:
    """Each row's calibrator sensitivity (:func:`lidframe.analyses.sensitivity.sensitivity`), uniform prior.

    The calibrators are :data:`~lidframe.demo.voice.plan.SENSITIVITY_CALIBRATORS`, each fitted on the row's dev set.
    A calibrator that cannot be fitted on a row's dev set (a class of scores without spread, say) is left out of
    that row's sensitivity, and the log says which and why; a row none of them fits has no sensitivity.
    """
    from lidframe.analyses.sensitivity import sensitivity
    from lidframe.errors import InputError

    run.log(f"[sensitivity] {len(rows)} rows under {len(SENSITIVITY_CALIBRATORS)} calibrators, fitted on dev")
    found: dict[str, SensitivityResult] = {}
    for row in rows:
        dev, eval_ = scored[row.label]["dev"], scored[row.label]["eval"]
        try:
            found[row.label] = sensitivity(dev, eval_, SENSITIVITY_CALIBRATORS)
            continue
        except InputError:
            pass
        fitting = []
        for calibrator in SENSITIVITY_CALIBRATORS:
            try:
                sensitivity(dev, eval_, [calibrator])
            except InputError as exc:
                run.log(f"sensitivity {row.label}: calibrator {calibrator} left out: {exc}")
                continue
            fitting.append(calibrator)
        if fitting:
            found[row.label] = sensitivity(dev, eval_, fitting)
    return found
