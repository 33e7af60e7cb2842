"""``lidframe plugins``: list the registered attackers, calibrators and priors, and check their contracts."""

from __future__ import annotations

import argparse

from lidframe.registry import KINDS
from lidframe.report.text import text_table

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("plugins", help="list registered attackers, calibrators and priors")
    parser.add_argument("--kind", choices=KINDS, help="only this kind")
    parser.add_argument(
        "--check", action="store_true", help="import each component and check its contract (exit 1 if any fails)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lidframe import registry
    from lidframe.attackers import TORCH_INSTALL_HINT

    kinds = KINDS if args.kind is None else (args.kind,)
    status = registry.check_all(args.kind) if args.check else {}
    # a built-in that needs an optional dependency this installation lacks (the neural
    # attackers without torch) is not broken: it is listed as such and does not fail the check
    unavailable = {
        key
        for key, error in status.items()
        if error is not None and TORCH_INSTALL_HINT in error and registry.entries(key[0])[key[1]].origin == "built-in"
    }
    header = ["kind", "name", "target", "origin"] + (["status"] if args.check else [])
    body = []
    for kind in kinds:
        for name, entry in registry.entries(kind).items():
            row = [kind, name, entry.target, entry.origin]
            if args.check:
                if (kind, name) in unavailable:
                    row.append("needs torch (not installed)")
                else:
                    row.append("ok" if status.get((kind, name)) is None else "BROKEN (see warning)")
            body.append(row)
    print(text_table(header, body, align="l" * len(header)))  # names and targets read left to right
    return 1 if any(v is not None and key not in unavailable for key, v in status.items()) else 0
