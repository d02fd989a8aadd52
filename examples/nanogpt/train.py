#!/usr/bin/env python3
"""Trains the GPT of model.py and prints, every --log-every steps, the
training loss, the validation loss (every --eval-every steps) and the
tokens per second of the interval; writes OUT/log.json and the loss curve
OUT/loss.csv (+ OUT/loss.png with matplotlib).

    python3 examples/nanogpt/train.py --preset char --kernels tkc --steps 1000 --out build/nanogpt/run
    torchrun --nproc-per-node=2 examples/nanogpt/train.py ...   # DistributedDataParallel, batch split by rank
    python3 examples/nanogpt/train.py --preset gpt2 --bench       # tokens/s of tkc, torch, torch.compile

Data: the char preset reads build/nanogpt/{meta.json,train.bin,val.bin}
(prepare.py); the gpt2 preset trains on random tokens by default (for its
speed: the work per step does not depend on the data) or, with --data char,
on the characters, whose ids are already valid in its vocabulary.
"""

import argparse
import contextlib
import json
import math
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data import DEFAULT_DATA, Batches, load_meta, load_split, random_stream  # noqa: E402
from model import GPT, PRESETS, config_for  # noqa: E402
from plot import write_curves  # noqa: E402

# Per preset: batch, learning rate, Adam's beta2.
DEFAULTS = {"char": (64, 1e-3, 0.99), "gpt2": (16, 6e-4, 0.95)}


def build_parser():
    ap = argparse.ArgumentParser(description="Train a small GPT with tkc or PyTorch kernels.")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="char")
    ap.add_argument("--kernels", choices=["tkc", "torch"], default="torch")
    ap.add_argument("--compile", action="store_true", help="torch.compile(fullgraph=True) the model")
    ap.add_argument("--compile-mode", choices=["default", "reduce-overhead"], default="default",
                    help="torch.compile's mode; reduce-overhead replays each step's kernels as CUDA graphs")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, help="global batch in sequences (split over the processes)")
    ap.add_argument("--lr", type=float)
    ap.add_argument("--warmup", type=int, help="linear warm-up steps (default: steps/10, at most 100)")
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--data", choices=["char", "random"], help="default: char for char, random for gpt2")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--eval-batches", type=int, default=20)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--device", help="default: cuda if available, else cpu")
    ap.add_argument("--out", type=Path, default=DEFAULT_DATA / "run")
    ap.add_argument("--quiet", action="store_true")
    # Smaller models for CPU tests and quick looks.
    ap.add_argument("--n-layer", type=int)
    ap.add_argument("--n-head", type=int)
    ap.add_argument("--block-size", type=int)
    ap.add_argument("--bench", action="store_true", help="tokens/s of the variants and a per-op breakdown")
    ap.add_argument("--bench-variants", default="tkc,torch,tkc-compile,torch-compile")
    ap.add_argument("--bench-warmup", type=int, default=10)
    ap.add_argument("--bench-window", type=int, default=10, help="steps per timed window")
    ap.add_argument("--bench-rounds", type=int, default=6)
    ap.add_argument("--bench-settle", type=int, default=1,
                    help="untimed steps before each window, after the allocator's cache is emptied, so that a "
                         "variant's window does not pay for memory the other variants' windows left cached")
    ap.add_argument("--no-bench-breakdown", dest="bench_breakdown", action="store_false",
                    help="leave out the per-operator GPU time (a profiled window of each variant)")
    return ap


# --- processes and devices -----------------------------------------------------------


class Dist:
    """This process's rank among those torchrun started (or the only one)."""

    def __init__(self, device_arg):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        local = int(os.environ.get("LOCAL_RANK", "0"))
        cuda = torch.cuda.is_available() if device_arg is None else device_arg.startswith("cuda")
        if cuda:
            self.device = torch.device("cuda", local if self.world > 1 else torch.cuda.current_device())
            torch.cuda.set_device(self.device)  # tkc launches on this device's current stream
        else:
            self.device = torch.device("cpu")
        if self.world > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if cuda else "gloo")

    def mean(self, t):
        if self.world > 1:
            dist.all_reduce(t)
            t /= self.world
        return t

    def gather(self, t):
        """The values of t on every rank, in rank order."""
        if self.world == 1:
            return [t]
        out = [torch.empty_like(t) for _ in range(self.world)]
        dist.all_gather(out, t)
        return out

    @staticmethod
    def sync_device(device):
        """A function that waits for the device's work."""
        return (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)

    def sync(self):
        Dist.sync_device(self.device)()


def autocast(device, kernels):
    """bf16 autocast on the GPU. On the CPU f32, where bf16 matmuls are
    slow, except around bf16-only kernels (a stand-in tkc.ops in tests)."""
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    if kernels == "tkc":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


# --- setup ---------------------------------------------------------------------------


def data_kind(args):
    return args.data or ("char" if args.preset == "char" else "random")


def make_model(args, kernels, device, vocab):
    cfg = config_for(args.preset, vocab_size=vocab, n_layer=args.n_layer, n_head=args.n_head,
                     n_embd=None if args.n_head is None else args.n_head * 64, block_size=args.block_size)
    torch.manual_seed(args.seed)  # the same initial weights for every variant and rank
    return GPT(cfg, kernels).to(device)


def make_optimizer(model, args, device):
    _, lr, beta2 = DEFAULTS[args.preset]
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": args.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    extra = {}
    if device.type == "cuda" and "fused" in torch.optim.AdamW.__init__.__code__.co_varnames:
        extra["fused"] = True
    return torch.optim.AdamW(groups, lr=args.lr or lr, betas=(0.9, beta2), **extra)


def lr_at(step, args):
    base = args.lr or DEFAULTS[args.preset][1]
    warmup = args.warmup if args.warmup is not None else min(100, args.steps // 10)
    if step < warmup:
        return base * (step + 1) / warmup
    progress = (step - warmup) / max(1, args.steps - warmup)
    return base * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def make_streams(args, device, seed):
    """(train stream, val stream, vocabulary size or None for the preset's)."""
    if data_kind(args) == "random":
        vocab = PRESETS[args.preset].vocab_size
        return random_stream(vocab, 1 << 22, seed, device), random_stream(vocab, 1 << 20, seed + 1, device), None
    meta = load_meta(args.data_dir)
    vocab = meta["vocab_size"] if args.preset == "char" else None
    return load_split(args.data_dir, "train", device), load_split(args.data_dir, "val", device), vocab


def wrap(model, args, d):
    """The callable a step runs: torch.compile of the model, then DDP around
    it. Dynamo's DDP optimizer is off: it splits the graph at DDP's gradient
    buckets (for overlap), which fullgraph=True refuses."""
    fwd = model
    if args.compile:
        if not hasattr(torch, "compile"):
            raise SystemExit(f"--compile needs torch 2 (this is {torch.__version__})")
        if d.world > 1:
            torch._dynamo.config.optimize_ddp = False
        fwd = torch.compile(fwd, fullgraph=True, mode=args.compile_mode)
        if args.compile_mode == "reduce-overhead":
            fwd = _graph_steps(fwd)
    if d.world > 1:
        from torch.nn.parallel import DistributedDataParallel
        fwd = DistributedDataParallel(fwd, device_ids=[d.device.index] if d.device.type == "cuda" else None)
    return fwd


def _graph_steps(compiled):
    """The compiled model, telling the CUDA graphs that each call starts a
    new step (whose replay may reuse the previous step's output memory)."""
    def fwd(*args):
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(*args)
    return fwd


def train_step(fwd, model, opt, x, y, lr, device):
    for g in opt.param_groups:
        g["lr"] = lr
    with autocast(device, model.kernels.name):
        loss = fwd(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.detach()


@torch.no_grad()
def evaluate(fwd, kernels, batches, n, d):
    batches.reset()  # the same validation windows at every evaluation
    total = torch.zeros((), device=d.device)
    for _ in range(n):
        x, y = batches.next()
        with autocast(d.device, kernels):
            total += fwd(x, y).float()
    return d.mean(total / n).item()


# --- training ------------------------------------------------------------------------


def train(args):
    """Trains and returns the log (also written to OUT/log.json by rank 0)."""
    d = Dist(args.device)
    batch = args.batch or DEFAULTS[args.preset][0]
    train_stream, val_stream, vocab = make_streams(args, d.device, args.seed)
    model = make_model(args, args.kernels, d.device, vocab)
    cfg = model.cfg
    opt = make_optimizer(model, args, d.device)
    fwd = wrap(model, args, d)
    train_batches = Batches(train_stream, batch, cfg.block_size, args.seed, d.rank, d.world)
    val_batches = Batches(val_stream, batch, cfg.block_size, args.seed + 1, d.rank, d.world)
    say = print if d.rank == 0 and not args.quiet else (lambda *a, **k: None)
    say(f"{args.kernels} kernels{' (compiled)' if args.compile else ''}, {cfg}, {model.num_parameters() / 1e6:.2f}M "
        f"parameters, batch {batch} x {cfg.block_size} over {d.world} process(es) on {d.device}")

    log = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}, "config": vars(cfg),
           "parameters": model.num_parameters(), "batch": batch, "world": d.world, "device": str(d.device),
           "device_name": torch.cuda.get_device_name(d.device) if d.device.type == "cuda" else "cpu",
           "torch": torch.__version__, "steps": [], "evals": [], "intervals": []}
    pending = []
    d.sync()
    t0, first = time.perf_counter(), 0
    for step in range(args.steps):
        x, y = train_batches.next()
        pending.append(train_step(fwd, model, opt, x, y, lr_at(step, args), d.device))
        last = step == args.steps - 1
        if (step + 1) % args.log_every and not last:
            continue
        if first == 0:  # each rank's own loss on its rows of the first batch
            log["first_step_rank_losses"] = [v.item() for v in d.gather(pending[0].float())]
        losses = d.mean(torch.stack(pending).float()).tolist()
        d.sync()
        dt = time.perf_counter() - t0
        n = step + 1 - first
        log["steps"] += [{"step": first + i + 1, "loss": v} for i, v in enumerate(losses)]
        interval = {"step": step + 1, "tokens_per_s": n * batch * cfg.block_size / dt, "ms_per_step": 1e3 * dt / n}
        log["intervals"].append(interval)
        line = f"step {step + 1:5d} | loss {losses[-1]:.4f}"
        if (step + 1) % args.eval_every == 0 or last:
            val = evaluate(fwd, args.kernels, val_batches, args.eval_batches, d)
            log["evals"].append({"step": step + 1, "val_loss": val})
            line += f" | val {val:.4f}"
        say(f"{line} | {interval['tokens_per_s']:,.0f} tok/s | {interval['ms_per_step']:.1f} ms/step")
        pending, first = [], step + 1
        d.sync()
        t0 = time.perf_counter()  # evaluations are not in the next interval's time
    log["final_val_loss"] = log["evals"][-1]["val_loss"]
    if d.rank == 0:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "log.json").write_text(json.dumps(log, indent=1))
        files = write_curves(args.out, "loss", {args.kernels: log}, f"{args.preset}: {args.kernels} kernels")
        say(f"final val loss {log['final_val_loss']:.4f}; wrote {args.out / 'log.json'}, "
            f"{', '.join(str(f) for f in files)}" + ("" if len(files) > 1 else " (no matplotlib: CSV only)"))
    return log


def main():
    args = build_parser().parse_args()
    if args.bench:
        from bench import bench
        bench(args)
    else:
        train(args)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
