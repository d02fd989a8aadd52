"""The kernels the GPU harness checks and benchmarks (a class each, in
workloads_matmul.py, workloads_fp8.py, workloads_rows.py, workloads_resln.py,
workloads_xent.py, workloads_based.py and workloads_hedgehog.py;
workload_base.py says what a workload is), the harness's own smoke test,
and how a run picks them.
Sizes are plain dicts; torch is imported only inside methods.
"""

from pathlib import Path

from workload_base import DTYPE_BYTES, Param, Workload, numel, torch_dtype  # noqa: F401
from workloads_matmul import AttnBwd, AttnFwd, Gemm, GemmSplitK, GemmTN, LinearGelu, SwiGlu
from workloads_rows import (BiasGrad, GeluBwd, LayerNorm, LayerNormBwd, RmsNorm, RmsNormBwd, Rotary, RotaryBwd,
                            Softmax)
from workloads_fp8 import GemmFp8
from workloads_resln import ResidualLayerNorm, ResidualLayerNormBwd
from workloads_xent import CrossEntropy, CrossEntropyFused, CrossEntropyTrain
from workloads_based import Based, BasedBwd
from workloads_hedgehog import Hedgehog


# --- the harness's own smoke test (tools/gpu/selftest_abi.cu) -------------------------------


class SelftestAxpy(Workload):
    name = "axpy"
    stem = "selftest_abi"
    source = Path(__file__).resolve().parent / "selftest_abi.cu"
    params = [Param("x", "f32"), Param("y", "f32"), Param("out", "f32", output=True)]
    const_names = ["alpha"]
    main_output = "out"
    peer_names = ["torch"]
    unit = "GB/s"
    tolerances = {"out": 1e-6}
    check_sizes = [dict(n=n, alpha=a) for n, a in [(1, 3), (1000, -2), (4096, 5), ((1 << 20) + 3, 7)]]
    bench_sizes = [dict(n=1 << 26, alpha=3)]
    quick_sizes = bench_sizes
    argcheck_size = dict(n=1024, alpha=2)
    extra_arg_cases = [("y with other n", dict(n=1024, alpha=2), {"y": (1028,)}, 2)]
    # Its launcher checks descriptors only, not where the memory lives.
    checks_memory = False
    plot_xlabel = "n"

    def shapes(self, s):
        return {"x": (s["n"],), "y": (s["n"],), "out": (s["n"],)}

    def label(self, s):
        return f"n{s['n']} alpha{s['alpha']}"

    def reference(self, inp, s):
        return {"out": s["alpha"] * inp["x"].double() + inp["y"].double()}

    def peers(self, s):
        import torch
        a = s["alpha"]
        return {"torch": lambda inp: torch.add(inp["y"], inp["x"], alpha=a)}

    def work(self, s):
        return 3.0 * 4 * s["n"]

    def plot_x(self, s):
        return s["n"]


WORKLOADS = [Gemm(), GemmTN(), GemmSplitK(), AttnFwd(), AttnBwd(), LayerNorm(), LayerNormBwd(), BiasGrad(), Softmax(),
             RmsNorm(), RmsNormBwd(), Rotary(), RotaryBwd(), CrossEntropy(), CrossEntropyTrain(), CrossEntropyFused(),
             LinearGelu(), GeluBwd(), SwiGlu(), ResidualLayerNorm(), ResidualLayerNormBwd(), GemmFp8(),
             Based(), BasedBwd(), Hedgehog()]
SELFTEST = SelftestAxpy()
BY_NAME = {w.name: w for w in WORKLOADS + [SELFTEST]}
ALIASES = {"selftest": "axpy", "attention_fwd": "attn_fwd", "attn": "attn_fwd", "attention_bwd": "attn_bwd",
           "cross_entropy": "xent_train", "based": "based_fwd",
           "hedgehog": "hedgehog_fwd"}


def select(only, include_selftest):
    """Workloads named in `only` (comma list; None = all), plus the selftest when asked."""
    if only:
        names = [ALIASES.get(n.strip(), n.strip()) for n in only.split(",") if n.strip()]
        unknown = [n for n in names if n not in BY_NAME]
        if unknown:
            raise SystemExit(f"unknown workload(s): {', '.join(unknown)} (known: {', '.join(BY_NAME)}, selftest)")
        chosen = [BY_NAME[n] for n in names]
    else:
        chosen = list(WORKLOADS)
    if include_selftest and SELFTEST not in chosen:
        chosen = [SELFTEST] + chosen
    return chosen


def sources(workload, gpu_dir, targets=None):
    """{target: .cu path} for a workload."""
    from tkc_gpu import find_cu_files
    if workload.source is not None:
        return {"sm_80": workload.source}
    return find_cu_files(gpu_dir, workload.stem, targets)
