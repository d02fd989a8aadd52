#!/usr/bin/env python3
"""Random programs on the GPU: the emitted CUDA against the interpreter.

For each target, generates PROGRAMS kernels with tools/tkgen, compiles them
with tkc and nvcc into shared libraries (BATCH kernels each), and runs
tkc-interp on each kernel at odd sizes: it draws the inputs (outputs
poisoned with NaN), checks every pass, and writes the inputs and the
reference results (tkc-interp --save-inputs/--outputs). Then each kernel's
launcher runs on the GPU on the same inputs, in row-padded tensors (row
strides a multiple of 16 bytes, as bulk copies need), and every output is
compared with the reference: NaN where the reference has NaN, elsewhere
within TOL of the largest reference magnitude (i32 exactly).

Each library runs in a process of its own, so that a kernel that faults
takes only its library's later kernels with it. A failure prints the seed
and kernel and keeps the program under WORK/failures (and, where $OUT is
set, as on the GPU machine, copies them and summary.json to $OUT/gen_check).

  python3 tools/gpu/gen_check.py --build build                 # GPU machine
  python3 tools/gpu/gen_check.py --build build --prepare-only  # no GPU: all but the launches
"""

import argparse
import concurrent.futures as cf
import ctypes
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tools" / "tkgen"))
sys.path.insert(0, str(REPO / "tools" / "emu"))

import run as tkgen_run  # noqa: E402  (tools/tkgen/run.py)
import tkc_gpu as tg  # noqa: E402
from launch import compare  # noqa: E402  (tools/emu/launch.py: the emulated runs compare alike)
from gen.program import ALL_FEATURES, pick_runs  # noqa: E402

# Features whose CUDA is known to differ from the interpreter, which CI's
# checks cannot see (none now); try them with --avoid=.
GPU_KNOWN_BROKEN = ""

# Launcher statuses that are restrictions of the generated code rather than
# errors: the sizes a bulk tensor store cannot write.
SKIP_STATUS = {4: "alignment"}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(REPO / "build"), help="folder with tools/tkc and tools/tkc-interp")
    ap.add_argument("--work", default=None, help="work folder (default BUILD/gen_check)")
    ap.add_argument("--seed", type=int, default=None, help="generator seed (default: from the clock, printed)")
    ap.add_argument("--programs", type=int, default=1000, help="kernels per target")
    ap.add_argument("--batch", type=int, default=50, help="kernels per library")
    ap.add_argument("--targets", default="sm_80,sm_90a")
    ap.add_argument("--runs", type=int, default=2, help="sizes per kernel")
    ap.add_argument("--avoid", default=f"{tkgen_run.KNOWN_BROKEN},{GPU_KNOWN_BROKEN}",
                    help="tkgen features to leave out (default: those known to break)")
    ap.add_argument("--tol", type=float, default=2e-2, help="largest difference relative to the largest reference value")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--gpu-jobs", type=int, default=4, help="library processes sharing the GPU at once")
    ap.add_argument("--nvcc", default=None)
    ap.add_argument("--prepare-only", action="store_true", help="generate, compile and run the interpreter; no GPU")
    ap.add_argument("--run-library", default=None, help=argparse.SUPPRESS)  # internal: one library's runs
    return ap.parse_args(argv)


# --- preparation (no GPU) ------------------------------------------------------------------


def prepare(args, target, seed, findings, counts):
    """Libraries and interpreter runs of one target: [(so, [run])]."""
    work = Path(args.work) / target
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    features = ALL_FEATURES - {a for a in args.avoid.split(",") if a}
    run_args = tkgen_run.parse_args(["--build", args.build, "--nvcc-flags=-O3", "--nvcc", tg.find_nvcc(args.nvcc)])
    run_args.shared_arch = tg.ARCH_FLAGS
    batches = [tkgen_run.Batch(seed, s, min(args.batch, args.programs - s), features, work)
               for s in range(0, args.programs, args.batch)]
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        t = time.time()
        sos = list(pool.map(lambda b: tkgen_run.compile_step(run_args, b, target, findings, counts), batches))
        counts["compile_seconds"] += time.time() - t
        rng = random.Random(f"gen_check:{seed}:{target}")
        jobs = []
        for b, cu in zip(batches, sos):
            if cu is None:
                continue
            for i, entry in zip(b.indices, b.manifest):
                for n, spec in enumerate(pick_runs(entry, rng, args.runs, target)):
                    folder = work / f"{entry['name']}.{n}"
                    extra = [f"--save-inputs={folder}/in", f"--outputs={folder}/ref"]
                    future = pool.submit(tkgen_run.interp_step, run_args, b, target, entry, spec, rng.randrange(10**6),
                                         extra)
                    jobs.append((b, i, entry, spec, folder, future))
        t = time.time()
        libraries = {}
        for b, i, entry, spec, folder, future in jobs:
            rc, log = future.result()
            counts["interp"] += 1
            if rc:
                findings.add("tkc-interp", target, b.seed, i, log)
                continue
            run = {"kernel": entry["name"], "index": i, "seed": b.seed, "params": entry["params"],
                   "consts": spec["consts"], "sizes": spec["sizes"], "dir": str(folder)}
            libraries.setdefault(str(b.path.with_suffix(f".{target}.so")), []).append(run)
        counts["interp_seconds"] += time.time() - t
    counts["kernels"] += sum(len(b.indices) for b, cu in zip(batches, sos) if cu)
    return list(libraries.items())


# --- the GPU side ----------------------------------------------------------------------------


TORCH_DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16", "i32": "int32"}


def to_cuda(torch, raw, dtype, dims):
    """The tensor on the GPU, each row strided to a multiple of 16 bytes (as
    bulk tensor copies need; a launcher takes any row stride)."""
    host = torch.frombuffer(bytearray(raw), dtype=getattr(torch, TORCH_DTYPES[dtype])).reshape(dims) if raw else \
        torch.empty(dims, dtype=getattr(torch, TORCH_DTYPES[dtype]))
    if host.dim() < 2:
        return host.cuda()
    per16 = 16 // host.element_size()
    cols = host.shape[-1]
    storage = torch.zeros(*host.shape[:-1], -(-cols // per16) * per16, dtype=host.dtype, device="cuda")
    view = storage[..., :cols]
    view.copy_(host.cuda())
    return view


def from_cuda(tensor):
    host = tensor.contiguous().cpu()
    return ctypes.string_at(host.data_ptr(), host.numel() * host.element_size())


def run_library(spec_path):
    """Runs every kernel of one library; prints one JSON line per run."""
    import torch

    spec = json.loads(Path(spec_path).read_text())
    lib = tg.KernelLibrary(spec["so"])
    for run in spec["runs"]:
        result = {"kernel": run["kernel"], "index": run["index"], "seed": run["seed"], "sizes": run["sizes"],
                  "consts": run["consts"], "dir": run["dir"]}
        try:
            folder = Path(run["dir"])
            params = json.loads((folder / "in" / "tensors.json").read_text())["tensors"]
            tensors = [to_cuda(torch, (folder / "in" / f"{p['name']}.bin").read_bytes(), p["dtype"], p["dims"])
                       for p in params]
            launcher = lib.launcher(run["kernel"], len(tensors), len(run["consts"]))
            code = launcher.raw([tg.from_torch(t) for t in tensors], run["consts"], None)
            torch.cuda.synchronize()
            if code in SKIP_STATUS:
                result.update(status="SKIP", detail=f"{SKIP_STATUS[code]}: {launcher.error_message()}")
            elif code:
                result.update(status="FAIL", detail=f"launcher status {code}: {launcher.error_message()}")
            else:
                details, ok = [], True
                for p, t in zip(params, tensors):
                    if not p["out"]:
                        continue
                    ref = (folder / "ref" / f"{p['name']}.bin").read_bytes()
                    good, detail = compare(from_cuda(t), ref, p["dtype"], spec["tol"])
                    ok &= good
                    details.append(f"{p['name']}: {detail}")
                result.update(status="PASS" if ok else "FAIL", detail="; ".join(details))
        except Exception as e:  # a fault poisons the context: the rest of the library fails too
            result.update(status="FAIL", detail=f"{type(e).__name__}: {e}")
        print(json.dumps(result), flush=True)
    return 0


def run_on_gpu(args, target, libraries, findings, counts):
    def one(item):
        so, runs = item
        spec_path = Path(so).with_suffix(".runs.json")
        spec_path.write_text(json.dumps({"so": so, "runs": runs, "tol": args.tol}))
        proc = subprocess.run([sys.executable, __file__, "--run-library", str(spec_path)], capture_output=True,
                              text=True, timeout=600)
        results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        done = {(r["kernel"], r["dir"]) for r in results}
        for run in runs:  # the process died (a fault): the runs it left
            if (run["kernel"], run["dir"]) not in done:
                results.append({**run, "status": "FAIL", "detail": f"library process exited {proc.returncode}: "
                                + proc.stderr.strip()[-300:]})
        return results

    with cf.ThreadPoolExecutor(max_workers=args.gpu_jobs) as pool:
        for results in pool.map(one, libraries):
            for r in results:
                counts[r["status"]] += 1
                if r["status"] == "FAIL":
                    findings.add("gpu", target, r["seed"], r["index"],
                                 f"{r['kernel']} sizes {r['sizes']} consts {r['consts']} inputs {r['dir']}/in\n"
                                 f"error: {r['detail']}\n")
                elif r["status"] == "SKIP":
                    print(f"SKIP gpu {target} {r['kernel']} {r['sizes']}: {r['detail']}", flush=True)


def main(argv=None):
    args = parse_args(argv)
    if args.run_library:
        return run_library(args.run_library)
    for tool in ("tkc", "tkc-interp"):
        if not os.access(Path(args.build) / "tools" / tool, os.X_OK):
            print(f"gen_check: no {args.build}/tools/{tool}: build tkc (tools/setup.sh), or bring build/tools/tkc and "
                  "build/tools/tkc-interp from a machine that did (they need only libc)", file=sys.stderr)
            return 2
    seed = args.seed if args.seed is not None else int(time.time()) % 100000
    args.work = args.work or str(Path(args.build) / "gen_check")
    print(f"gen_check: seed {seed}, {args.programs} programs per target, work {args.work}", flush=True)
    Path(args.work).mkdir(parents=True, exist_ok=True)
    findings = tkgen_run.Findings(Path(args.work) / "failures", ALL_FEATURES - set(args.avoid.split(",")))
    counts = {"kernels": 0, "nvcc": 0, "nvcc_seconds": 0.0, "compile_seconds": 0.0, "interp": 0,
              "interp_seconds": 0.0, "PASS": 0, "FAIL": 0, "SKIP": 0}
    t0 = time.time()
    for target in [t for t in args.targets.split(",") if t]:
        libraries = prepare(args, target, seed, findings, counts)
        print(f"{target}: {sum(len(r) for _, r in libraries)} runs in {len(libraries)} libraries prepared", flush=True)
        if not args.prepare_only:
            t = time.time()
            run_on_gpu(args, target, libraries, findings, counts)
            counts["gpu_seconds"] = counts.get("gpu_seconds", 0) + time.time() - t
    summary = {k: round(v, 1) if isinstance(v, float) else v for k, v in counts.items()}
    summary.update(seed=seed, failures=len(findings.items), seconds=round(time.time() - t0, 1))
    (Path(args.work) / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    if os.environ.get("OUT"):  # the GPU machine's folder that comes back: the failures and the summary
        keep = Path(os.environ["OUT"]) / "gen_check"
        shutil.copytree(Path(args.work) / "failures", keep / "failures", dirs_exist_ok=True) \
            if (Path(args.work) / "failures").is_dir() else keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(args.work) / "summary.json", keep)
    print(f"gen_check summary: seed {seed}: {summary['kernels']} kernels compiled, {summary['interp']} interpreter runs, "
          f"GPU runs {summary['PASS']} passed, {summary['FAIL']} failed, {summary['SKIP']} skipped; "
          f"{len(findings.items)} failures in all ({summary['seconds']} s)")
    return 1 if findings.items else 0


if __name__ == "__main__":
    sys.exit(main())
