#!/usr/bin/env python3
"""Generated-program check: tkc, nvcc, tkc-interp and tkc-emu on tkgen's kernels.

Generates PROGRAMS kernels (files of BATCH kernels, so that one nvcc run
compiles many), and for each target compiles every file with tkc, the CUDA
with nvcc (device code through ptxas), and runs tkc-interp on each kernel
at odd sizes (it checks every pass against the lowered IR). The sm_80 CUDA
also runs on the CPU under tkc-emu (tools/emu) on the interpreter's inputs,
and must give its results. Anything that fails is a finding: its kernel is
written alone to OUT/failures/ with the command that reproduces it, and the
run fails.

  tools/tkgen/run.py --build build                        # CI defaults
  tools/tkgen/run.py --build build --programs 40 --seed 3 --targets sm_80
"""

import argparse
import concurrent.futures as cf
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tools" / "emu"))

import build as emu_build  # noqa: E402  (tools/emu/build.py)
import launch as emu_launch  # noqa: E402  (tools/emu/launch.py)
from gen.program import ALL_FEATURES, KNOWN_BROKEN, generate_file, pick_runs  # noqa: E402
NVCC_ARCH = {"sm_80": "-gencode=arch=compute_80,code=sm_80", "sm_90a": "-gencode=arch=compute_90a,code=sm_90a"}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(REPO / "build"), help="build folder with tools/tkc and tools/tkc-interp")
    ap.add_argument("--out", default=None, help="work folder (default BUILD/tkgen)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--programs", type=int, default=500, help="kernels in all (each compiled for every target)")
    ap.add_argument("--batch", type=int, default=100, help="kernels per .tk file (and per nvcc run)")
    ap.add_argument("--targets", default="sm_80,sm_90a")
    ap.add_argument("--runs", type=int, default=2, help="tkc-interp runs (sizes) per kernel and target")
    ap.add_argument("--avoid", default=KNOWN_BROKEN, help=f"features to leave out (default: {KNOWN_BROKEN or 'none'})")
    ap.add_argument("--no-nvcc", action="store_true", help="skip the nvcc step")
    ap.add_argument("--no-interp", action="store_true", help="skip the tkc-interp step (and the emulated runs)")
    ap.add_argument("--no-emu", action="store_true", help="skip the emulated runs of the sm_80 CUDA (tools/emu)")
    ap.add_argument("--emu-sanitize", action="store_true",
                    help="build the emulated kernels with AddressSanitizer and UBSan (slower; catches reads past a tensor)")
    ap.add_argument("--nvcc", default=os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc"))
    ap.add_argument("--nvcc-flags", default="-Xcicc -O1 -Xptxas -O0",
                    help="extra nvcc flags (the default halves the time of nvcc's defaults and still runs ptxas)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    return ap.parse_args(argv)


class Batch:
    """One generated .tk file: its kernels, their first lines, and the ones
    already found to fail (left out of the later steps)."""

    def __init__(self, seed, start, count, features, folder):
        self.seed, self.start, self.count = seed, start, count
        self.features = features
        self.path = folder / f"gen{seed}_{start}.tk"
        self.dropped = set()
        self.write()

    def write(self):
        keep = [i for i in range(self.start, self.start + self.count) if i not in self.dropped]
        texts, self.manifest, self.first_line = [], [], []
        line = 1
        for i in keep:
            text, manifest = generate_file(self.seed, 1, self.features, i)
            body = text.split("\n", 1)[1]
            self.single(i).parent.mkdir(exist_ok=True)
            self.single(i).write_text(text)
            self.first_line.append((line, i))
            line += body.count("\n") + 1
            texts.append(body)
            self.manifest += manifest
        self.path.write_text("\n".join(texts))
        self.indices = keep

    def single(self, index):
        """The file of kernel `index` alone (written with the batch): the
        interpreter lowers every kernel of its input, a twentieth of a
        second for a whole batch."""
        return self.path.parent / "single" / f"gen{self.seed}x{index}.tk"

    def kernel_at(self, line):
        found = None
        for first, i in self.first_line:
            if first <= line:
                found = i
        return found


class Findings:
    def __init__(self, folder, features):
        self.folder = folder
        self.avoid = ",".join(sorted(ALL_FEATURES - features))
        self.items = []

    def add(self, step, target, seed, index, detail):
        self.folder.mkdir(parents=True, exist_ok=True)
        stem = f"{step}-{target}-gen{seed}x{index}"
        text, _ = generate_file(seed, 1, ALL_FEATURES - set(self.avoid.split(",")), index)
        (self.folder / f"{stem}.tk").write_text(text)
        (self.folder / f"{stem}.txt").write_text(detail)
        default = set(self.avoid.split(",")) == set(KNOWN_BROKEN.split(","))
        repro = (f"tools/tkgen/tkgen.py --seed {seed} --start {index} --count 1"
                 + ("" if default else f" --avoid={self.avoid}") + f" -o x.tk  # then {step} --target={target}")
        self.items.append(stem)
        first = next((ln for ln in detail.splitlines() if "error" in ln.lower()), detail.strip().splitlines()[-1:] or [""])
        print(f"FAIL {step} {target} seed {seed} kernel {index}: {first if isinstance(first, str) else first[0]}\n"
              f"     kept {self.folder / stem}.tk; reproduce: {repro}", flush=True)


def run(cmd, timeout=600):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout}s: {' '.join(map(str, cmd))}"
    except OSError as e:
        return 127, f"cannot run {cmd[0]}: {e}"


def tkc_step(args, batch, target, findings):
    """Compiles the batch; a kernel with an error is a finding and is left
    out. Returns the .cu or None."""
    cu = batch.path.with_suffix(f".{target}.cu")
    for _ in range(batch.count + 1):
        if not batch.indices:
            return None
        # --verify-each: a pass that leaves IR the verifier rejects is a
        # finding here too, not only where tkc-interp runs the kernel.
        rc, log = run([f"{args.build}/tools/tkc", str(batch.path), f"--target={target}", "--verify-each", "-o", str(cu)])
        if rc == 0:
            return cu
        bad = {batch.kernel_at(int(m.group(1))) for m in re.finditer(rf"{re.escape(batch.path.name)}:(\d+):\d+: error", log)}
        bad.discard(None)
        if not bad:  # a crash or an error without a place: blame the whole batch
            bad = set(batch.indices)
        for i in sorted(bad):
            findings.add("tkc", target, batch.seed, i, log)
        batch.dropped |= bad
        batch.write()
    return None


def nvcc_step(args, cu, target):
    """An object file; with `args.shared_arch` (target -> nvcc flags), a
    shared library to load and run (tools/gpu/gen_check.py)."""
    shared = getattr(args, "shared_arch", None)
    if shared:
        out, kind = cu.with_suffix(".so"), ["-shared", "-Xcompiler", "-fPIC", *shared[target]]
    else:
        out, kind = cu.with_suffix(".o"), ["-c", NVCC_ARCH[target]]
    return run([args.nvcc, "-std=c++17", "-I", str(REPO / "runtime"), *kind, *args.nvcc_flags.split(),
                str(cu), "-o", str(out)])


def kernels_in_nvcc_errors(batch, cu, log):
    """The kernels whose code an nvcc error points into: the last kernel
    named at or before the line of the .cu, the kernel at the line of the
    .tk, or one named in a ptxas message."""
    lines = cu.read_text().splitlines()
    name = re.compile(rf"gen{batch.seed}x(\d+)")
    bad = set()
    for m in re.finditer(rf"{re.escape(cu.name)}\((\d+)\): error", log):
        for line in reversed(lines[:int(m.group(1))]):
            found = name.search(line)
            if found:
                bad.add(int(found.group(1)))
                break
    # tkc's #line directives make nvcc name the .tk file and its lines.
    for m in re.finditer(rf"{re.escape(batch.path.name)}\((\d+)\): error", log):
        bad.add(batch.kernel_at(int(m.group(1))))
    for line in log.splitlines():
        if "ptxas" in line and "error" in line:
            bad |= {int(i) for i in name.findall(line)}
    return bad & set(batch.indices)


def compile_step(args, batch, target, findings, counts):
    """tkc, then nvcc, on the batch; a kernel that either rejects is a
    finding and is left out. Returns the .cu or None."""
    for _ in range(batch.count + 1):
        cu = tkc_step(args, batch, target, findings)
        if cu is None or args.no_nvcc:
            return cu
        t = time.time()
        rc, log = nvcc_step(args, cu, target)
        counts["nvcc"] += 1
        counts["nvcc_seconds"] += time.time() - t
        if rc == 0:
            return cu
        bad = kernels_in_nvcc_errors(batch, cu, log) or set(batch.indices)
        for i in sorted(bad):
            findings.add("nvcc", target, batch.seed, i, log)
        batch.dropped |= bad
        batch.write()
    return None


def interp_step(args, batch, target, entry, run_spec, seed, extra=()):
    index = int(entry["name"].rsplit("x", 1)[1])
    cmd = [f"{args.build}/tools/tkc-interp", str(batch.single(index)), f"--target={target}",
           f"--kernel={run_spec['kernel']}",
           f"--seed={seed}"] + [f"--size={n}={v}" for n, v in run_spec["sizes"].items()] \
        + [f"--ints={n}={lo}:{hi}" for n, (lo, hi) in run_spec.get("ints", {}).items()] + list(extra)
    rc, log = run(cmd)
    return rc, " ".join(cmd) + "\n" + log


def emu_build_step(batch, cu, sanitize):
    """The batch's sm_80 CUDA built for tkc-emu: (library, None) or (None, log)."""
    try:
        return emu_build.build(cu, cu.with_suffix(".emu.so"), sanitize=sanitize), None
    except emu_build.EmuBuildError as e:
        return None, str(e)


def emu_step(args, batch, library, runs):
    """The emulated runs of one library; their results. Every other file runs
    its blocks' warps (and lanes) last first, so that CI tries both orders."""
    order = "reverse" if (batch.start // args.batch) % 2 else "forward"
    return emu_launch.run_library(library, runs, order=order, sanitized=args.emu_sanitize)


def main(argv=None):
    args = parse_args(argv)
    t0 = time.time()
    out = Path(args.out or Path(args.build) / "tkgen")
    shutil.rmtree(out / "failures", ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    features = ALL_FEATURES - {a for a in args.avoid.split(",") if a}
    targets = [t for t in args.targets.split(",") if t]
    findings = Findings(out / "failures", features)
    batches = [Batch(args.seed, s, min(args.batch, args.programs - s), features, out)
               for s in range(0, args.programs, args.batch)]
    counts = {"programs": args.programs, "kernels": 0, "nvcc": 0, "nvcc_seconds": 0.0, "interp": 0, "emu": 0}
    times = {"compile": 0.0, "interp": 0.0, "emu": 0.0}
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for target in targets:
            for b in batches:
                b.dropped = set()
                b.write()
            t = time.time()
            cus = list(pool.map(lambda b: compile_step(args, b, target, findings, counts), batches))
            times["compile"] += time.time() - t
            counts["kernels"] += sum(len(b.indices) for b, cu in zip(batches, cus) if cu)
            if not args.no_interp:
                t = time.time()
                emulate = target == "sm_80" and not args.no_emu
                libraries = {b: pool.submit(emu_build_step, b, cu, args.emu_sanitize)
                             for b, cu in zip(batches, cus) if cu and emulate}
                jobs = []
                rng = random.Random(f"runs:{args.seed}:{target}")
                for b, cu in zip(batches, cus):
                    if cu is None:
                        continue
                    for i, entry in zip(b.indices, b.manifest):
                        for n, spec in enumerate(pick_runs(entry, rng, args.runs, target)):
                            folder = out / "emu" / f"gen{b.seed}x{i}.{n}"
                            extra = [f"--save-inputs={folder}/in", f"--outputs={folder}/ref"] if emulate else []
                            jobs.append((b, i, spec, folder, pool.submit(interp_step, args, b, target, entry, spec,
                                                                         rng.randrange(1000), extra)))
                emu_runs = {}
                for b, i, spec, folder, fut in jobs:
                    rc, log = fut.result()
                    counts["interp"] += 1
                    if rc:
                        findings.add("tkc-interp", target, b.seed, i, log)
                    elif emulate:
                        emu_runs.setdefault(b, []).append({"kernel": spec["kernel"], "dir": str(folder),
                                                           "consts": spec["consts"], "index": i,
                                                           "sizes": spec["sizes"]})
                times["interp"] += time.time() - t
                t = time.time()
                emu_jobs = []
                for b, runs in emu_runs.items():
                    library, log = libraries[b].result()
                    if library is None:
                        for i in sorted({r["index"] for r in runs}):
                            findings.add("tkc-emu", target, b.seed, i, log)
                        continue
                    emu_jobs.append((b, pool.submit(emu_step, args, b, library, runs)))
                for b, fut in emu_jobs:
                    for r in fut.result():
                        counts["emu"] += 1
                        if not r["ok"]:
                            findings.add("tkc-emu", target, b.seed, r["index"],
                                         f"tools/emu/check.py {b.single(r['index'])} --kernel={r['kernel']} "
                                         f"--size={','.join(f'{k}={v}' for k, v in r['sizes'].items())}\n"
                                         f"error: {r['detail']}\n")
                times["emu"] += time.time() - t
    counts["nvcc_seconds"] = round(counts["nvcc_seconds"], 1)
    summary = {**counts, "failures": len(findings.items), "seconds": round(time.time() - t0, 1),
               **{f"{k}_seconds": round(v, 1) for k, v in times.items()}}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"tkgen: {counts['programs']} programs x {len(targets)} targets: {counts['kernels']} kernels compiled, "
          f"{counts['nvcc']} nvcc runs, {counts['interp']} interpreter runs, {counts['emu']} emulated runs, "
          f"{len(findings.items)} failures ({summary['seconds']} s: tkc + nvcc {summary['compile_seconds']}, "
          f"interp {summary['interp_seconds']}, emu {summary['emu_seconds']})")
    return 1 if findings.items else 0


if __name__ == "__main__":
    sys.exit(main())
