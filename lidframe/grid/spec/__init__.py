"""Grid specs: systems x attackers x calibrators x priors x seeds, in TOML.

.. code-block:: toml

    [grid]
    calibrators = ["logistic", "isotonic"]        # component specs, NAME?key=value
    priors = ["uniform", "watchlist?ids=spk1,spk2&weight=5"]
    attackers = ["ecapa?checkpoint=ckpt/embedding_model.ckpt", "xvector",
                 "fusion?of=ecapa,xvector"]     # for data-dir systems only; a fused attacker last
    mechanisms = ["gaussian?mu=0.5", "gaussian?mu=2"]   # optional DP release of trial embeddings
    scenarios = ["ignorant", "lazy-informed", "semi-informed"]   # optional threat-model ladder (data dirs)
    seeds = [0]                                   # bootstrap seeds (one cell per seed)
    znorm_ddof = 1
    legal = true                                  # linkability and singling out in every cell (default)

    [grid.longitudinal]                           # optional: k-utterance attackers (uniform-prior cells)
    k = [1, 4, "all"]
    fusions = ["sum", "temperature"]

    [grid.bootstrap]                              # optional: bootstrap intervals per cell
    n_boot = 1000
    level = 0.95
    unit = "speaker"

    [grid.evaluate]                               # optional: how every cell measures (EvaluateOptions)
    misattribution_threshold = 0.95
    binary_metrics = "auto"
    operating_point = { p_target = 0.05, c_miss = 1.0, c_fa = 1.0 }

    [systems.plain]                               # score-set files (.npz or long .csv)
    dev = "scores/plain_dev.npz"
    eval = "scores/plain_eval.npz"

    [systems.b3]                                  # data dirs, scored by every attacker
    dev = { enrol = "data/libri_dev_enrolls_b3", trials = ["data/libri_dev_trials_f_b3", "data/libri_dev_trials_m_b3"],
            original_enrol = "data/libri_dev_enrolls" }        # the same speakers' clear speech (ignorant)
    eval = { enrol = "data/libri_test_enrolls_b3", trials = ["data/libri_test_trials_f_b3", "data/libri_test_trials_m_b3"],
             original_enrol = "data/libri_test_enrolls" }

    [systems.b3.adapted]                          # attacker name -> checkpoint adapted on b3's output (semi-informed)
    ecapa = "asv/ecapa_adapted_b3.ckpt"

A system may also name its utility, ``utility = "b3_utility.json"`` (what ``lidframe utility
--json`` writes: WER and rho_F0 of its speech, :func:`lidframe.utility.read_utility`): it is
checked when the spec is read, but it is no input of any cell (no cell is recomputed, or
stale, when it changes); ``lidframe report`` reads it again each time
(:mod:`lidframe.grid.utility`).

File paths in ``[systems]`` are relative to the spec file; paths inside component specs
(``checkpoint=``, ``file=``) are relative to the working directory.  Every error names
the TOML key at fault.  Every axis -- ``calibrators``, ``priors``, ``attackers``,
``mechanisms``, ``scenarios``, ``seeds`` and ``[grid.longitudinal]``'s ``k`` and
``fusions`` -- is a TOML list, even of one entry: a single value (``calibrators =
"logistic"``, ``seeds = 0``) is refused, naming the key and the list it should be.

``scenarios`` (:data:`lidframe.data.scenario.SCENARIOS`) applies to data-dir systems: an
``ignorant`` cell scores the anonymised trials against the split's ``original_enrol``
(required, with the speakers of ``enrol``), a ``lazy-informed`` cell against ``enrol``,
and a ``semi-informed`` cell like a lazy-informed one with each attacker that takes a
checkpoint given the system's ``[systems.NAME.adapted]`` checkpoint for it (required).
Without the axis neither is used and every cell is keyed as before it.

``fusion?of=NAME,NAME`` in ``attackers`` is no registered attacker: it fuses the
attackers of the list it names, fitted on each system's dev split
(:mod:`~lidframe.grid.spec.fusion`, :mod:`lidframe.grid.plan`).

``[grid.bootstrap]`` was called ``[grid.ci]`` before: for one release a spec with
``[grid.ci]`` is still read, with a :class:`FutureWarning` naming the new table (both
tables in one spec is an error).  The name does not identify a cell -- its
:class:`~lidframe.stats.bootstrap.Bootstrap` settings do -- so renaming the table
recomputes nothing.

Validation reads what the cells will read, so that bad input stops the grid before any
cell runs: every score-set file is loaded, every ``utility`` file read, every data directory's ``wav.scp`` and
``utt2spk`` are read (a piped ``wav.scp`` entry is refused), every component spec's
parameters are converted and checked, each calibrator is
fitted once on a small simulated dev set (a parameter it refuses at fit time, such as
``logistic?C=-1``, is found here), and each prior is applied to every system's enrolled
eval speakers (a watch-list id that is not enrolled is found here).  Fitting each
calibrator is the slow part of checking a spec of many calibrators (about 10 ms each);
a spec read only to compare a finished grid's inputs (``lidframe report``) skips it.

The package: the records (:mod:`~lidframe.grid.spec.records`: :class:`GridSpec`,
:class:`SystemSpec`, :class:`DataDirSource`); reading the TOML and its ``[grid]`` keys
(:mod:`~lidframe.grid.spec.reading`) and its ``[systems]`` tables
(:mod:`~lidframe.grid.spec.systems`); checking what the cells will read
(:mod:`~lidframe.grid.spec.checks`); and :func:`load_grid_spec`, which does both in order
(:mod:`~lidframe.grid.spec.loading`).
"""

from lidframe.grid.spec.loading import NOTE_CELLS, load_grid_spec
from lidframe.grid.spec.records import DataDirSource, GridSpec, SystemSpec
from lidframe.grid.spec.systems import spec_utility, utility_file

__all__ = ["GridSpec", "SystemSpec", "DataDirSource", "load_grid_spec", "spec_utility", "utility_file", "NOTE_CELLS"]
