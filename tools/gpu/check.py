#!/usr/bin/env python3
"""Correctness and argument-check tests of tkc-generated kernels on a GPU.

For every workload (tools/gpu/workloads.py) and every generated file
<gpu-dir>/<stem>.<target>.cu found: build (cached), then for each check size
run the launcher on fresh random inputs with NaN-poisoned outputs and compare
against a float64 reference: rel = |out - ref| / |ref| (NaN fails; any output
element left NaN fails). Then the launcher's argument checks: a null data
pointer, a wrong rank, an inner stride of 2, a pointer offset by one element,
inconsistent sizes and an unsupported size must each return the documented
status without launching (the poisoned outputs stay NaN).

One line per case: PASS|FAIL|SKIP name size detail. Exit status 1 if any FAIL.

Examples:
  python3 tools/gpu/check.py                      # all workloads found in build/gpu + selftest
  python3 tools/gpu/check.py --only gemm --targets sm_80
  python3 tools/gpu/check.py --selftest           # the harness's own ABI kernel only
  python3 tools/gpu/check.py --host-only          # no GPU/torch: status codes with fake pointers
  python3 tools/gpu/check.py --list               # what would run
"""

import argparse
import math
import os
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import tkc_gpu as tg  # noqa: E402
import workloads as wl  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("Examples:")[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu-dir", default=str(tg.DEFAULT_GPU_DIR), help="folder of generated NAME.TARGET.cu (default build/gpu)")
    ap.add_argument("--only", default=None, help="comma list of workloads: " + ",".join(wl.BY_NAME) + " (selftest = axpy)")
    ap.add_argument("--targets", default=None, help="comma list of targets to test (default: every one found)")
    ap.add_argument("--selftest", action="store_true", help="run only the harness self-test (tools/gpu/selftest_abi.cu)")
    ap.add_argument("--no-selftest", action="store_true", help="leave out the self-test (included by default)")
    ap.add_argument("--host-only", action="store_true",
                    help="no GPU or torch needed: build, check the descriptor layout and the argument-check status codes with fake pointers")
    ap.add_argument("--skip-argchecks", action="store_true", help="only the numerical checks")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: fresh each run, printed)")
    ap.add_argument("--nvcc", default=None, help="nvcc path")
    ap.add_argument("--check-peers", action="store_true",
                    help="also hold the library peers (cuBLAS, SDPA, layer_norm) to the same float64 references: tests the references")
    ap.add_argument("--list", action="store_true", help="list workloads, sizes and the files found; run nothing")
    args = ap.parse_args(argv)
    if args.selftest:
        args.only, args.no_selftest = "selftest", False
    args.target_list = [t.strip() for t in args.targets.split(",")] if args.targets else None
    return args


class Report:
    def __init__(self):
        self.counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
        self.failures = []

    def line(self, status, name, size, detail=""):
        self.counts[status] += 1
        text = f"{status} {name} {size} {detail}".rstrip()
        if status == "FAIL":
            self.failures.append(text)
        print(text, flush=True)

    def summary(self):
        c = self.counts
        out = [f"check summary: {c['PASS']} passed, {c['FAIL']} failed, {c['SKIP']} skipped"]
        out += ["  " + f for f in self.failures]
        return "\n".join(out)


def compact(label):
    return label.replace(" ", ",")


def short(msg, n=160):
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= n else msg[: n - 3] + "..."


# --- building and loading ---------------------------------------------------------


def load_all(selected, args, report):
    """[(workload, target, Launcher or None, KernelLibrary)] for every file found."""
    loaded = []
    for w in selected:
        srcs = wl.sources(w, args.gpu_dir, args.target_list)
        if not srcs:
            report.line("SKIP", w.name, "-", f"no {w.stem}.<target>.cu in {args.gpu_dir}")
            continue
        for target, cu in srcs.items():
            name = f"{w.name}.{target}"
            try:
                lib = tg.load_library(cu, target=target, nvcc=args.nvcc)
                launcher = w.make_launcher(lib)
                loaded.append((w, target, launcher, lib))
            except Exception as e:
                report.line("FAIL", name, "build", short(e, 400))
    return loaded


# --- argument checks ----------------------------------------------------------------


def contiguous_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= int(s)
    return list(reversed(strides))


def arg_cases(w):
    """(label, size, shape overrides, param to corrupt, corruption, expected status)."""
    base = w.argcheck_size
    first_in = next(p for p in w.params if not p.output)
    first_out = next(p for p in w.params if p.output)
    cases = [(f"null-{p.name}", base, {}, p.name, "null", 1) for p in w.params]
    cases += [(f"rank+1-{first_in.name}", base, {}, first_in.name, "rank", 2),
              (f"rank+1-{first_out.name}", base, {}, first_out.name, "rank", 2),
              (f"inner-stride-2-{first_in.name}", base, {}, first_in.name, "stride", 3),
              (f"inner-stride-2-{first_out.name}", base, {}, first_out.name, "stride", 3),
              (f"misaligned-{first_in.name}", base, {}, first_in.name, "misalign", 4),
              (f"abi-version-{first_in.name}", base, {}, first_in.name, "version", 7),
              (f"wrong-dtype-{first_in.name}", base, {}, first_in.name, "dtype", 8),
              (f"wrong-dtype-{first_out.name}", base, {}, first_out.name, "dtype", 8)]
    # Outputs whose launchers need more than one element's alignment on
    # every target (e.g. an f32 tensor that pairs of sums are added to).
    cases += [(f"misaligned-{name}", base, {}, name, "misalign", 4) for name in w.misaligned_outputs]
    cases += [(label.replace(" ", "-"), size, over, None, None, code) for label, size, over, code in w.extra_arg_cases]
    return cases


# A dtype of the same size as each (an f16 tensor in a bf16 kernel was once
# launched and read as bf16).
OTHER_DTYPE = {"bf16": "f16", "f16": "bf16", "f32": "i32", "f8e4m3": "f8e5m2", "f8e5m2": "f8e4m3"}


def corrupted_descs(w, size, overrides, target_param, how, base_of):
    """Descriptors for one argument-check case. base_of(param, shape) gives the address of a
    buffer of at least 2*numel+64 elements, so every corrupted view stays inside real memory."""
    shapes = w.shapes(size)
    descs = []
    for p in w.params:
        shape = list(overrides.get(p.name, shapes[p.name]))
        strides = contiguous_strides(shape)
        ptr = base_of(p, shape)
        dtype, version = p.dtype, None
        if p.name == target_param:
            if how == "null":
                ptr = 0
            elif how == "rank":
                strides = [wl.numel(shape)] + strides
                shape = [1] + shape
            elif how == "stride":
                strides = [2 * s for s in strides]
            elif how == "misalign":
                ptr += wl.DTYPE_BYTES[p.dtype]
            elif how == "dtype":
                dtype = OTHER_DTYPE[p.dtype]
            elif how == "version":
                version = tg.TKC_ABI_VERSION + 1
            elif how == "host":
                ptr = host_buffer(wl.numel(shape) * wl.DTYPE_BYTES[p.dtype] + 64)
        device = 1 if p.name == target_param and how == "device-field" else 0
        desc = tg.make_desc(ptr, shape, strides, dtype=dtype, device=device)
        if version is not None:
            desc.abi_version = version
        descs.append(desc)
    return descs


def run_argchecks_host(w, target, launcher, report):
    name = f"{w.name}.{target}"
    slots = {}

    def fake_base(p, shape):  # distinct, 4 KiB-aligned, never dereferenced
        slots.setdefault(p.name, len(slots))
        return 0x7F0000000000 + slots[p.name] * (1 << 32)

    for label, size, over, param, how, want in arg_cases(w):
        descs = corrupted_descs(w, size, over, param, how, fake_base)
        # Nothing can launch here: a launcher (or a step of a sequence) whose
        # launch fails has passed its checks, and the next step runs.
        code = launcher.checks_only(descs, w.consts(size))
        msg = launcher.error_message() if code else ""
        ok = code == want and (code == 0 or msg.strip())
        detail = f"status={code} want={want}" + (f" msg={short(msg, 100)!r}" if code else "")
        if code == want and not msg.strip():
            detail += " (empty error message)"
        report.line("PASS" if ok else "FAIL", name, f"argcheck:{label}", detail)


# Host memory the device cases point at, kept alive for the whole run.
_HOST_BUFFERS = []


def host_buffer(nbytes):
    import ctypes
    _HOST_BUFFERS.append(ctypes.create_string_buffer(nbytes))
    return ctypes.addressof(_HOST_BUFFERS[-1])


def device_cases(w):
    """Cases only a GPU can answer: host memory where device memory is
    needed, and a descriptor that names another device than its memory's."""
    if not getattr(w, "checks_memory", True):
        return []
    first_in = next(p for p in w.params if not p.output)
    return [(f"host-memory-{first_in.name}", w.argcheck_size, {}, first_in.name, "host", 9),
            (f"device-field-{first_in.name}", w.argcheck_size, {}, first_in.name, "device-field", 9)]


def run_argchecks_device(w, target, launcher, report, stream):
    import torch
    name = f"{w.name}.{target}"
    for label, size, over, param, how, want in arg_cases(w) + device_cases(w):
        buffers = {}

        def real_base(p, shape):
            n = 2 * wl.numel(shape) + 64
            t = torch.empty(n, device="cuda", dtype=wl.torch_dtype(p.dtype))
            if p.output:
                t.fill_(float("nan"))
            elif t.element_size() == 1 and t.is_floating_point():  # 8-bit floats draw no random numbers
                t.copy_(torch.randn(n, device="cuda"))
            elif t.is_floating_point():
                t.normal_()
            else:  # integer inputs (targets, indices): in range of any size
                t.zero_()
            buffers[p.name] = (p, t)
            return t.data_ptr()

        try:
            descs = corrupted_descs(w, size, over, param, how, real_base)
            torch.cuda.synchronize()
            code = launcher.raw(descs, w.consts(size), stream)
            msg = launcher.error_message() if code else ""
            torch.cuda.synchronize()
            # A sequence of launchers: earlier steps ran on valid arguments;
            # the step that refused must not have written its outputs.
            own = getattr(launcher, "failed_tensors", None)
            owned = None if own is None else {w.params[i].name for i in own}
            written = sum(int((~torch.isnan(t)).sum().item()) for p, t in buffers.values()
                          if p.output and (owned is None or p.name in owned))
            ok = code == want and written == 0 and bool(msg.strip())
            detail = f"status={code} want={want}"
            if written:
                detail += f" LAUNCHED ({written} output elements written)"
            if code and not msg.strip():
                detail += " (empty error message)"
            elif code:
                detail += f" msg={short(msg, 100)!r}"
            report.line("PASS" if ok else "FAIL", name, f"argcheck:{label}", detail)
        except Exception as e:
            report.line("FAIL", name, f"argcheck:{label}", "exception: " + short(e, 300))
            if not device_alive():
                return False
    return True


def check_layout(lib, name, report):
    """The selftest library reports sizeof/offsetof of tkc_tensor as its C compiler sees it."""
    import ctypes
    if not lib.has("tkc_selftest_layout"):
        return
    buf = (ctypes.c_int64 * 16)()
    lib.lib.tkc_selftest_layout.argtypes = [ctypes.c_void_p]
    lib.lib.tkc_selftest_layout.restype = ctypes.c_int
    n = lib.lib.tkc_selftest_layout(ctypes.cast(buf, ctypes.c_void_p))
    got = tuple(buf[:n])
    want = tg.expected_layout()
    hdr = "runtime/tkc_host.h"
    if lib.has("tkc_selftest_uses_runtime_header"):
        lib.lib.tkc_selftest_uses_runtime_header.restype = ctypes.c_int
        if not lib.lib.tkc_selftest_uses_runtime_header():
            hdr = "local fallback definition"
    report.line("PASS" if got == want else "FAIL", name, "layout",
                f"sizeof/offsets C={list(got)} ctypes={list(want)} ({hdr})")


def device_alive():
    import torch
    try:
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1).item()
        return True
    except Exception:
        return False


# --- numerical checks ---------------------------------------------------------------


def widened(t, pad):
    """t as a view of NaN-filled rows `pad` elements longer: (view, whole)."""
    import torch
    whole = torch.full(tuple(t.shape[:-1]) + (t.shape[-1] + pad,), float("nan"), dtype=t.dtype, device=t.device)
    view = whole[..., :t.shape[-1]]
    view.copy_(t)
    return view, whole


def run_case(w, target, launcher, size, report, stream):
    import torch
    name = f"{w.name}.{target}"
    label = compact(w.label(size))
    # Tensors as views of rows longer by `pad[name]` elements, padded with
    # NaN: a kernel that reads or writes past a row's end shows.
    pads = size.get("pad", {})
    if pads:
        label += " rows+" + ",".join(f"{n}{p}" for n, p in pads.items())
    wholes = {}
    try:
        inputs = w.make_inputs(size)
        outputs = w.make_outputs(size)
        for tensors_ in (inputs, outputs):
            for pname, pad in pads.items():
                if pname in tensors_:
                    tensors_[pname], wholes[pname] = widened(tensors_[pname], pad)
        tensors = {**inputs, **outputs}
        descs = [tg.from_torch(tensors[p.name]) for p in w.params]
        torch.cuda.synchronize()
        t0 = time.time()
        launcher(descs, w.consts(size), stream)
        torch.cuda.synchronize()
        ms = (time.time() - t0) * 1e3
        ref = w.reference(inputs, size)
        ok, parts = True, []
        for p in w.params:
            if not p.output or p.scratch:
                continue
            out, r = outputs[p.name], ref[p.name]
            unwritten = int(torch.isnan(out).sum().item())
            diff = out.double() - r
            rn = r.norm().item()
            rel = diff.norm().item() / rn if rn > 0 else diff.norm().item()
            maxabs = diff.abs().max().item() if diff.numel() else 0.0
            tol = w.tolerances.get(p.name, 1e-2)
            past_end = 0
            if p.name in wholes:
                past_end = int((~torch.isnan(wholes[p.name][..., out.shape[-1]:])).sum().item())
            good = unwritten == 0 and past_end == 0 and math.isfinite(rel) and rel <= tol
            ok &= good
            part = f"{p.name}={rel:.2e}"
            if p.dtype == "f32" or not good:
                part += f"(maxabs {maxabs:.1e})"
            if unwritten:
                part += f"[{unwritten} unwritten]"
            if past_end:
                part += f"[{past_end} written past the rows' end]"
            if not good:
                part += f"[tol {tol:g}]"
            parts.append(part)
        report.line("PASS" if ok else "FAIL", name, label, " ".join(parts) + f" ({ms:.1f} ms incl. sync)")
        del inputs, outputs, tensors, ref
        return True
    except tg.TkcError as e:
        report.line("FAIL", name, label, f"status={e.code} ({tg.STATUS_NAMES.get(e.code, '?')}): {short(e.message, 200)}")
        return True
    except Exception as e:
        report.line("FAIL", name, label, "exception: " + short(e, 300))
        traceback.print_exc(limit=3)
        return device_alive()


def run_peer_checks(w, report):
    """The benchmark peers against the float64 reference, main output only."""
    import warnings
    for size in w.check_sizes:
        label = compact(w.label(size))
        try:
            inputs = w.make_inputs(size)
            ref = w.reference(inputs, size)[w.main_output]
            tol = w.tolerances.get(w.main_output, 1e-2)
            for pname, fn in w.peers(size).items():
                if pname in w.timing_only_peers:
                    report.line("SKIP", f"{w.name}.peer-{pname}", label, "timed only: it computes less than the kernel")
                    continue
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        out = fn(inputs)
                except Exception as e:
                    report.line("SKIP", f"{w.name}.peer-{pname}", label, "unavailable: " + short(e, 120))
                    continue
                rel = (out.double() - ref).norm().item() / ref.norm().item()
                good = math.isfinite(rel) and rel <= tol
                report.line("PASS" if good else "FAIL", f"{w.name}.peer-{pname}", label, f"{w.main_output}={rel:.2e}")
        except Exception as e:
            report.line("FAIL", f"{w.name}.peer", label, "exception: " + short(e, 300))
            if not device_alive():
                return False
    return True


# --- main ------------------------------------------------------------------------------


def list_only(selected, args):
    for w in selected:
        srcs = wl.sources(w, args.gpu_dir, args.target_list)
        files = ", ".join(f"{t}: {p}" for t, p in srcs.items()) or f"(none: no {w.stem}.<target>.cu in {args.gpu_dir})"
        print(f"{w.name}: launcher tkc_{w.name}({', '.join(p.name for p in w.params)}"
              f"{''.join(', ' + c for c in w.const_names)}, stream); files {files}")
        for s in w.check_sizes:
            print(f"  check {compact(w.label(s))}")
        for label, size, over, param, how, want in arg_cases(w):
            print(f"  argcheck {label} -> status {want}")
    return 0


def main(argv=None):
    args = parse_args(argv)
    selected = wl.select(args.only, include_selftest=not args.no_selftest)
    if args.list:
        return list_only(selected, args)
    report = Report()
    t_start = time.time()

    if args.host_only:
        print("host-only: descriptor layout and argument-check status codes with fake pointers (nothing launches)")
        for w, target, launcher, lib in load_all(selected, args, report):
            check_layout(lib, f"{w.name}.{target}", report)
            run_argchecks_host(w, target, launcher, report)
        print(report.summary())
        return 1 if report.counts["FAIL"] else 0

    import torch
    if not torch.cuda.is_available():
        print("no CUDA device visible to torch (use --host-only on a machine without a GPU)", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    torch.manual_seed(seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"device {torch.cuda.get_device_name()} | torch {torch.__version__} | seed {seed}", flush=True)
    stream = tg.current_stream_handle()

    loaded = load_all(selected, args, report)
    alive = True
    for w, target, launcher, lib in loaded:
        check_layout(lib, f"{w.name}.{target}", report)
        for size in w.check_sizes:
            if "targets" in size and target.split("@")[0] not in size["targets"]:
                continue
            if not alive:
                report.line("FAIL", f"{w.name}.{target}", compact(w.label(size)), "not run: CUDA context lost earlier")
                continue
            alive = run_case(w, target, launcher, size, report, stream)
    if args.check_peers:
        for w in selected:
            if alive:
                alive = run_peer_checks(w, report)
    # Last: a launcher that wrongly launches on bad arguments may fault and end the context.
    if not args.skip_argchecks:
        for w, target, launcher, lib in loaded:
            if alive:
                alive = run_argchecks_device(w, target, launcher, report, stream)
            else:
                report.line("FAIL", f"{w.name}.{target}", "argcheck:*", "not run: CUDA context lost earlier")
    print(f"check took {time.time() - t_start:.1f}s")
    print(report.summary())
    if not any(w is not wl.SELFTEST for w, *_ in loaded):
        print("warning: no generated kernels were tested (only the self-test)")
    return 1 if report.counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
