"""What the real-voice demo prints and writes: the comparison table, the ladder, the utility table, the files.

:func:`demo_text` is the printed text (also ``table.txt``); :func:`_write_outputs` writes
it with ``summary.json``, ``per_trial.csv`` and ``report.html``
(:func:`lidframe.demo.outputs.write_demo_outputs`, the simulated demo's layout) and the
LID CCDF plot ``lid_ccdf.png``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from lidframe.data.fileio import StrPath
from lidframe.demo.voice.plan import (
    CALIBRATOR,
    GE2E_ADAPTATION,
    OPEN_SET_PRIOR,
    SENSITIVITY_CALIBRATORS,
    SMALL_ECAPA,
    STRONGER_RUNG,
    VOICE_DEMO_SYSTEMS,
    _DemoRun,
)
from lidframe.demo.voice.stronger import STRONGER_ATTACKERS, stronger_table
from lidframe.demo.voice.utility import utility_table
from lidframe.report.text import format_table

if TYPE_CHECKING:
    from lidframe.analyses.legal_criteria import LegalCriteria
    from lidframe.analyses.sensitivity import SensitivityResult
    from lidframe.core.result import Result
    from lidframe.report.sections.ladder_model import LadderEntry
    from lidframe.utility import Utility

__all__ = ["demo_text", "ladder_table"]


def demo_text(
    rows: Sequence[LadderEntry],
    results: Mapping[str, Result],
    utilities: Mapping[str, Utility],
    utility_note: str,
    *,
    open_set: Mapping[str, Result] | None = None,
    stronger: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """The printed text of the demo: the comparison table, the ladder (:func:`ladder_table`), the utility table.

    Where the utility column is left out (*utilities* empty), *utility_note* says why in its place.  Given
    *open_set* (row label -> its open-set Result), the table ends with the simulated demo's open-set
    columns (:data:`lidframe.demo.simulated.OPEN_SET_COLUMNS`).  *stronger*
    (:func:`~lidframe.demo.voice.stronger.stronger_comparison`), where it has a system, adds its
    table (:func:`~lidframe.demo.voice.stronger.stronger_table`) after the ladder.
    """
    name_header = "system/attacker/scenario"
    if open_set:
        from lidframe.demo.simulated import format_demo_table

        table = format_demo_table(
            {row.label: results[row.label].summary for row in rows},
            {row.label: open_set[row.label].summary for row in rows},
            name_header=name_header,
        )
    else:
        table = format_table([(row.label, results[row.label].summary) for row in rows], name_header=name_header)
    text = table + "\n\n" + ladder_table(rows, results) + "\n\n"
    if stronger:
        text += stronger_table(stronger) + "\n\n"
    text += utility_table(utilities, utility_note) if utilities else utility_note
    return text


def ladder_table(rows: Sequence[LadderEntry], results: Mapping[str, Result]) -> str:
    """The threat-model ladder as text: per anonymised system, ALID [interval] and LIDmax of the GE2E rungs.

    Columns: the system, then per rung of :data:`lidframe.data.scenario.SCENARIOS` its
    ALID with the speaker-bootstrap interval and its LIDmax; the plain speech's GE2E ALID
    is the first line (nothing anonymised), then the small ECAPA's semi-informed ALID and the
    stronger attackers' (:mod:`lidframe.demo.voice.stronger`: GE2E with AS-norm, the fusion).
    """
    from lidframe.data.scenario import SCENARIOS
    from lidframe.report.text import text_table

    def alid(label: str) -> str:
        result = results.get(label)
        if result is None:
            return "-"
        summary = result.summary
        interval = (summary.intervals or {}).get("alid")
        text = f"{summary.alid:.2f}"
        if interval is not None:
            text += f" [{interval.low:.2f}, {interval.high:.2f}]"
        return f"{text} / {summary.lid_max:.2f}"

    stronger = [f"{attacker}/{STRONGER_RUNG}" for attacker in STRONGER_ATTACKERS]
    header = ["system", *SCENARIOS, "ecapa semi-informed", *(name.replace("/", " ") for name in stronger)]
    body = []
    for system in dict.fromkeys(row.system for row in rows if row.system != "random"):
        if VOICE_DEMO_SYSTEMS[system] is None:
            plain = [f"{system} (nothing anonymised)", alid(f"{system}/ge2e"), "", "", alid(f"{system}/ecapa")]
            body.append(plain + [""] * len(stronger))
            continue
        cells = [alid(f"{system}/ge2e/{rung}") for rung in SCENARIOS]
        cells += [alid(f"{system}/ecapa/semi-informed"), *(alid(f"{system}/{name}") for name in stronger)]
        body.append([system, *cells])
    return "ALID [95 % speaker-bootstrap interval] / LIDmax, bits, by rung of the ladder\n" + text_table(header, body)


def _write_outputs(
    run: _DemoRun,
    rows: Sequence[LadderEntry],
    results: dict[str, Result],
    *,
    table: str,
    corpus: dict[str, Any],
    sentences: int,
    scored: Mapping[str, Mapping[str, Path]],
    n_boot: int,
    utilities: Mapping[str, Utility],
    utility_note: str,
    stronger: Mapping[str, Any] | None = None,
    open_set: Mapping[str, Result] | None = None,
    sensitivity: Mapping[str, SensitivityResult] | None = None,
    legal: Mapping[str, LegalCriteria] | None = None,
) -> None:
    """Write ``summary.json``, ``table.txt``, ``per_trial.csv``, ``report.html`` and ``lid_ccdf.png`` into the folder.

    *table* is the printed text (the comparison table, the ladder, the utility table);
    *scored* the score files (row label -> split -> path; each holds its provenance, which
    the page and ``summary.json`` carry) and *utilities* the utility column (system ->
    record; empty when left out, and then *utility_note* says why, among the report's
    notes): their files are the report's inputs.  *open_set* (row label -> its open-set
    Result, empty without outsiders) goes to the page's section "Open set" and
    ``summary.json``'s ``open_set``; *sensitivity* (row label -> its calibrator
    sensitivity) to each row's subsection and ``summary.json``'s ``sensitivity``; *legal* (row
    label -> its legal criteria) to the section "Singling out, linkability, inference" and
    each row's ``legal`` block in ``summary.json``.
    """
    from lidframe.data.provenance import ScoreFile
    from lidframe.demo.outputs import write_demo_outputs

    inputs: dict[str, StrPath] = {
        f"{label} {split}": path for label, paths in scored.items() for split, path in paths.items()
    }
    inputs.update({f"utility {name}": run.out / "utility" / f"{name}.json" for name in utilities})
    systems = {row.label: row.system for row in rows}
    run.log(f"[report] writing summary.json, table.txt, per_trial.csv, report.html and lid_ccdf.png to {run.out}")
    write_demo_outputs(
        run.out,
        results,
        table=table,
        record=_summary_record(run, rows, corpus=corpus, sentences=sentences, n_boot=n_boot, open_set=open_set)
        | _stronger_record(stronger),
        inputs=inputs,
        title="lidframe demo: real synthesized voices, the threat-model ladder",
        notes=_report_notes(run, corpus, n_boot=n_boot, utility_note=None if utilities else utility_note),
        settings=_report_settings(
            run, sentences=sentences, n_boot=n_boot, utility_note=utility_note if utilities else None
        ),
        systems=systems,
        ladder=list(rows),
        log=run.log,
        attackers=run.attackers,
        engines={engine: corpus["versions"].get(engine, "") for engine in corpus["engines"]},
        # the report places a system's utility beside its rows: a system without rows (plain without GE2E) is
        # left out of the report and summary.json, not of the printed table
        utility={name: u for name, u in utilities.items() if name in systems.values()} or None,
        utility_note=utility_note if utilities else None,
        score_files=[
            ScoreFile.of(f"{label} {split}", path) for label, paths in scored.items() for split, path in paths.items()
        ],
        open_set=open_set or None,
        sensitivity=sensitivity,
        legal=legal,
    )
    _save_lid_ccdf(run, rows, results, systems)


def _summary_record(
    run: _DemoRun,
    rows: Sequence[LadderEntry],
    *,
    corpus: Mapping[str, Any],
    sentences: int,
    n_boot: int,
    open_set: Mapping[str, Result] | None = None,
) -> dict[str, Any]:
    """What ``summary.json`` holds beside the rows' results: the run's settings, the corpus, the rungs and the rows.

    With *open_set*, its ``open_set`` as the simulated demo writes it: the ``prior`` and, per row label, the
    open-set ``Result.to_dict()``.
    """
    from lidframe.data.scenario import SCENARIOS

    extra = {}
    if open_set:
        extra["open_set"] = {"prior": OPEN_SET_PRIOR, "systems": {k: r.to_dict() for k, r in open_set.items()}}
    return {
        **extra,
        "seed": run.seed,
        "epochs": run.epochs,
        "sentences": sentences,
        "calibrator": CALIBRATOR,
        "bootstrap": {"n_boot": n_boot, "unit": "speaker", "level": 0.95},
        "corpus": {k: corpus[k] for k in ("speakers", "outsiders", "engines", "utterances")},
        "scenarios": {name: attrs.asdict(rung) for name, rung in SCENARIOS.items()},
        "rows": {row.label: attrs.asdict(row) for row in rows},
    }


def _stronger_record(stronger: Mapping[str, Any] | None) -> dict[str, Any]:
    """``summary.json``'s ``stronger_attackers`` block (:func:`~lidframe.demo.voice.stronger.stronger_comparison`; NaN
    as null), where there is one."""
    from lidframe.data.fileio import json_clean

    return {"stronger_attackers": json_clean(dict(stronger))} if stronger else {}


def _report_notes(run: _DemoRun, corpus: Mapping[str, Any], *, n_boot: int, utility_note: str | None) -> list[str]:
    """The sentences under the report's title: the corpus, the systems and attackers, each rung, and *utility_note*.

    *utility_note* is given where the utility column is left out (it says why); None where it was measured.
    """
    from lidframe.data.scenario import SCENARIOS

    sizes = {k: len(v) for k, v in corpus["speakers"].items()}
    n_out = {k: len(v) for k, v in corpus["outsiders"].items()}
    outsiders = ""
    if sum(n_out.values()):
        outsiders = (
            f" and {sum(n_out.values())} outsiders ({n_out['dev']} dev, {n_out['eval']} eval; trials only: Open set, "
            f"prior {OPEN_SET_PRIOR})"
        )
    # one paragraph, the rungs' definitions follow it: the page's summary prints on two A4 pages (issue 41)
    return [
        f"{corpus['utterances']} synthesized utterances of {sum(sizes.values())} voices (train {sizes['train']}, "
        f"dev {sizes['dev']}, eval {sizes['eval']}){outsiders}. Systems {', '.join(VOICE_DEMO_SYSTEMS)} (-spk: the "
        "anonymiser's parameter drawn per speaker, else per utterance), each attacked up the ladder by GE2E and, "
        f"semi-informed, by a small ECAPA-TDNN trained {run.epochs} epochs per system here, their fusion and GE2E "
        f"with AS-norm; {CALIBRATOR} calibration on dev, {n_boot} speaker-bootstrap resamples; a random attacker is "
        "the floor (docs/demo.md).",
        "The rungs (enrolment-trials speech, o original, a anonymised; the attacker's model): "
        + "; ".join(f"{rung.name} ({rung.code}, model {rung.model})" for rung in SCENARIOS.values())
        + ".",
        *([] if utility_note is None else [utility_note]),
    ]


def _report_settings(run: _DemoRun, *, sentences: int, n_boot: int, utility_note: str | None) -> dict[str, Any]:
    """The report's table of settings; its last row *utility_note* where the utility column was measured."""
    return {
        "seed": run.seed,
        "epochs (small ECAPA)": run.epochs,
        "GE2E adaptation": "output layer, " + ", ".join(f"{k} {v}" for k, v in GE2E_ADAPTATION.items()),
        "sentences per voice": sentences,
        "small ECAPA": ", ".join(f"{k}={v}" for k, v in SMALL_ECAPA.items()),
        "calibrator": CALIBRATOR,
        "prior": "uniform",
        "open set (section Open set)": OPEN_SET_PRIOR,
        "calibrator sensitivity": ", ".join(SENSITIVITY_CALIBRATORS),
        "bootstrap": f"{n_boot} resamples of speakers, 95 %",
        **({} if utility_note is None else {"utility": utility_note}),
    }


def _save_lid_ccdf(
    run: _DemoRun, rows: Sequence[LadderEntry], results: Mapping[str, Result], systems: Mapping[str, str]
) -> None:
    """Save ``lid_ccdf.png``: each row's LID CCDF over its enrolled eval trials, coloured by system."""
    from lidframe.report.lid_figures import save_lid_ccdf

    first = next(iter(results.values()))
    save_lid_ccdf(
        {label: r.lid[~r.is_outsider] for label, r in results.items()},
        run.out / "lid_ccdf.png",
        log2_n=first.summary.log2_n,
        title="Real-voice demo: LID per system, attacker and rung",
        groups=systems,
        variants={row.label: row.label.partition("/")[2] or row.label for row in rows},
    )
