"""``lidframe train-attacker``: train a speaker encoder (AAM softmax) on a data dir, the semi-informed attacker."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, cast

from lidframe.errors import InputError

if TYPE_CHECKING:
    from lidframe.attackers.neural import NeuralAttacker

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train-attacker", help="train a speaker encoder (AAM softmax) on a data dir: the semi-informed attacker"
    )
    parser.add_argument(
        "--arch",
        required=True,
        help="attacker spec of a neural encoder: ecapa or xvector (or a registered plugin), with model options: "
        "ecapa?channels=256,256,256,256,768",
    )
    parser.add_argument("--data", required=True, metavar="DIR", help="training data dir (wav.scp, utt2spk)")
    parser.add_argument(
        "--out", required=True, metavar="CKPT", help="encoder checkpoint (state dict; state in CKPT.state)"
    )
    parser.add_argument("--init", metavar="CKPT", help="fine-tune from this checkpoint")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--progress", action="store_true", help="tqdm bar with loss and accuracy")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lidframe.registry import create

    # the registry resolves the name (built-in or plugin) and its parameters, as for every
    # other command; only encoders that can build a torch model are trainable
    attacker = create("attacker", args.arch)
    if not callable(getattr(attacker, "build_model", None)):
        raise InputError(
            f"--arch {args.arch!r}: {type(attacker).__name__} has no trainable encoder (build_model); "
            "expected ecapa, xvector or a plugin subclassing lidframe.attackers.neural.NeuralAttacker"
        )
    from lidframe.attackers.training import train_attacker

    history = train_attacker(
        cast("NeuralAttacker", attacker),  # it has build_model (checked above): a NeuralAttacker's trainable encoder
        args.data,
        args.out,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        init=args.init,
        device=args.device,
        precision=args.precision,
        seed=args.seed,
        progress=args.progress,
    )
    last = history[-1] if history else None
    if last:
        print(
            f"trained {args.arch} for {last['epoch']} epochs on {args.data}: loss {last['loss']:.4f}, "
            f"accuracy {last['accuracy']:.3f}; checkpoint {args.out}"
        )
    return 0
