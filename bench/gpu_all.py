"""All GPU benchmarks in one run (< 5 minutes on an H200): LID core and embedding extraction.

Every figure is printed next to its anchor, measured in the same run:

LID core (d = 192, uniform prior, affine calibrator, planted true speakers)
    anchors: dense fp32 (T = N = 65,536 only), and tiled plain torch -- X E^T per tile of
    4,096 trials, then ``logsumexp`` -- in bf16 and fp32 (the anchors of issue 10);
    lidframe: the fused Triton kernel (bf16 and fp32 inputs, fp32 accumulation) on
    prepared device tensors, the whole ``lid_from_embeddings`` call from host arrays
    (closed-form z-norm included), and lidframe's tiled torch path.  Accuracy: relative
    L2 and max |delta LID| against a float64 recomputation of 2,048 rows.
Embedding extraction (ECAPA-TDNN C = 1024, random weights, 16 kHz)
    anchor: a SpeechBrain-equivalent loop, one utterance at a time in fp32 (filterbanks
    + model, as ``EncoderClassifier.encode_batch`` on a single waveform); lidframe:
    ``EcapaTdnn.embed_audio`` with length-sorted batches, device filterbanks from pinned
    memory, fp32 and bf16 autocast, with and without ``torch.compile``.  bf16 accuracy:
    cosine to the fp32 embedding of the same input.

    python bench/gpu_all.py [--out results.json]          # on the GPU machine
    python bench/gpu_all.py --small                       # CPU rehearsal, tiny sizes

With ``--small`` and no CUDA the Triton kernel runs in its interpreter (fp32 only) so the
script can be checked end to end before spending device time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

if "--small" in sys.argv and "TRITON_INTERPRET" not in os.environ:
    try:
        import torch as _probe

        if not _probe.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"  # must be set before triton is imported
    except ImportError:
        pass

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lidframe.calibrators.maps import AffineMap
from lidframe.core.engine import Engine
from lidframe.core.streaming import lid_from_embeddings

SLOPE = 3.0
LOG2E = 1.0 / math.log(2.0)
RESULTS: dict = {}


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(function, device, repeats, warmup=True):
    """(last output, [seconds]) of *repeats* calls, after one warm-up call if *warmup*."""
    out = None
    if warmup:
        out = function()
        sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = function()
        sync(device)
        times.append(time.perf_counter() - start)
    return out, times


def record(section, name, times, anchor=None, **extra):
    med = statistics.median(times)
    entry = {"median_s": med, "runs_s": times, **extra}
    if anchor is not None:
        entry["speedup_vs_anchor"] = anchor / med
    RESULTS.setdefault(section, {})[name] = entry
    ratio = f"{anchor / med:7.2f}x" if anchor is not None else f"{'anchor':>8s}"
    more = "  ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in extra.items())
    print(f"  {name:46s} {med:9.4f} s  {ratio}  {more}", flush=True)
    return med


def planted(n, dim, device, seed=0):
    gen = torch.Generator(device=device).manual_seed(seed)
    enrol = torch.randn(n, dim, device=device, generator=gen)
    true_index = torch.randint(0, n, (n,), device=device, generator=gen)
    trial = enrol[true_index] + 4.0 * torch.randn(n, dim, device=device, generator=gen)
    return trial, enrol, true_index


def prepared(trial, enrol):
    """Unit rows, closed-form z-norm folded in: (query in log2 units, centred keys), float64."""
    trial = torch.nn.functional.normalize(trial.double(), dim=1)
    enrol = torch.nn.functional.normalize(enrol.double(), dim=1)
    keys = enrol - enrol.mean(0)
    std = (((trial @ (keys.T @ keys / (enrol.shape[0] - 1))) * trial).sum(1)).sqrt()
    return trial * (SLOPE / std)[:, None], keys


def tiled_torch_anchor(query, keys, true_index, dtype, tile=4096):
    """The anchor: X E^T per tile of trials in *dtype*, then logsumexp (natural units)."""
    q, k = query.to(dtype), keys.to(dtype)
    n = keys.shape[0]
    out = torch.empty(query.shape[0], device=query.device, dtype=torch.float32)
    for start in range(0, query.shape[0], tile):
        s = (q[start : start + tile] @ k.T).float()
        mated = s.gather(1, true_index[start : start + tile, None])[:, 0]
        out[start : start + tile] = (mated - torch.logsumexp(s, 1) + math.log(n)) * LOG2E
    return out


def reference_rows(query, keys, true_index, rows):
    s = query[rows] @ keys.T  # float64
    return (s.gather(1, true_index[rows, None])[:, 0] - torch.logsumexp(s, 1) + math.log(keys.shape[0])) * LOG2E


def accuracy(lid_rows, ref):
    diff = (lid_rows.double() - ref).cpu()
    return {"rel_l2": float(diff.norm() / ref.cpu().norm()), "max_abs_bits": float(diff.abs().max())}


def bench_lid(n, device, repeats, dense=False, anchor_warmup=True):
    from lidframe.core.triton_lid import lid_lse_triton

    print(f"LID core, T = N = {n}, d = 192", flush=True)
    section = f"lid_T=N={n}"
    trial, enrol, true_index = planted(n, 192, device)
    query, keys = prepared(trial, enrol)
    rows = torch.arange(min(n, 2048), device=device)
    ref = reference_rows(query, keys, true_index, rows)
    anchors = {}
    if dense:

        def dense_fp32():
            s = query.float() @ keys.float().T
            return (s.gather(1, true_index[:, None])[:, 0] - torch.logsumexp(s, 1) + math.log(n)) * LOG2E

        out, times = timed(dense_fp32, device, repeats)
        anchors["dense_fp32"] = record(section, "anchor: dense fp32", times, **accuracy(out[rows], ref))
        del out
    for dtype, name in ((torch.bfloat16, "bf16"), (torch.float32, "fp32")):
        # at 2^20 an anchor call takes 11-16 s: no warm-up call (the smaller size warmed cuBLAS)
        out, times = timed(lambda: tiled_torch_anchor(query, keys, true_index, dtype), device, repeats, anchor_warmup)
        anchors[name] = record(
            section, f"anchor: tiled torch {name} (4096-trial tiles)", times, **accuracy(out[rows], ref)
        )
    cols = true_index.to(torch.int32)
    for dtype, name in ((torch.bfloat16, "bf16"), (torch.float32, "fp32")):
        if device.type != "cuda" and dtype == torch.bfloat16:
            continue  # the interpreter cannot load bf16
        q2, k2 = (query * LOG2E).to(dtype).contiguous(), keys.to(dtype).contiguous()
        threshold = torch.zeros(n, device=device)
        blocks = {} if device.type == "cuda" else {"block_m": 32, "block_n": 32}
        try:

            def fused():
                lse2, _max2, mated2, _ = lid_lse_triton(q2, k2, None, cols, threshold, **blocks)
                return mated2 - lse2 + math.log2(n)

            out, times = timed(fused, device, repeats)
            record(
                section,
                f"lidframe triton {name} (prepared tensors)",
                times,
                anchor=anchors[name],
                **accuracy(out[rows], ref),
            )
        except Exception as exc:  # keep the run going: the other figures are still worth having
            traceback.print_exc()
            RESULTS.setdefault(section, {})[f"lidframe triton {name}"] = {"error": repr(exc)}
    host_trial, host_enrol, host_index = (trial.cpu().numpy(), enrol.cpu().numpy(), true_index.cpu().numpy())
    log_prior = np.full(n, -math.log(n))
    kernels = (
        [("triton", "bfloat16", "bf16"), ("torch", "bfloat16", "bf16")]
        if device.type == "cuda"
        else [("torch", "bfloat16", "bf16")]
    )
    for kernel, precision, anchor_name in kernels:
        try:

            def call():
                return lid_from_embeddings(
                    host_trial,
                    host_enrol,
                    host_index,
                    AffineMap(SLOPE),
                    log_prior,
                    engine=Engine(device=str(device), kernel=kernel, precision=precision),
                ).lid_bits

            out, times = timed(call, device, max(1, repeats // 2))
            out_rows = torch.as_tensor(out[: rows.numel()], device=device)
            record(
                section,
                f"lidframe lid_from_embeddings {kernel} {precision} (host in/out)",
                times,
                anchor=anchors[anchor_name],
                **accuracy(out_rows, ref),
            )
        except Exception as exc:
            traceback.print_exc()
            RESULTS.setdefault(section, {})[f"lidframe {kernel} {precision}"] = {"error": repr(exc)}


def speechbrain_style_loop(model, fbank, waveforms, device):
    """Anchor: one utterance at a time, fp32, filterbanks on the device (as encode_batch)."""
    from lidframe.attackers.frontend import sentence_mean_norm
    from lidframe.attackers.layers import Lengths

    out = []
    with torch.inference_mode():
        for w in waveforms:
            feats = fbank(torch.from_numpy(w).to(device)[None])
            feats = sentence_mean_norm(feats)
            frames = torch.tensor([feats.shape[1]], device=device)
            out.append(model(feats, Lengths(frames, torch.ones(1, device=device), "exact"))[0, 0].float())
    return torch.stack(out)


def bench_embeddings(device, n_utts, n_anchor, seconds, compile_too):
    from lidframe.attackers import EcapaTdnn

    print(f"ECAPA-TDNN C = 1024, {seconds:g} s utterances", flush=True)
    section = "ecapa_C1024"
    rng = np.random.default_rng(0)
    samples = int(seconds * 16000)
    waveforms = [(0.1 * rng.standard_normal(samples)).astype(np.float32) for _ in range(n_utts)]
    channels = (1024, 1024, 1024, 1024, 3072)
    base = EcapaTdnn.voiceprivacy(channels=channels, device=str(device), batch_size=1)
    model = base.model
    fbank = base._fbank
    start = time.perf_counter()
    anchor_emb = speechbrain_style_loop(model, fbank, waveforms[:n_anchor], device)
    sync(device)
    start = time.perf_counter()
    anchor_emb = speechbrain_style_loop(model, fbank, waveforms[:n_anchor], device)
    sync(device)
    anchor_s = (time.perf_counter() - start) / n_anchor
    RESULTS.setdefault(section, {})["anchor: batch-1 fp32 loop"] = {"utt_per_s": 1 / anchor_s}
    print(f"  {'anchor: batch-1 fp32 loop':46s} {1 / anchor_s:9.1f} utt/s", flush=True)
    reference = None
    configs = [("fp32", 64, False), ("bf16", 64, False), ("bf16", 128, False)]
    if compile_too:
        configs += [("bf16", 64, True), ("bf16", 128, True)]
    for precision, batch, compiled in configs:
        name = f"lidframe {precision} batch {batch}{' compiled' if compiled else ''}"
        try:
            attacker = EcapaTdnn.voiceprivacy(
                channels=channels,
                device=str(device),
                batch_size=batch,
                precision=precision,
                compile=compiled,
                max_batch_frames=10**9,
            )
            attacker._model, attacker._fbank, attacker._weights_hash = model, fbank, base._weights_hash
            attacker._forward = torch.compile(model, dynamic=True) if compiled else model
            warm = time.perf_counter()
            attacker.embed_audio(waveforms[: 2 * batch])  # warm-up (and compilation)
            sync(device)
            warm = time.perf_counter() - warm
            runs = []
            for _ in range(2):
                start = time.perf_counter()
                emb = attacker.embed_audio(waveforms)
                sync(device)
                runs.append(time.perf_counter() - start)
            emb = torch.as_tensor(emb, device=device)
            if reference is None:
                reference = emb
            cos = torch.nn.functional.cosine_similarity(emb.double(), reference.double(), dim=1)
            cos_anchor = torch.nn.functional.cosine_similarity(emb[:n_anchor].double(), anchor_emb.double(), dim=1)
            rate = n_utts / statistics.median(runs)
            RESULTS[section][name] = {
                "utt_per_s": rate,
                "x_real_time": rate * seconds,
                "speedup_vs_anchor": rate * anchor_s,
                "runs_s": runs,
                "warmup_s": warm,
                "min_cos_vs_fp32_batched": float(cos.min()),
                "min_cos_vs_anchor": float(cos_anchor.min()),
            }
            print(
                f"  {name:46s} {rate:9.1f} utt/s  {rate * anchor_s:6.2f}x anchor  x{rate * seconds:.0f} real time  "
                f"min cos vs fp32 {float(cos.min()):.6f}  vs anchor {float(cos_anchor.min()):.6f}  warm-up {warm:.1f} s",
                flush=True,
            )
        except Exception as exc:
            traceback.print_exc()
            RESULTS[section][name] = {"error": repr(exc)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny sizes (CPU rehearsal)")
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "gpu_results.json"))
    parser.add_argument("--skip-embeddings", action="store_true")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    started = time.perf_counter()
    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": str(device),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
    try:
        import triton

        info["triton"] = triton.__version__
    except ImportError:
        info["triton"] = None
    RESULTS["machine"] = info
    print(json.dumps(info), flush=True)
    sizes = [(256, True, 3), (1024, False, 2)] if args.small else [(65536, True, 5), (1 << 20, False, 2)]
    for n, dense, repeats in sizes:
        try:
            bench_lid(n, device, repeats, dense=dense, anchor_warmup=dense)
            if device.type == "cuda":
                torch.cuda.empty_cache()  # the tensors of bench_lid are gone with its frame
        except Exception as exc:
            traceback.print_exc()
            RESULTS[f"lid_T=N={n}"] = {"error": repr(exc)}
    if not args.skip_embeddings:
        if args.small:
            bench_embeddings(device, n_utts=8, n_anchor=4, seconds=1.0, compile_too=False)
        else:
            bench_embeddings(device, n_utts=2048, n_anchor=200, seconds=10.0, compile_too=True)
    RESULTS["total_s"] = time.perf_counter() - started
    Path(args.out).write_text(json.dumps(RESULTS, indent=2))
    print(f"total {RESULTS['total_s']:.1f} s; results in {args.out}")


if __name__ == "__main__":
    main()
