"""Helpers shared by the ``lidframe`` CLI commands: prior specs, output paths, output files."""

from __future__ import annotations

from pathlib import Path

from lidframe.data.fileio import write_json
from lidframe.errors import InputError

__all__ = ["parse_prior", "check_output_path", "write_outputs"]


def parse_prior(spec: str, watch_weight: float = 10.0):
    """Build a prior from a CLI spec.

    ``watchlist:FILE`` (one speaker id per line; each listed speaker gets *watch_weight*
    times the prior mass of the others) and ``explicit:FILE`` (CSV ``enroll_spk,prior``)
    are shorthands; anything else is a component spec for
    :func:`lidframe.registry.create` (``uniform``, ``watchlist?file=ids.txt&weight=5``,
    ``mypkg.priors:Mine?x=1``).
    """
    from lidframe.core.priors import Explicit, WatchList, read_id_list, read_prior_table
    from lidframe.registry import create

    kind, sep, path = spec.partition(":")
    if kind == "watchlist" and sep and path:
        return WatchList(read_id_list(path), watch_weight)
    if kind == "explicit" and sep and path:
        return Explicit(read_prior_table(path))
    return create("prior", spec)


def check_output_path(path, flag: str):
    if path is None:
        return None
    path = Path(path)
    if not path.parent.is_dir():
        raise InputError(f"{flag} {path}: folder {path.parent} does not exist")
    return path


def write_outputs(result, json_out, plot_out, plot, what: str) -> None:
    """Write the result's JSON record and its plot, where asked for (each atomically)."""
    if json_out is not None:
        write_json(json_out, result.to_dict())
    if plot_out is not None:
        plot(result, plot_out)
        print(f"\nwrote {what} to {plot_out}")
