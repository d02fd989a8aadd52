#!/usr/bin/env python3
"""Host time of one operator call from Python: tkc.ops eagerly (the
direct path), the same kernels through their torch.library custom_ops (the
path torch.compile traces), the bare launcher, and PyTorch's own operator,
side by side. Shapes are small, so that the GPU finishes each kernel before
the host issues the next and the figure is the host's time per call.

    python3 tools/gpu/host_time.py [--calls N] [--rounds R] [--package DIR]

Prints microseconds per call (median of R rounds of N calls each, the
rounds of all rows interleaved). The launcher's parts get rows of their
own: packing the descriptors, the ctypes call with packed arguments, and
the CUDA runtime calls a launcher makes per tensor. --package takes the
tkc package from DIR (a folder holding tkc/) instead of python/."""

import argparse
import random
import statistics
import sys
import time
from pathlib import Path


def _package_dir():
    if "--package" in sys.argv:
        return sys.argv[sys.argv.index("--package") + 1]
    return str(Path(__file__).resolve().parents[2] / "python")


sys.path.insert(0, _package_dir())

import ctypes  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tkc.ops  # noqa: E402
from tkc import _loader  # noqa: E402


def cuda_runtime_rows(ptr):
    """Rows timing the runtime calls a launcher makes, through the CUDA
    runtime library torch loaded (none where it is linked statically)."""
    maps = Path("/proc/self/maps").read_text().split()
    libs = sorted({m for m in maps if "libcudart" in m})
    if not libs:
        return []
    rt = ctypes.CDLL(libs[0])
    attrs = ctypes.create_string_buffer(64)
    device = ctypes.c_int()
    value = ctypes.c_int()
    return [
        ("CUDA runtime", "cudaPointerGetAttributes", lambda: rt.cudaPointerGetAttributes(attrs, ctypes.c_void_p(ptr))),
        ("CUDA runtime", "cudaGetDevice", lambda: rt.cudaGetDevice(ctypes.byref(device))),
        ("CUDA runtime", "cudaDeviceGetAttribute", lambda: rt.cudaDeviceGetAttribute(ctypes.byref(value), 75, 0)),
    ]


def launcher_part_rows(launcher, tensors, stream):
    packed = _loader.pack(tensors)
    if packed is None or not hasattr(launcher, "packed_fn"):
        return []
    buf, _ = packed
    size = _loader._PACKED.size
    args = [ctypes.addressof(buf) + i * size for i in range(len(tensors))] + [stream]
    return [
        ("layernorm fwd", "pack only", lambda: _loader.pack(tensors)),
        # buf stays referenced by the lambda: args holds only its addresses.
        ("layernorm fwd", "ctypes call only", lambda buf=buf: launcher.packed_fn(*args)),
    ]


def forward_backward(fn, leaves):
    def call():
        out = fn(*leaves)
        out.backward(torch.ones_like(out))
    return call


def rows(dev):
    bf16 = dict(device=dev, dtype=torch.bfloat16)
    x = torch.randn(16, 768, **bf16, requires_grad=True)
    w, b = (torch.randn(768, **bf16, requires_grad=True) for _ in range(2))
    x0, w0, b0 = (t.detach() for t in (x, w, b))
    y = torch.empty_like(x0)
    mean, rstd = (torch.empty(16, device=dev) for _ in range(2))
    launcher = tkc.ops.library("layernorm").layernorm
    q, k, v = (torch.randn(1, 2, 64, 64, **bf16, requires_grad=True) for _ in range(3))
    logits = torch.randn(16, 1000, **bf16, requires_grad=True)
    t = torch.randint(0, 1000, (16,), device=dev)
    t32 = t.to(torch.int32)
    lx = torch.randn(16, 256, **bf16, requires_grad=True)
    lw = torch.randn(256, 256, **bf16, requires_grad=True)
    lb = torch.randn(256, **bf16, requires_grad=True)
    custom_ln = torch.ops.tkc.layernorm

    def custom_xent(x):
        loss, _ = torch.ops.tkc.cross_entropy(x, t32)
        return loss.sum()

    stream = torch.cuda.current_stream(dev).cuda_stream
    return cuda_runtime_rows(x0.data_ptr()) + launcher_part_rows(launcher, (x0, w0, b0, y, mean, rstd), stream) + [
        ("layernorm fwd", "launcher", lambda: launcher(x0, w0, b0, y, mean, rstd)),
        ("layernorm fwd", "tkc.ops", lambda: tkc.ops.layernorm(x0, w0, b0)),
        ("layernorm fwd", "custom_op", lambda: custom_ln(x0, w0, b0)),
        ("layernorm fwd", "torch", lambda: F.layer_norm(x0, (768,), w0, b0)),
        ("layernorm bwd", "tkc.ops, no autograd", lambda: tkc.ops.layernorm_bwd(y, x0, w0, mean, rstd)),
        ("layernorm fwd+bwd", "tkc.ops", forward_backward(tkc.ops.layernorm, (x, w, b))),
        ("layernorm fwd+bwd", "custom_op", forward_backward(lambda *a: custom_ln(*a)[0], (x, w, b))),
        ("layernorm fwd+bwd", "torch", forward_backward(lambda *a: F.layer_norm(a[0], (768,), *a[1:]), (x, w, b))),
        ("attention fwd+bwd", "tkc.ops", forward_backward(tkc.ops.attention, (q, k, v))),
        ("attention fwd+bwd", "custom_op",
         forward_backward(lambda *a: torch.ops.tkc.attention_fwd(*a, 0)[0], (q, k, v))),
        ("attention fwd+bwd", "torch", forward_backward(F.scaled_dot_product_attention, (q, k, v))),
        ("cross-entropy fwd+bwd", "tkc.ops", forward_backward(lambda x: tkc.ops.cross_entropy(x, t), (logits,))),
        ("cross-entropy fwd+bwd", "custom_op", forward_backward(custom_xent, (logits,))),
        ("cross-entropy fwd+bwd", "torch", forward_backward(lambda x: F.cross_entropy(x, t), (logits,))),
        ("linear+GELU fwd+bwd", "tkc.ops", forward_backward(tkc.ops.linear_gelu, (lx, lw, lb))),
        ("linear+GELU fwd+bwd", "custom_op",
         forward_backward(lambda *a: torch.ops.tkc.linear_gelu(*a, 1)[0], (lx, lw, lb))),
        ("linear+GELU fwd+bwd", "torch",
         forward_backward(lambda x, w, b: F.gelu(F.linear(x, w, b), approximate="tanh"), (lx, lw, lb))),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--package", help="the folder holding the tkc package (default: python/)")
    args = ap.parse_args()
    table = rows(torch.device("cuda"))
    for _, _, call in table:  # builds the kernels and warms every path
        for _ in range(3):
            call()
    torch.cuda.synchronize()
    times = {(op, path): [] for op, path, _ in table}
    for _ in range(args.rounds):
        for op, path, call in random.sample(table, len(table)):
            t0 = time.perf_counter()
            for _ in range(args.calls):
                call()
            torch.cuda.synchronize()
            times[(op, path)].append((time.perf_counter() - t0) / args.calls * 1e6)
    print(f"host time per call, µs (median of {args.rounds} rounds of {args.calls} calls; "
          f"{torch.cuda.get_device_name()}, torch {torch.__version__})")
    print("| operator | path | µs | vs torch |")
    print("|---|---|---|---|")
    for op, path, _ in table:
        us = statistics.median(times[(op, path)])
        ref = times.get((op, "torch"))
        ratio = f"{us / statistics.median(ref):.2f}" if ref and path != "torch" else ""
        print(f"| {op} | {path} | {us:.1f} | {ratio} |")


if __name__ == "__main__":
    main()
