"""Build, load, call and time tkc-generated CUDA launchers.

Library use (from check.py / bench.py):
    lib = load_library(cu_path)                  # nvcc -> .so (cached by content hash)
    gemm = lib.launcher("gemm")                  # arguments from tkc_gemm_info()
    gemm([desc_a, desc_b, desc_c], consts=[], stream=stream)   # raises TkcError
    median_time_interleaved({"tkc": f, "cuBLAS": g}, iters=30, warmup=5, n_sets=4)

Command line (needs nvcc, but neither a GPU nor torch):
    python3 tools/gpu/tkc_gpu.py build [DIR] [--jobs N] [--log FILE] [--force]
builds every DIR/NAME.TARGET.cu into DIR/NAME.TARGET.so (+ .so.key, + .ptxas.log)
and prints a register / spill summary.

The descriptor, launcher and timer come from the tkc package (python/tkc).
torch is imported lazily, so this file imports without it.
"""

import argparse
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUNTIME_DIR = REPO / "runtime"
DEFAULT_GPU_DIR = REPO / "build" / "gpu"
sys.path.insert(0, str(REPO / "python"))

# The descriptor, the launchers and the timer are the tkc package's (python/).
from tkc import _abi, _loader  # noqa: E402
from tkc.bench import Timing, l2_bytes_of_device, median_time_interleaved, sets_for_l2  # noqa: E402,F401
from tkc.errors import TkcError, error_for  # noqa: E402,F401

TKC_MAX_RANK = _abi.MAX_RANK
TKC_ABI_VERSION = _abi.ABI_VERSION
TkcTensor = _abi.TkcTensor

STATUS_NAMES = _abi.STATUS_NAMES
STATUS_LAUNCH_FAILED = _abi.STATUS_LAUNCH  # TKC_ERROR_LAUNCH: every argument check passed
STATUS_PAST_STRUCTURAL_CHECKS = _abi.STATUS_PAST_STRUCTURAL_CHECKS

# Code for --target=sm_80 uses only mma.sync / ldmatrix / cp.async, so it is
# built as sm_90 SASS (sm_80 SASS would not run on an H100/H200).
ARCH_FLAGS = {
    "sm_80": ["-gencode=arch=compute_90,code=sm_90"],
    "sm_90": ["-gencode=arch=compute_90,code=sm_90"],
    "sm_90a": ["-gencode=arch=compute_90a,code=sm_90a"],
}
BASE_FLAGS = ["-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-Xptxas", "-v"]


class BuildError(RuntimeError):
    pass


# --- the tensor descriptor ------------------------------------------------------


def expected_layout():
    """(sizeof, then the offset of each field) of the ctypes descriptor."""
    return _abi.layout()


def make_desc(ptr, sizes, strides, rank=None, dtype="bf16", device=0):
    """A TkcTensor from a raw address (int or None), sizes and strides in elements."""
    return _abi.make_tensor(ptr, sizes, strides, dtype, device, rank)


class _TorchParam:
    name = "tensor"
    rank = 0
    dtype = "?"


def from_torch(t):
    """A TkcTensor describing a CUDA torch tensor (no copy; keep `t` alive)."""
    return _loader.describe(t, _TorchParam(), "")


def current_stream_handle():
    import torch
    return torch.cuda.current_stream().cuda_stream


# --- building -------------------------------------------------------------------


def find_nvcc(explicit=None):
    for cand in (explicit, os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.exists(cand):
            return cand
    raise BuildError("nvcc not found (pass --nvcc or set NVCC)")


def target_of(cu_path):
    """`gemm.sm_80.cu` -> `sm_80`; files without a target part count as sm_80."""
    parts = Path(cu_path).name.split(".")
    if len(parts) >= 3 and parts[-2] in ARCH_FLAGS:
        return parts[-2]
    return "sm_80"


def stem_of(cu_path):
    """`gemm.sm_80.cu` -> `gemm`."""
    parts = Path(cu_path).name.split(".")
    if len(parts) >= 3 and parts[-2] in ARCH_FLAGS:
        return ".".join(parts[:-2])
    return ".".join(parts[:-1])


def nvcc_command(nvcc, cu_path, so_path, target, include_dirs=None):
    target = target.split("@")[0]  # "sm_80@variant": a variant of the same target
    if target not in ARCH_FLAGS:
        raise BuildError(f"unknown target {target!r} (known: {', '.join(ARCH_FLAGS)})")
    cmd = [nvcc] + BASE_FLAGS
    for inc in include_dirs if include_dirs is not None else [RUNTIME_DIR]:
        cmd += ["-I", str(inc)]
    cmd += ARCH_FLAGS[target] + ["-o", str(so_path), str(cu_path)]
    return cmd


@lru_cache(maxsize=None)
def _nvcc_version(nvcc):
    try:
        return subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    except Exception as e:  # the key then just differs
        return f"unknown: {e}"


def build_key(cu_path, target, nvcc, include_dirs=None):
    h = hashlib.sha256()
    h.update(Path(cu_path).read_bytes())
    for inc in include_dirs if include_dirs is not None else [RUNTIME_DIR]:
        inc = Path(inc)
        if inc.is_dir():
            for f in sorted(inc.rglob("*")):
                if f.is_file() and f.suffix in (".h", ".cuh", ".hpp", ".inc"):
                    h.update(str(f.relative_to(inc)).encode())
                    h.update(f.read_bytes())
    h.update(" ".join(nvcc_command("nvcc", "in.cu", "out.so", target, [])).encode())
    h.update(_nvcc_version(nvcc).encode())
    return h.hexdigest()[:24]


def default_cache_dir():
    return Path(os.environ.get("TKC_GPU_CACHE", Path(tempfile.gettempdir()) / "tkc-gpu-cache"))


class BuildResult:
    def __init__(self, cu, so, log, key, cached, seconds):
        self.cu, self.so, self.log, self.key, self.cached, self.seconds = cu, so, log, key, cached, seconds


def compile_cu(cu_path, target=None, nvcc=None, cache_dir=None, include_dirs=None, publish=False, force=False):
    """Builds `cu_path` into a shared library, reusing an identical earlier build.

    Lookup order: DIR/NAME.TARGET.so whose .so.key matches, then the cache
    directory (by key), then nvcc. With publish=True the result is also copied
    next to the .cu (NAME.TARGET.so, .so.key, .ptxas.log). Raises BuildError.
    """
    cu_path = Path(cu_path)
    target = target or target_of(cu_path)
    nvcc = find_nvcc(nvcc)
    key = build_key(cu_path, target, nvcc, include_dirs)
    sibling = cu_path.with_suffix(".so")
    sibling_key = Path(str(sibling) + ".key")
    sibling_log = cu_path.with_suffix(".ptxas.log")
    if not force and sibling.exists() and sibling_key.exists() and sibling_key.read_text().strip() == key:
        log = sibling_log.read_text() if sibling_log.exists() else ""
        return BuildResult(cu_path, sibling, log, key, True, 0.0)

    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    so = cache / f"{stem_of(cu_path)}.{target}.{key}.so"
    log_file = cache / f"{stem_of(cu_path)}.{target}.{key}.log"
    cached = so.exists() and not force
    t0 = time.time()
    if cached:
        log = log_file.read_text() if log_file.exists() else ""
    else:
        tmp = cache / f".{so.name}.{os.getpid()}.tmp"
        cmd = nvcc_command(nvcc, cu_path, tmp, target, include_dirs)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        log = "$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise BuildError(f"nvcc failed on {cu_path} (exit {proc.returncode}):\n{log}")
        os.replace(tmp, so)
        log_file.write_text(log)
    seconds = time.time() - t0
    if publish:
        tmp = cu_path.parent / f".{sibling.name}.{os.getpid()}.tmp"
        shutil.copyfile(so, tmp)
        os.replace(tmp, sibling)
        sibling_key.write_text(key + "\n")
        sibling_log.write_text(log)
        so = sibling
    return BuildResult(cu_path, so, log, key, cached, seconds)


def parse_ptxas(log):
    """[(function, registers, stack, spill_stores, spill_loads, smem)] from an -Xptxas -v log."""
    funcs = {}
    order = []
    current = None
    props_for = None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            current = m.group(1)
            if current not in funcs:
                funcs[current] = {"regs": None, "stack": 0, "spill_st": 0, "spill_ld": 0, "smem": 0}
                order.append(current)
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            props_for = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and props_for in funcs:
            f = funcs[props_for]
            f["stack"], f["spill_st"], f["spill_ld"] = (int(x) for x in m.groups())
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and current in funcs:
            funcs[current]["regs"] = int(m.group(1))
            m2 = re.search(r"(\d+) bytes smem", line)
            if m2:
                funcs[current]["smem"] = int(m2.group(1))
    return [(name, funcs[name]["regs"], funcs[name]["stack"], funcs[name]["spill_st"], funcs[name]["spill_ld"],
             funcs[name]["smem"]) for name in order]


def demangle(names):
    names = list(names)
    for tool in ("cu++filt", "c++filt"):
        exe = shutil.which(tool) or (f"/usr/local/cuda/bin/{tool}" if os.path.exists(f"/usr/local/cuda/bin/{tool}") else None)
        if not exe:
            continue
        try:
            out = subprocess.run([exe], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=30).stdout
            lines = out.splitlines()
            if len(lines) == len(names):
                return lines
        except Exception:
            pass
    return names


def ptxas_table(results):
    """Markdown table of registers / spills for [BuildResult]."""
    rows = []
    for r in results:
        entries = parse_ptxas(r.log)
        pretty = demangle([e[0] for e in entries])
        for e, p in zip(entries, pretty):
            name = p if len(p) <= 70 else p[:67] + "..."
            rows.append(f"| {r.cu.name} | {name} | {e[1]} | {e[3]}/{e[4]} | {e[2]} | {e[5]} |")
    head = ["| file | kernel | regs | spill st/ld (B) | stack (B) | smem (B) |", "|---|---|---|---|---|---|"]
    return "\n".join(head + rows) if rows else "(no ptxas entries)"


def build_all(gpu_dir, jobs=8, nvcc=None, force=False, log_path=None, extra=()):
    """Builds every *.cu in gpu_dir (plus `extra` files) in parallel; returns (results, failures)."""
    gpu_dir = Path(gpu_dir)
    cus = sorted(gpu_dir.glob("*.cu")) if gpu_dir.is_dir() else []
    cus += [Path(e) for e in extra]
    results, failures = [], []
    log_chunks = []

    def one(cu):
        try:
            # Files under tools/gpu are not published next to themselves.
            publish = cu.parent.resolve() == gpu_dir.resolve()
            return compile_cu(cu, nvcc=nvcc, force=force, publish=publish), None
        except Exception as e:
            return None, (cu, str(e))

    t0 = time.time()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for res, fail in pool.map(one, cus):
            if res:
                results.append(res)
                state = "reused" if res.cached else f"built in {res.seconds:.1f}s"
                print(f"BUILD OK   {res.cu.name} ({state}) -> {res.so}", flush=True)
                log_chunks.append(f"===== {res.cu.name} ({state})\n{res.log}")
            else:
                failures.append(fail)
                print(f"BUILD FAIL {fail[0].name}", flush=True)
                log_chunks.append(f"===== {fail[0].name} FAILED\n{fail[1]}")
    table = ptxas_table(results)
    summary = f"\n## ptxas summary ({len(results)} built, {len(failures)} failed, {time.time() - t0:.1f}s)\n\n{table}\n"
    if log_path:
        with open(log_path, "a") as f:
            f.write("\n".join(log_chunks) + "\n" + summary)
    for cu, msg in failures:
        tail = "\n".join(msg.splitlines()[-25:])
        print(f"----- {cu.name}: nvcc errors (last lines)\n{tail}", file=sys.stderr)
    print(summary, flush=True)
    return results, failures


# --- loading and calling --------------------------------------------------------


class Launcher(_loader.Launcher):
    """One `tkc_<kernel>` entry point, called with descriptors: the tkc
    package's launcher (which reads `tkc_<kernel>_info()`), plus what the
    harness needs."""

    def __init__(self, lib, kernel, n_tensors=None, n_consts=None):
        try:
            info_fn = getattr(lib, f"tkc_{kernel}_info")
        except AttributeError:
            raise TkcError(f"symbol tkc_{kernel}_info not found in {lib._name}", kernel) from None
        info_fn.argtypes = []
        info_fn.restype = ctypes.POINTER(_abi.KernelInfoC)
        super().__init__(lib, _loader.read_info(info_fn().contents))
        self.kernel = kernel
        got = (len(self.info.tensors), len(self.info.constants))
        if (n_tensors, n_consts) != (None, None) and got != (n_tensors, n_consts or 0):
            raise TkcError(f"tkc_{kernel} takes {got[0]} tensors and {got[1]} constants, not {n_tensors} and "
                           f"{n_consts}", kernel)

    def checks_only(self, descs, consts=()):
        """The status of the argument checks where no kernel can run (no GPU,
        fake pointers): a failed device query or launch means every
        structural check passed (0)."""
        code = self.raw(descs, consts, None)
        return 0 if code in STATUS_PAST_STRUCTURAL_CHECKS else code

    def __call__(self, descs, consts=(), stream=None):
        self.check(self.raw(descs, consts, stream))


class SequenceLauncher:
    """Several launchers of one library called one after the other as one
    workload (e.g. a preprocessing kernel, then the main ones). Each step is
    (Launcher, indices of its tensors, indices of its constants) into the
    workload's tensor and constant lists; the first non-zero status stops it."""

    def __init__(self, name, steps):
        self.kernel = name
        self.steps = steps
        self.failed = None
        self.failed_tensors = None  # tensors first used by the step that returned a status

    def error_message(self):
        return self.failed.error_message() if self.failed else ""

    def _pick(self, step, descs, consts):
        launcher, tensors, const_idx = step
        return [descs[i] for i in tensors], [consts[i] for i in const_idx]

    def raw(self, descs, consts=(), stream=None):
        self.failed = self.failed_tensors = None
        earlier = set()
        for step in self.steps:
            d, c = self._pick(step, descs, consts)
            code = step[0].raw(d, c, stream)
            if code != 0:
                self.failed = step[0]
                self.failed_tensors = [i for i in step[1] if i not in earlier]
                return code
            earlier.update(step[1])
        return 0

    def checks_only(self, descs, consts=()):
        """The status of the argument checks where no kernel can run (no GPU):
        each step's own checks in turn, a step whose launch failed counting as
        passed; the first step that refuses gives the status."""
        self.failed = self.failed_tensors = None
        for step in self.steps:
            code = step[0].checks_only(*self._pick(step, descs, consts))
            if code != 0:
                self.failed = step[0]
                return code
        return 0

    def __call__(self, descs, consts=(), stream=None):
        code = self.raw(descs, consts, stream)
        if code != 0:
            raise error_for(code, self.failed.kernel, self.error_message())

    def bind(self, descs, consts=(), stream=None):
        calls = [step[0].bind(*self._pick(step, descs, consts), stream) for step in self.steps]

        def call():
            for c in calls:
                c()
            return calls

        return call


class KernelLibrary:
    def __init__(self, so_path, build=None):
        self.path = Path(so_path)
        self.build = build
        self.lib = ctypes.CDLL(str(self.path))

    def launcher(self, kernel, n_tensors=None, n_consts=None):
        return Launcher(self.lib, kernel, n_tensors, n_consts)

    def has(self, symbol):
        return hasattr(self.lib, symbol)


def load_library(cu_path, **kw):
    res = compile_cu(cu_path, **kw)
    return KernelLibrary(res.so, build=res)


def find_cu_files(gpu_dir, stem, targets=None):
    """{target: path} of gpu_dir/STEM.TARGET.cu, in ARCH_FLAGS order, plus
    variants STEM@VARIANT.TARGET.cu keyed TARGET@VARIANT (the same kernel
    compiled from another schedule, timed side by side)."""
    gpu_dir = Path(gpu_dir)
    found = {}
    for t in ARCH_FLAGS:
        if targets and t not in targets:
            continue
        p = gpu_dir / f"{stem}.{t}.cu"
        if p.exists():
            found[t] = p
        for v in sorted(gpu_dir.glob(f"{stem}@*.{t}.cu")):
            found[f"{t}@{v.name[len(stem) + 1:-len(t) - 4]}"] = v
    return found


# --- timing: tkc.bench (Timing, sets_for_l2, l2_bytes_of_device, median_time_interleaved) ---


# --- command line ---------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description="Build tkc-generated .cu files into shared libraries.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build every DIR/NAME.TARGET.cu into DIR/NAME.TARGET.so")
    b.add_argument("gpu_dir", nargs="?", default=str(DEFAULT_GPU_DIR), help="folder of generated .cu (default build/gpu)")
    b.add_argument("--jobs", "-j", type=int, default=8, help="parallel nvcc processes (default 8)")
    b.add_argument("--nvcc", default=None, help="nvcc path (default: $NVCC, PATH, /usr/local/cuda/bin/nvcc)")
    b.add_argument("--log", default=None, help="append the full nvcc/ptxas output here")
    b.add_argument("--force", action="store_true", help="rebuild even if an identical build exists")
    b.add_argument("--selftest", action="store_true", help="also build tools/gpu/selftest_abi.cu (into the cache)")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        extra = [Path(__file__).resolve().parent / "selftest_abi.cu"] if args.selftest else []
        if not Path(args.gpu_dir).is_dir() and not extra:
            print(f"no folder {args.gpu_dir}", file=sys.stderr)
            return 2
        results, failures = build_all(args.gpu_dir, args.jobs, args.nvcc, args.force, args.log, extra)
        if not results and not failures:
            print(f"no .cu files in {args.gpu_dir}", file=sys.stderr)
            return 2
        return 1 if failures else 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
