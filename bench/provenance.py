"""Where a benchmark ran: lidframe version, the git commit (and whether the tree had changes), the machine.

Every row of ``bench/RESULTS.md`` names the commit it was measured on; the scripts print
this header so that the number and its commit travel together.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def git_commit() -> str:
    """``abc1234`` (``abc1234+changes`` when the working tree differs from it), or ``unknown``."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{commit}+changes" if dirty else commit


def header(title: str) -> str:
    """Two lines: the benchmark and commit, then the machine."""
    from lidframe import __version__

    machine = (
        f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} CPUs, "
        f"python {platform.python_version()}, numpy {np.__version__}"
    )
    return f"{title}\nlidframe {__version__}, commit {git_commit()}\n{machine}"
