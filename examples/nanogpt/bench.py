"""train.py --bench: training tokens/s of several variants of one model in
one process, and where each variant's step time goes.

Every variant (tkc: tkc kernels, eager; torch: PyTorch's kernels with SDPA,
eager; torch-compile: the PyTorch variant under torch.compile(fullgraph=True);
tkc-compile: the tkc variant under it; tkc-graphs and torch-graphs: the
same under torch.compile(mode="reduce-overhead"), each step's kernels
replayed as CUDA graphs) gets its own copy of the model from the same seed,
its own optimizer and the same batches. After --bench-warmup steps each
(compilation happens there), rounds of timed windows of --bench-window steps
alternate between the variants, in a fresh random order each round, so that
clocks and temperature drift spread over all of them; a variant's figure is
its median window. Before each window the allocator's cache is emptied and
the variant runs --bench-settle untimed steps, so that it allocates from
its own cached blocks as it would alone. Beside the step times the bench
prints each variant's host time to issue a step and the device
allocations in its windows: a step whose host time nears its length, or a
window with cudaMalloc/cudaFree calls, waited on something other than the
GPU's work. Then torch.profiler records a window of each variant,
and the GPU time of its operators is summed into the categories of
CATEGORIES (self time: a kernel counts once, for the operator that
launched it; the kernels a compiled graph generates count under the
operator they replace only where the profiler names it, else as device
work outside any operator).
"""

import copy
import json
import random
import re
import statistics
import time
import traceback

import torch

from data import Batches
from train import DEFAULTS, Dist, data_kind, make_model, make_optimizer, make_streams, train_step, wrap

CATEGORIES = [
    ("attention forward", r"tkc::attention_fwd$|_flash_attention_forward|_efficient_attention_forward|"
                          r"_scaled_dot_product_\w*attention$|aten::_softmax$|aten::bmm$"),
    ("attention backward", r"tkc::attention_bwd|_attention_backward|_softmax_backward_data"),
    ("layer norm forward", r"tkc::layernorm$|native_layer_norm$"),
    ("layer norm backward", r"tkc::layernorm_bwd|native_layer_norm_backward"),
    ("linear+GELU (tkc)", r"tkc::linear_gelu"),
    ("GELU (torch, elementwise)", r"aten::gelu"),
    ("cross-entropy", r"tkc::cross_entropy|log_softmax|nll_loss"),
    ("other matmuls", r"aten::(mm|addmm|matmul|_addmm_activation)$"),
    ("optimizer (AdamW)", r"adam"),
    ("gradient clipping", r"_foreach_norm|_foreach_mul|linalg_vector_norm|clamp"),
    ("embedding", r"embedding"),
    ("casts and copies", r"aten::(copy_|_to_copy|clone|contiguous)$"),
]


UNATTRIBUTED = "device work outside any operator"


def category(name):
    for label, pattern in CATEGORIES:
        if re.search(pattern, name, re.IGNORECASE):
            return label
    return name if name.startswith("tkc::") else "other (elementwise, fills)"


def self_device_us(evt):
    for attr in ("self_device_time_total", "self_cuda_time_total"):
        if hasattr(evt, attr):
            return getattr(evt, attr)
    return 0.0


class Variant:
    def __init__(self, name, args, d, streams, vocab):
        self.name = name
        a = copy.copy(args)
        a.kernels = "tkc" if name.startswith("tkc") else "torch"
        a.compile = name.endswith(("-compile", "-graphs"))
        a.compile_mode = "reduce-overhead" if name.endswith("-graphs") else "default"
        self.args = a
        self.model = make_model(a, a.kernels, d.device, vocab)
        self.opt = make_optimizer(self.model, a, d.device)
        self.fwd = wrap(self.model, a, d)
        self.batches = Batches(streams[0], self.batch(args), self.model.cfg.block_size, args.seed, d.rank, d.world)
        self.device = d.device
        self.lr = a.lr or DEFAULTS[a.preset][1]

    @staticmethod
    def batch(args):
        return args.batch or DEFAULTS[args.preset][0]

    def steps(self, n):
        for _ in range(n):
            x, y = self.batches.next()
            loss = train_step(self.fwd, self.model, self.opt, x, y, self.lr, self.device)
        return loss


def allocator_counts(device):
    """The caching allocator's counters that tell whether a window waited
    on the device: cudaMalloc and cudaFree calls (a cudaFree synchronizes)
    and allocations that failed and were retried after freeing the cache."""
    if device.type != "cuda":
        return {}
    stats = torch.cuda.memory_stats(device)
    return {k: stats.get(k, 0) for k in ("num_device_alloc", "num_device_free", "num_alloc_retries")}


def settle(v, n):
    """Empties the allocator's cache, then runs n untimed steps: one
    process holds every variant, but a training process holds one model,
    and the blocks another variant's window left cached would make this
    one's allocations fail, free the cache (a cudaFree waits for the
    device) and retry."""
    if v.device.type == "cuda" and n > 0:
        torch.cuda.synchronize(v.device)
        torch.cuda.empty_cache()
    v.steps(n)


def timed_window(v, n):
    """(seconds per step over n steps by CUDA events on the GPU, what the
    window cost besides: host seconds per step to issue the steps, the
    allocator's counters over it, the peak of allocated memory in it)."""
    if v.device.type != "cuda":
        t0 = time.perf_counter()
        v.steps(n)
        step = (time.perf_counter() - t0) / n
        return step, {"host_s": step}
    before = allocator_counts(v.device)
    torch.cuda.reset_peak_memory_stats(v.device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    t0 = time.perf_counter()
    v.steps(n)
    host = (time.perf_counter() - t0) / n
    end.record()
    end.synchronize()
    after = allocator_counts(v.device)
    extra = {"host_s": host, "peak_gib": torch.cuda.max_memory_allocated(v.device) / 2**30}
    extra.update({k: after[k] - before[k] for k in after})
    return start.elapsed_time(end) / 1e3 / n, extra


def breakdown(v, n):
    """{category: GPU ms per step} over n profiled steps, plus the total of
    the GPU's work and the part of it that no operator launched."""
    from torch.profiler import ProfilerActivity, profile
    cuda = v.device.type == "cuda"
    d = Dist.sync_device(v.device)
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        v.steps(n)
        d()
    out, device_total = {}, 0.0
    for evt in prof.key_averages():
        # On the CPU its own time stands in for the device's.
        # (The profiler can give a wrapper of other operators a self time below 0.)
        us = max(0.0, self_device_us(evt) if cuda else evt.self_cpu_time_total) / 1e3 / n
        if not str(evt.device_type).endswith("CPU"):  # a kernel, copy or fill itself
            device_total += us
        else:  # every kind of operator the step ran gets a row, even at 0
            key = category(evt.key)
            out[key] = out.get(key, 0.0) + us
    attributed = sum(out.values())
    out[UNATTRIBUTED] = max(0.0, device_total - attributed)
    out["total"] = max(device_total, attributed)
    return out


def device_name(device):
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def flops_per_token(cfg, params):
    # 6 per parameter (forward and backward) and the attention products,
    # halved for the causal mask: 6 * layers * context * width.
    return 6 * params + 6 * cfg.n_layer * cfg.block_size * cfg.n_embd


def bench(args):
    d = Dist(args.device)
    streams = make_streams(args, d.device, args.seed)
    names = args.bench_variants.split(",")
    variants, failed = [], {}
    for name in names:
        # A variant that cannot run (a kernel missing, a shape it does not
        # take) is reported and left out; the others are still measured.
        try:
            v = Variant(name, args, d, streams, streams[2])
            loss = v.steps(args.bench_warmup)
            print(f"  warmed up {name}: loss {loss.item():.3f}")
            variants.append(v)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            failed[name] = f"{type(e).__name__}: {e}"
            print(f"  {name} FAILED: {failed[name]}")
    if not variants:
        raise SystemExit("no variant ran")
    cfg, batch = variants[0].model.cfg, Variant.batch(args)
    tokens = batch * cfg.block_size
    print(f"bench: {cfg}, {variants[0].model.num_parameters() / 1e6:.1f}M parameters, batch {batch} x "
          f"{cfg.block_size} = {tokens} tokens/step, on {device_name(d.device)}, torch {torch.__version__}"
          f", data: {'random tokens' if data_kind(args) == 'random' else 'characters'}")
    times = {v.name: [] for v in variants}
    extras = {v.name: [] for v in variants}
    order = random.Random(args.seed)
    fpt = flops_per_token(cfg, variants[0].model.num_parameters())
    args.out.mkdir(parents=True, exist_ok=True)
    for r in range(args.bench_rounds):
        for v in order.sample(variants, len(variants)):
            settle(v, args.bench_settle)
            step, extra = timed_window(v, args.bench_window)
            times[v.name].append(step)
            extras[v.name].append(extra)
        # Each round's medians so far, so that a run cut short still tells.
        medians = {name: statistics.median(ts) for name, ts in times.items()}
        print(f"  round {r + 1}: " + ", ".join(f"{name} {m * 1e3:.1f} ms" for name, m in medians.items()))
    result = {"config": vars(cfg), "batch": batch, "device": device_name(d.device),
              "torch": torch.__version__, "variants": {}, "failed": failed}
    lines = ["| variant | tokens/s (median) | ms/step | spread (min-max ms) | model TFLOP/s |", "|---|---|---|---|---|"]
    for name, ts in times.items():
        med = statistics.median(ts)
        result["variants"][name] = {"step_s": ts, "median_step_s": med, "tokens_per_s": tokens / med,
                                    "windows": extras[name]}
        lines.append(f"| {name} | {tokens / med:,.0f} | {med * 1e3:.1f} | {min(ts) * 1e3:.1f}-{max(ts) * 1e3:.1f} | "
                     f"{fpt * tokens / med / 1e12:.1f} |")
    # A step whose host time nears its device time follows the host; device
    # allocations (cudaFree synchronizes) and retries stall the queue.
    lines += ["", "| variant | host ms/step (median) | cudaMalloc + cudaFree in all windows | alloc retries | "
                  "peak allocated GiB |", "|---|---|---|---|---|"]
    for name, ws in extras.items():
        total = {k: sum(w.get(k, 0) for w in ws) for k in ("num_device_alloc", "num_device_free", "num_alloc_retries")}
        lines.append(f"| {name} | {statistics.median(w['host_s'] for w in ws) * 1e3:.1f} | "
                     f"{total['num_device_alloc'] + total['num_device_free']} | {total['num_alloc_retries']} | "
                     f"{max(w.get('peak_gib', 0.0) for w in ws):.1f} |")
    parts = {v.name: breakdown(v, max(2, args.bench_window // 2)) for v in variants} if args.bench_breakdown else {}
    result["breakdown_ms_per_step"] = parts
    rows = sorted({k for p in parts.values() for k in p if k != "total"},
                  key=lambda k: -max(p.get(k, 0.0) for p in parts.values()))
    what = "GPU" if d.device.type == "cuda" else "CPU"
    if parts:
        lines += ["", f"{what} time per step by operator (torch.profiler self time, ms):", "",
                  "| operator | " + " | ".join(parts) + " |", "|---" * (len(parts) + 1) + "|"]
        for k in rows + ["total"]:
            lines.append(f"| {k} | " + " | ".join(f"{p.get(k, 0.0):.2f}" for p in parts.values()) + " |")
    lines += [f"\n{name} did not run: {why}" for name, why in failed.items()]
    table = "\n".join(lines)
    print(table)
    (args.out / "bench.md").write_text(table + "\n")
    (args.out / "bench.json").write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out / 'bench.md'}, {args.out / 'bench.json'}")
    if failed:
        raise SystemExit(1)
