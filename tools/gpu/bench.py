#!/usr/bin/env python3
"""Speed of tkc-generated kernels against library peers, timed in the same run.

For each workload and size, tkc (one candidate per generated target) and its
peers (gemm: torch.matmul/cuBLAS; attention: SDPA with the cuDNN and the
flash backends; layernorm: torch layer_norm) are timed call by call with CUDA
events, each round calling every candidate once in a random order, rotating
among enough input sets to exceed the L2 cache.
Reports the median; throughput in TFLOP/s (gemm, attention) or GB/s
(layernorm); ratio = tkc throughput / peer throughput (> 1: tkc faster; the
best tkc target when there are several, variants `@name` left out); err = |tkc - peer| / |peer| on one
input set, a sanity check that the fast kernel computes the same thing.

Writes bench.md, bench.json and bench.png into --out (default: $OUT) when set.

Examples:
  python3 tools/gpu/bench.py                        # everything found in build/gpu
  python3 tools/gpu/bench.py --only gemm --quick --iters 50
  python3 tools/gpu/bench.py --selftest             # the harness's own axpy kernel vs torch
  python3 tools/gpu/bench.py --dry-run              # the plan, without a GPU or torch
"""

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import tkc_gpu as tg  # noqa: E402
import workloads as wl  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("Examples:")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu-dir", default=str(tg.DEFAULT_GPU_DIR), help="folder of generated NAME.TARGET.cu (default build/gpu)")
    ap.add_argument("--only", default=None, help="comma list of workloads: gemm,attn_fwd,layernorm (selftest = axpy)")
    ap.add_argument("--targets", default=None, help="comma list of targets (default: every one found)")
    ap.add_argument("--selftest", action="store_true", help="benchmark only the harness self-test kernel (axpy)")
    ap.add_argument("--quick", action="store_true", help="fewer sizes")
    ap.add_argument("--iters", type=int, default=40, help="timed calls per candidate and size (default 40)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed rounds first (default 5)")
    ap.add_argument("--lead-us", type=float, default=300.0,
                    help="device-side spin before each round so that launches queue ahead of the GPU (default 300)")
    ap.add_argument("--max-sets", type=int, default=16, help="most input sets rotated to defeat the L2 (default 16)")
    ap.add_argument("--time-budget", type=float, default=0.0,
                    help="seconds; sizes not started by then are skipped and reported (default: no limit)")
    ap.add_argument("--out", default=os.environ.get("OUT") or None, help="folder for bench.md/.json/.png (default $OUT)")
    ap.add_argument("--no-plot", action="store_true", help="skip bench.png")
    ap.add_argument("--nvcc", default=None, help="nvcc path")
    ap.add_argument("--dry-run", action="store_true", help="print the plan (sizes, input sets, work) and exit")
    args = ap.parse_args(argv)
    if args.selftest:
        args.only = "selftest"
    args.target_list = [t.strip() for t in args.targets.split(",")] if args.targets else None
    return args


def short(msg, n=140):
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= n else msg[: n - 3] + "..."


def compact(label):
    return label.replace(" ", ",")


def sizes_of(w, args):
    return w.quick_sizes if args.quick else w.bench_sizes


def throughput(w, size, ms):
    if not ms or not math.isfinite(ms) or ms <= 0:
        return float("nan")
    scale = 1e12 if w.unit == "TFLOP/s" else 1e9
    return w.work(size) / (ms * 1e-3) / scale


# --- running -------------------------------------------------------------------------


def bench_size(w, launchers, size, args, stream, l2):
    import torch
    row = {"workload": w.name, "label": compact(w.label(size)), "size": size, "unit": w.unit,
           "group": w.plot_group(size), "x": w.plot_x(size), "ms": {}, "value": {}, "errors": {}, "err": None}
    per_set = w.bytes_per_set(size)
    n_sets = tg.sets_for_l2(per_set, l2, args.max_sets)
    row["sets"] = n_sets
    sets = [{**w.make_inputs(size), **w.make_outputs(size)} for _ in range(n_sets)]
    fns = {}
    consts = w.consts(size)
    for target, launcher in launchers.items():
        name = f"tkc.{target}"
        binds = [launcher.bind([tg.from_torch(s[p.name]) for p in w.params], consts, stream) for s in sets]
        try:
            binds[0]()
            torch.cuda.synchronize()
            out = sets[0][w.main_output]
            unwritten = int(torch.isnan(out).sum().item())
            if unwritten:
                row["errors"][name] = f"{unwritten} output elements left unwritten"
            fns[name] = lambda i, b=binds: b[i]()
        except Exception as e:
            row["errors"][name] = short(e)
            if not alive():
                raise
    ref_name, ref_out = None, None
    for pname, peer in w.peers(size).items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = peer(sets[0])
                torch.cuda.synchronize()
            for s in sets[1:]:  # whatever a peer sets up per input set, before timing
                peer(s)
            torch.cuda.synchronize()
            # A timing-only peer computes less than the kernel (the bare GEMM
            # beside a fused epilogue): no reference for its error.
            if ref_out is None and pname not in getattr(w, "timing_only_peers", ()):
                ref_name, ref_out = pname, out
            fns[pname] = lambda i, f=peer: f(sets[i])
        except Exception as e:
            row["errors"][pname] = "unavailable: " + short(e)
            if not alive():
                raise
    if ref_out is not None:
        for target in launchers:
            if f"tkc.{target}" in fns:
                mine = sets[0][w.main_output].float()
                ref = ref_out.float()
                row["err"] = {"vs": ref_name, "rel": ((mine - ref).norm() / ref.norm()).item()}
                break
    del ref_out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        timings = tg.median_time_interleaved(fns, iters=args.iters, warmup=args.warmup, n_sets=n_sets,
                                             lead_us=args.lead_us)
    for name, t in timings.items():
        row["ms"][name] = t.median_ms
        row["value"][name] = throughput(w, size, t.median_ms)
    del sets
    return row


def alive():
    import torch
    try:
        torch.cuda.synchronize()
        return True
    except Exception:
        return False


# --- reporting -----------------------------------------------------------------------


def fmt(v, unit):
    if v is None or not math.isfinite(v):
        return "n/a"
    return f"{v:.0f}" if unit == "GB/s" else f"{v:.1f}"


def markdown(rows, header_lines=()):
    out = list(header_lines)
    by_w = {}
    for r in rows:
        by_w.setdefault(r["workload"], []).append(r)
    for wname, rs in by_w.items():
        unit = rs[0]["unit"]
        tkc = sorted({c for r in rs for c in list(r["value"]) + list(r["errors"]) if c.startswith("tkc.")})
        peers = []
        for r in rs:
            for c in list(r["value"]) + list(r["errors"]):
                if not c.startswith("tkc.") and c not in peers:
                    peers.append(c)
        # Variants (`tkc.TARGET@name`, experiments and the code before a
        # change) are shown but not compared: the ratios speak of the code
        # under test, the plain targets, where there are any.
        compared = [c for c in tkc if "@" not in c] or tkc
        ratio_tag = "tkc" if len(compared) <= 1 else "best tkc"
        head = ["size"] + tkc + peers + [f"{ratio_tag}/{p}" for p in peers] + ["err"]
        out += ["", f"### {wname} ({unit}, higher is better; ratio > 1: tkc faster)", "",
                "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        notes = {}
        for r in rs:
            if r.get("skipped"):
                out.append(f"| {r['label']} | " + " | ".join(["skipped"] * (len(head) - 1)) + " |")
                continue
            vals = r["value"]
            best = max([vals[c] for c in compared if c in vals and math.isfinite(vals[c])], default=float("nan"))
            cells = [r["label"]] + [fmt(vals.get(c), unit) for c in tkc + peers]
            for p in peers:
                pv = vals.get(p)
                cells.append(f"{best / pv:.2f}" if pv and math.isfinite(best) and math.isfinite(pv) else "n/a")
            e = r.get("err")
            cells.append(f"{e['rel']:.1e}" if e else "n/a")
            out.append("| " + " | ".join(cells) + " |")
            for c, msg in r["errors"].items():
                notes.setdefault((c, msg), []).append(r["label"])
        for (c, msg), labels in notes.items():
            where = ", ".join(labels[:3]) + (f" (+{len(labels) - 3} more)" if len(labels) > 3 else "")
            out.append(f"\n- {c} at {where}: {msg}")
    return "\n".join(out) + "\n"


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = {}
    for r in rows:
        if not r.get("skipped"):
            groups.setdefault(r["group"], []).append(r)
    if not groups:
        return False
    n = len(groups)
    cols = min(3, n)
    nrows = math.ceil(n / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 3.8 * nrows), squeeze=False)
    for ax, (g, rs) in zip(axes.flat, groups.items()):
        w = wl.BY_NAME[rs[0]["workload"]]
        cands = []
        for r in rs:
            for c in r["value"]:
                if c not in cands:
                    cands.append(c)
        for c in cands:
            pts = sorted((r["x"], r["value"][c]) for r in rs if c in r["value"] and math.isfinite(r["value"][c]))
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                        linewidth=2.2 if c.startswith("tkc") else 1.4, label=c)
        xs = sorted({r["x"] for r in rs})
        if len(xs) > 1 and xs[0] > 0:
            ax.set_xscale("log", base=2)
        ax.set_xticks(xs)
        ax.set_xticklabels([str(x) for x in xs], fontsize=8)
        ax.set_title(g, fontsize=10)
        ax.set_xlabel(w.plot_xlabel, fontsize=8)
        ax.set_ylabel(rs[0]["unit"])
        top = max([v for r in rs for v in r["value"].values() if math.isfinite(v)], default=1.0)
        ax.set_ylim(0, top * 1.12)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# --- main ----------------------------------------------------------------------------


def dry_run(selected, args):
    l2 = 60 << 20
    for w in selected:
        srcs = wl.sources(w, args.gpu_dir, args.target_list)
        print(f"{w.name} ({w.unit}): tkc targets {', '.join(srcs) or '(none found)'}; peers {', '.join(w.peer_names)}")
        for s in sizes_of(w, args):
            b = w.bytes_per_set(s)
            n = tg.sets_for_l2(b, l2, args.max_sets)
            work = w.work(s)
            wtxt = f"{work / 1e9:.2f} GFLOP" if w.unit == "TFLOP/s" else f"{work / 1e6:.1f} MB"
            print(f"  {compact(w.label(s))}: {wtxt}, {b / 2**20:.1f} MiB per input set, {n} set(s)")
    return 0


def main(argv=None):
    args = parse_args(argv)
    selected = wl.select(args.only, include_selftest=False)
    if args.dry_run:
        return dry_run(selected, args)

    import torch
    if not torch.cuda.is_available():
        print("no CUDA device visible to torch", file=sys.stderr)
        return 2
    t0 = time.time()
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = tg.l2_bytes_of_device()
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    header = [f"# tkc benchmark",
              "",
              f"device {props.name} ({props.multi_processor_count} SMs, L2 {l2 >> 20} MiB) | torch {torch.__version__} | "
              f"CUDA {torch.version.cuda} | cuDNN {cudnn} | median of {args.iters} CUDA-event-timed calls per candidate, "
              f"interleaved{' | quick' if args.quick else ''}"]
    print(header[-1], flush=True)
    stream = tg.current_stream_handle()
    torch.backends.cuda.matmul.allow_tf32 = False

    rows = []
    failed = False
    for w in selected:
        launchers = {}
        for target, cu in wl.sources(w, args.gpu_dir, args.target_list).items():
            try:
                lib = tg.load_library(cu, target=target, nvcc=args.nvcc)
                launchers[target] = w.make_launcher(lib)
            except Exception as e:
                print(f"{w.name}.{target}: build/load failed: {short(e, 400)}", flush=True)
                failed = True
        if not launchers:
            print(f"{w.name}: no generated kernel found/loaded; benchmarking peers only", flush=True)
        for size in sizes_of(w, args):
            label = compact(w.label(size))
            if args.time_budget and time.time() - t0 > args.time_budget:
                print(f"{w.name} {label}: skipped (time budget {args.time_budget:.0f}s spent)", flush=True)
                rows.append({"workload": w.name, "label": label, "size": size, "unit": w.unit, "skipped": True,
                             "group": w.plot_group(size), "x": w.plot_x(size), "value": {}, "errors": {}})
                continue
            ts = time.time()
            try:
                row = bench_size(w, launchers, size, args, stream, l2)
            except Exception as e:
                print(f"{w.name} {label}: FAILED: {short(e, 300)}", flush=True)
                failed = True
                if not alive():
                    print("CUDA context lost; stopping", flush=True)
                    break
                continue
            rows.append(row)
            vals = "  ".join(f"{c} {fmt(v, w.unit)}" for c, v in row["value"].items())
            err = f"  err {row['err']['rel']:.1e}" if row.get("err") else ""
            print(f"{w.name} {label} [{w.unit}, {row['sets']} set(s), {time.time() - ts:.1f}s]: {vals}{err}", flush=True)
            for c, msg in row["errors"].items():
                print(f"    {c}: {msg}", flush=True)
        torch.cuda.empty_cache()

    md = markdown(rows, header)
    print("\n" + md, flush=True)
    print(f"bench took {time.time() - t0:.1f}s", flush=True)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench.md").write_text(md)
        (out / "bench.json").write_text(json.dumps({"header": header, "rows": rows}, indent=1, default=str))
        if not args.no_plot:
            try:
                if plot(rows, out / "bench.png"):
                    print(f"wrote {out / 'bench.png'}")
            except Exception as e:
                print(f"plot failed: {short(e, 300)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
