"""``dp_vs_mu.png`` of a grid with mechanisms: one colour per system and attacker in both panels; the MI bound on ALID.

Before, the EER panel coloured a system by its attacker's line and the ALID panel gave its
ALID and its LIDmax two other colours, so one system read as three; and the legend called
the bound "MI bound" without saying that it bounds ALID, not LIDmax.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lidframe.grid.report import write_report
from lidframe.grid.runner import run_grid

pytest.importorskip("matplotlib")


def _mechanism_grid(folder: Path) -> Path:
    """Two data-dir systems of precomputed embeddings, each released at three mu."""
    rng = np.random.default_rng(5)
    ids, vectors = [], []
    systems = []
    for system, spread in (("near", 0.3), ("far", 0.6)):
        for split in ("dev", "eval"):
            identity = rng.normal(size=(12, 16))
            for kind, per in (("enrolls", 3), ("trials", 6)):
                d = folder / f"{system}_{split}_{kind}"
                d.mkdir(parents=True)
                lines, spk = [], []
                for s in range(12):
                    for k in range(per):
                        utt = f"{system}-{split}-{kind}-{s}-{k}"
                        ids.append(utt)
                        vectors.append(identity[s] + spread * rng.normal(size=16))
                        lines.append(f"{utt} none.wav\n")
                        spk.append(f"{utt} {system}{split}spk{s}\n")
                (d / "wav.scp").write_text("".join(lines))
                (d / "utt2spk").write_text("".join(spk))
        systems.append(
            f'[systems.{system}]\ndev = {{ enrol = "{system}_dev_enrolls", trials = ["{system}_dev_trials"] }}\n'
            f'eval = {{ enrol = "{system}_eval_enrolls", trials = ["{system}_eval_trials"] }}\n'
        )
    np.savez(folder / "emb.npz", utt_ids=np.array(ids), vectors=np.array(vectors))
    (folder / "grid.toml").write_text(
        '[grid]\ncalibrators = ["logistic"]\n'
        f'attackers = ["precomputed?path={folder / "emb.npz"}"]\n'
        'mechanisms = ["gaussian?mu=0.5&seed=1", "gaussian?mu=2&seed=1", "gaussian?mu=8&seed=1"]\n\n'
        + "\n".join(systems)
    )
    return folder / "grid.toml"


@pytest.mark.slow
def test_each_system_keeps_one_colour_in_both_panels(tmp_path, monkeypatch):
    from matplotlib.colors import to_hex

    import lidframe.report.plotting as plotting
    from lidframe.report.analysis_figures import MI_BOUND_LABEL

    spec = _mechanism_grid(tmp_path / "spec")
    run_grid(spec, tmp_path / "out")
    kept = {}
    real = plotting.save_figure

    def keep(fig, path):
        kept[Path(path).name] = fig
        real(fig, path)

    monkeypatch.setattr(plotting, "save_figure", keep)
    write_report(tmp_path / "out", figures=True)
    fig = kept["dp_vs_mu.png"]
    left, right = fig.axes
    colours: dict[str, set[str]] = {}
    for ax in (left, right):
        for line in ax.get_lines():
            label = line.get_label()
            if label.startswith(("near", "far")):
                system = label.split(" / ")[0]
                colours.setdefault(system, set()).add(to_hex(line.get_color()))
    assert set(colours) == {"near", "far"}
    assert all(len(c) == 1 for c in colours.values()), colours  # EER, ALID and LIDmax of a system: one colour
    assert colours["near"] != colours["far"]
    labels = [line.get_label() for line in right.get_lines()]
    assert MI_BOUND_LABEL in labels and "bounds ALID, not LIDmax" in MI_BOUND_LABEL
