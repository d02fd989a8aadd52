"""Calls the launchers of a library that tools/emu/build.py built, on inputs
that tkc-interp saved, and compares the outputs with tkc-interp's results.

A run is a kernel (as tkc-interp names it: `attn_fwd__D64__causal1`) and a
folder with `in/` (--save-inputs) and `ref/` (--outputs). Tensors live in
host memory with each row padded to 16 bytes, as the GPU checks lay them
out; the padding is filled with a pattern that must survive the launch (a
write past a row's end is an error). The emulated runtime aborts the
process on an error it detects (a barrier not every thread reaches, an
access outside shared memory), so `run_library` runs the library in a
child process and starts a new one after the run that killed it.

The comparison (`compare`) is the GPU checks' as well (tools/gpu/gen_check.py).
"""

import ctypes
import json
import math
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "python"))

from tkc import _abi, _loader  # noqa: E402

# struct code (None: no Python float of its own) and bytes of each element type.
ELEMENT = {"f32": ("f", 4), "f16": ("e", 2), "bf16": (None, 2), "i32": ("i", 4), "f8e4m3": (None, 1),
           "f8e5m2": (None, 1)}
EXACT = ("i32", "f8e4m3", "f8e5m2")
PADDING_BYTE = 0xA5


def decode(dtype, raw):
    """The values of raw little-endian elements (what tkc-interp writes);
    8-bit floats as their codes, which must match exactly."""
    code, size = ELEMENT[dtype]
    n = len(raw) // size
    if dtype == "bf16":
        return list(struct.unpack(f"<{n}f", b"".join(b"\0\0" + raw[i:i + 2] for i in range(0, len(raw), 2))))
    if code is None:
        return [float(b) for b in raw]
    return list(struct.unpack(f"<{n}{code}", raw))


def compare(got_raw, ref_raw, dtype, tol):
    """(ok, detail) of one output against the reference: NaN in the same
    places, infinities equal, the rest within `tol` of the largest finite
    reference magnitude (integers and 8-bit codes: equal)."""
    got, ref = decode(dtype, got_raw), decode(dtype, ref_raw)
    if len(got) != len(ref):
        return False, f"{len(got)} elements, the reference {len(ref)}"
    scale = max([abs(r) for r in ref if math.isfinite(r)] + [1e-30])
    worst, where = 0.0, None
    for i, (g, r) in enumerate(zip(got, ref)):
        if math.isnan(g) != math.isnan(r) or (math.isinf(r) or math.isinf(g)) and g != r:
            return False, f"element {i}: {g} where the reference has {r}"
        if math.isfinite(r) and abs(g - r) / scale > worst:
            worst, where = abs(g - r) / scale, i
    if where is None:
        return True, "equal"
    limit = 0 if dtype in EXACT else tol
    detail = f"largest relative difference {worst:.3g} (element {where}: {got[where]} vs {ref[where]})"
    return worst <= limit, detail


_libc = ctypes.CDLL(None)
_libc.aligned_alloc.restype = ctypes.c_void_p
_libc.aligned_alloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
_libc.free.argtypes = [ctypes.c_void_p]


class HostTensor:
    """A tensor in host memory, rows padded to 16 bytes, in an allocation of
    exactly its size (so that AddressSanitizer sees accesses past it), and
    its descriptor."""

    def __init__(self, raw, dtype, dims):
        self.size = ELEMENT[dtype][1]
        self.cols = dims[-1] if dims else 1
        self.rows = math.prod(dims[:-1]) if dims else 1
        self.row_bytes = -(-self.cols * self.size // 16) * 16
        self.bytes = max(16, self.rows * self.row_bytes)
        self.base = _libc.aligned_alloc(16, self.bytes)
        if not self.base:
            raise MemoryError(f"cannot allocate {self.bytes} bytes")
        ctypes.memset(self.base, PADDING_BYTE, self.bytes)
        used = self.cols * self.size
        for r in range(self.rows):
            ctypes.memmove(self.base + r * self.row_bytes, raw[r * used:(r + 1) * used], used)
        strides, stride = [], self.row_bytes // self.size
        for d in reversed(dims[:-1]):
            strides.insert(0, stride)
            stride *= d
        self.desc = _abi.make_tensor(self.base, dims, strides + ([1] if dims else []), dtype, 0, len(dims))

    def read(self):
        used = self.cols * self.size
        return b"".join(ctypes.string_at(self.base + r * self.row_bytes, used) for r in range(self.rows))

    def padding_intact(self):
        used = self.cols * self.size
        pad = self.row_bytes - used
        expected = bytes([PADDING_BYTE]) * pad
        return all(ctypes.string_at(self.base + r * self.row_bytes + used, pad) == expected for r in range(self.rows))

    def __del__(self):
        if getattr(self, "base", None):
            _libc.free(self.base)
            self.base = None


def launcher_of(lib, name):
    """(launcher, argument constants) of the kernel tkc-interp names `name`:
    the launcher is the name's part before `__`, and each argument constant C
    comes from a `__C<value>` part (None where the name gives none)."""
    base, *parts = name.split("__")
    info_fn = getattr(lib, f"tkc_{base}_info")
    info_fn.argtypes = []
    info_fn.restype = ctypes.POINTER(_abi.KernelInfoC)
    launcher = _loader.Launcher(lib, _loader.read_info(info_fn().contents))
    consts = []
    for c in launcher.info.constants:
        value = next((int(m.group(1)) for p in parts if (m := re.fullmatch(re.escape(c) + r"(-?\d+)", p))), None)
        consts.append(value)
    return launcher, (None if None in consts else consts)


def run_kernel(lib, name, folder, tol, consts=None):
    """(ok, detail) of one launch on folder/in against folder/ref; the
    argument constants are `consts` or those the name gives."""
    folder = Path(folder)
    launcher, named = launcher_of(lib, name)
    consts = named if consts is None else consts
    if consts is None:
        raise ValueError(f"{name} does not give every constant of the launcher ({', '.join(launcher.info.constants)})")
    params = json.loads((folder / "in" / "tensors.json").read_text())["tensors"]
    tensors = [HostTensor((folder / "in" / f"{p['name']}.bin").read_bytes(), p["dtype"], p["dims"]) for p in params]
    lib.tkc_emu_forget_memory()
    for t in tensors:
        lib.tkc_emu_register_memory(ctypes.c_void_p(t.base), ctypes.c_size_t(t.bytes))
    status = launcher.raw([t.desc for t in tensors], consts, None)
    if status:
        return False, f"launcher status {status}: {launcher.error_message()}"
    ok, details = True, []
    for p, t in zip(params, tensors):
        if not t.padding_intact():
            ok = False
            details.append(f"{p['name']}: written past the end of a row")
        if p["out"]:
            good, detail = compare(t.read(), (folder / "ref" / f"{p['name']}.bin").read_bytes(), p["dtype"], tol)
            ok &= good
            details.append(f"{p['name']}: {detail}")
    return ok, "; ".join(details)


def _child(spec_path):
    """The child process: one JSON line per run, as each finishes."""
    spec = json.loads(Path(spec_path).read_text())
    lib = ctypes.CDLL(spec["so"])
    for run in spec["runs"]:
        try:
            ok, detail = run_kernel(lib, run["kernel"], run["dir"], spec["tol"], run.get("consts"))
        except Exception as e:  # noqa: BLE001  (a bad run must not stop the others)
            ok, detail = False, f"{type(e).__name__}: {e}"
        print(json.dumps({**run, "ok": ok, "detail": detail}), flush=True)
    return 0


def asan_runtime():
    """g++'s AddressSanitizer runtime, which a sanitized library needs loaded
    before anything else (LD_PRELOAD), or None."""
    try:
        out = subprocess.run([os.environ.get("CXX", "g++"), "-print-file-name=libasan.so"], capture_output=True,
                             text=True).stdout.strip()
    except OSError:
        return None
    return out if os.path.isabs(out) and os.path.exists(out) else None


def run_library(so, runs, tol=2e-2, order="forward", sanitized=False, timeout=900):
    """Results ({**run, ok, detail}) of `runs` ([{kernel, dir}]) on the
    library `so`, each child process taking the runs its predecessor left."""
    env = dict(os.environ, TKC_EMU_ORDER=order)
    if sanitized:
        runtime = asan_runtime()
        if not runtime:
            raise RuntimeError("a sanitized library needs g++'s libasan")
        env.update(LD_PRELOAD=runtime, ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")
    results, left = [], list(runs)
    spec_path = Path(so).with_suffix(".runs.json")
    while left:
        spec_path.write_text(json.dumps({"so": str(so), "runs": left, "tol": tol}))
        try:
            proc = subprocess.run([sys.executable, __file__, str(spec_path)], capture_output=True, text=True, env=env,
                                  timeout=timeout)
            out, err, code = proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as e:
            out, err, code = (e.stdout or b"").decode(), f"timed out after {timeout} s", None
        done = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        results += done
        left = left[len(done):]
        if left:  # the child died in the next run
            lines = [ln for ln in err.splitlines() if "tkc-emu" in ln or "ERROR" in ln or "SUMMARY" in ln]
            detail = "; ".join(lines[-4:]) or err.strip()[-300:] or f"exit status {code}"
            results.append({**left[0], "ok": False, "detail": f"the emulated kernel stopped: {detail}"})
            left = left[1:]
    return results


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))
