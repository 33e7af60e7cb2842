"""The simulated demo (``lidframe demo --simulated``): five simulated systems through ``evaluate``, one table.

The systems are drawn from the generative model of :mod:`lidframe.data.simulate`
(N = 29 enrolled speakers as in the VoicePrivacy LibriSpeech splits, 20 trials each):

``plain``        no anonymisation (leakage 1)
``anon-weak``    leakage 0.5
``anon-strong``  leakage 0.2
``uneven``       leakage 0.1, but the anonymiser fails (leakage 0.6) on ~10 % of speakers:
                 EER near 50 %, yet some trials disclose a bit or more
``random``       leakage 0, no speaker information at all
"""

from __future__ import annotations

from pathlib import Path

from lidframe.cli.table import format_table
from lidframe.core.evaluation import evaluate
from lidframe.data.fileio import StrPath, atomic_write, write_json
from lidframe.data.simulate import simulate_system

__all__ = ["DEMO_SYSTEMS", "run_demo"]

#: name -> keyword arguments of :func:`lidframe.data.simulate.simulate_system`.
DEMO_SYSTEMS = {
    "plain": {"leakage": 1.0},
    "anon-weak": {"leakage": 0.5},
    "anon-strong": {"leakage": 0.2},
    "uneven": {"leakage": 0.1, "leaky_share": 0.1, "leaky_leakage": 0.6},
    "random": {"leakage": 0.0},
}


def run_demo(out_dir: StrPath | None = None, *, seed: int = 0) -> tuple[str, dict]:
    """Simulate, evaluate and tabulate the demo systems.

    Parameters
    ----------
    out_dir : path, optional
        If given, writes ``<system>_dev.npz``, ``<system>_eval.npz``, ``summary.json``
        and ``table.txt`` there (each atomically).
    seed : int
        Seed of the simulation (the table is a deterministic function of it).

    Returns
    -------
    table : str
        The comparison table.
    summaries : dict
        System name -> summary dict.
    """
    rows, summaries, sets = [], {}, {}
    for offset, (name, params) in enumerate(DEMO_SYSTEMS.items()):
        dev, ev = simulate_system(seed=seed * 1000 + offset, **params)
        result = evaluate(dev, ev)
        rows.append((name, result.summary))
        summaries[name] = result.to_dict()
        sets[name] = (dev, ev)
    table = format_table(rows)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for name, (dev, ev) in sets.items():
            dev.save(out / f"{name}_dev.npz")
            ev.save(out / f"{name}_eval.npz")
        write_json(out / "summary.json", {"seed": seed, "systems": summaries})
        with atomic_write(out / "table.txt") as handle:
            handle.write(table + "\n")
    return table, summaries
