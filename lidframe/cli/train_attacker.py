"""``lidframe train-attacker``: train a speaker encoder (AAM softmax) on a data dir, the semi-informed attacker."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, cast

from lidframe.cli.options import CheckedFlag, add_wav_paths_argument, non_negative_int, positive_int, positive_number
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
        help="attacker spec of a neural encoder: ecapa, xvector or ge2e (or a registered plugin), with model options: "
        "ecapa?channels=256,256,256,256,768 (default: the attacker --init names)",
    )
    parser.add_argument("--data", required=True, metavar="DIR", help="training data dir (wav.scp, utt2spk)")
    add_wav_paths_argument(parser)
    parser.add_argument(
        "--out", required=True, metavar="CKPT", help="encoder checkpoint (state dict; state in CKPT.state)"
    )
    parser.add_argument(
        "--init",
        metavar="CKPT|NAME",
        help="fine-tune from this checkpoint (for ecapa/xvector a SpeechBrain embedding_model.ckpt), or from the "
        "pretrained weights of the attacker NAME (ge2e: Resemblyzer's, pip install -e '.[pretrained]')",
    )
    parser.add_argument(
        "--layers",
        choices=("all", "output"),
        default="all",
        help="train every layer (default), or only the output layer of a pretrained encoder on frozen states "
        "(ge2e; seconds on a CPU; no .state file)",
    )
    parser.add_argument(
        "--epochs",
        type=int,
        action=CheckedFlag,
        check=positive_int,
        help="epochs (default 10); with --layers output: full-batch steps (default 200)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        action=CheckedFlag,
        check=positive_int,
        help="utterances (one chunk each) per step (default 16); with --layers output: windows per forward pass of "
        "the frozen layers (default 64)",
    )
    parser.add_argument(
        "--lr",
        type=float,
        action=CheckedFlag,
        check=positive_number,
        default=1e-3,
        help="Adam learning rate (default 1e-3; fine-tuning: try 1e-4)",
    )
    parser.add_argument("--device", default="auto", help="auto (CUDA when available, default), cpu, cuda, cuda:1")
    parser.add_argument(
        "--precision", choices=("fp32", "bf16"), default="fp32", help="training precision (default fp32)"
    )
    parser.add_argument(
        "--seed", type=int, action=CheckedFlag, check=non_negative_int, default=0, help="random seed (default 0)"
    )
    parser.add_argument("--progress", action="store_true", help="tqdm bar with loss and accuracy")
    parser.set_defaults(run=run)


def _check_outputs(args: argparse.Namespace, init: str | None) -> dict[str, str]:
    """The checkpoint (and its ``.state`` file) checked before any work: writable, and not on an input.

    As for every command: its folder must exist, and neither file may be the data dir's
    ``wav.scp`` or an audio file it lists, lie inside the data dir, or be the *init*
    checkpoint (:func:`lidframe.data.runpaths.check_outputs`).
    """
    from lidframe.data.runpaths import check_outputs

    outputs = {"--out": args.out}
    if args.layers == "all":  # the training state goes beside the checkpoint
        outputs["--out (its training state)"] = f"{args.out}.state"
    check_outputs(outputs, inputs=[args.data, init])
    return outputs


def run(args: argparse.Namespace) -> int:
    from lidframe import registry
    from lidframe.data.runpaths import refuse_outputs_on_inputs
    from lidframe.registry.capabilities import capabilities_of

    outputs = _check_outputs(args, args.init if args.init is not None and Path(args.init).exists() else None)
    # --init NAME: the pretrained weights of attacker NAME, which is also the default --arch
    pretrained = args.init is not None and not Path(args.init).exists() and args.init in registry.attackers()
    arch = args.arch or (args.init if pretrained else None)
    if arch is None:
        raise InputError("--arch is required (or --init NAME of an attacker with pretrained weights, e.g. --init ge2e)")
    # the registry resolves the name (built-in or plugin) and its parameters, as for every
    # other command; only encoders that can build a torch model are trainable
    attacker = registry.create("attacker", arch)
    if capabilities_of("attacker", attacker).build_model is None:
        raise InputError(
            f"--arch {arch!r}: {type(attacker).__name__} has no trainable encoder (build_model); "
            "expected ecapa, xvector, ge2e or a plugin subclassing lidframe.attackers.neural.NeuralAttacker"
        )
    encoder = cast("NeuralAttacker", attacker)  # it has build_model (checked above): a trainable encoder
    init = args.init
    if pretrained:
        if arch.partition("?")[0] != args.init:
            raise InputError(f"--init {args.init}: the pretrained weights of {args.init!r} do not fit --arch {arch!r}")
        weights = encoder.default_weights()
        if weights is None:
            raise InputError(
                f"--init {args.init}: the {args.init} attacker has no pretrained weights here; give a checkpoint file "
                "(for ecapa or xvector, a SpeechBrain embedding_model.ckpt)"
            )
        init = str(weights)
        refuse_outputs_on_inputs(outputs, inputs=[init])  # the pretrained weights are an input too
    if args.layers == "output":
        from lidframe.attackers.training import train_output_layer

        if args.precision != "fp32" or args.progress:
            raise InputError(
                "--precision and --progress apply to --layers all; --layers output runs in fp32 in seconds"
            )
        history = train_output_layer(
            encoder,
            args.data,
            args.out,
            epochs=args.epochs or 200,
            lr=args.lr,
            init=init,
            batch_size=args.batch_size or 64,
            device=args.device,
            seed=args.seed,
            log=lambda m: None,
            wav_paths=args.wav_paths,
        )
    else:
        from lidframe.attackers.training import train_attacker

        history = train_attacker(
            encoder,
            args.data,
            args.out,
            epochs=args.epochs or 10,
            batch_size=args.batch_size or 16,
            lr=args.lr,
            init=init,
            device=args.device,
            precision=args.precision,
            seed=args.seed,
            progress=args.progress,
            wav_paths=args.wav_paths,
        )
    last = history[-1] if history else None
    if last:
        print(
            f"trained {'the output layer of ' if args.layers == 'output' else ''}{arch}"
            f"{f' from {args.init}' if args.init else ''} for {last['epoch']} {'steps' if args.layers == 'output' else 'epochs'} on {args.data}: loss {last['loss']:.4f}, "
            f"accuracy {last['accuracy']:.3f}; checkpoint {args.out}"
        )
    return 0
