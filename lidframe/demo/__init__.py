"""The demos: ``lidframe demo`` end to end, the real-voice one and the simulated one.

:mod:`lidframe.demo.voice` synthesizes speech, anonymises it, attacks it up the
threat-model ladder and measures what anonymisation costs the speech
(:func:`~lidframe.demo.voice.run_voice_demo`, where speech engines, soundfile and torch
are installed: :func:`~lidframe.demo.voice.voice_demo_unavailable`);
:mod:`lidframe.demo.simulated` evaluates five simulated systems in seconds
(:func:`~lidframe.demo.simulated.run_demo`).  Both write the same files into their output
folder (:mod:`lidframe.demo.outputs`).

The wing sits above the report, the analyses and the core, which it runs, and beside the
grid; :mod:`lidframe.cli.demo` is the command that calls it (parses, calls, prints).
"""

from lidframe.demo.outputs import PER_TRIAL_FILE, report_unavailable, write_demo_outputs
from lidframe.demo.simulated import (
    DEMO_BOOTSTRAP,
    DEMO_OPEN_SET_PRIOR,
    DEMO_OUTSIDERS,
    DEMO_SYSTEMS,
    OPEN_SET_COLUMNS,
    format_demo_table,
    run_demo,
)
from lidframe.demo.voice import run_voice_demo, voice_demo_unavailable

__all__ = [
    "DEMO_BOOTSTRAP",
    "DEMO_OPEN_SET_PRIOR",
    "DEMO_OUTSIDERS",
    "DEMO_SYSTEMS",
    "OPEN_SET_COLUMNS",
    "PER_TRIAL_FILE",
    "format_demo_table",
    "report_unavailable",
    "run_demo",
    "run_voice_demo",
    "voice_demo_unavailable",
    "write_demo_outputs",
]
