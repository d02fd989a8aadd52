"""What a workload of the GPU harness is: its parameters, sizes, reference,
peers and work (the kernels themselves are in workloads_matmul.py and
workloads_rows.py; workloads.py lists them).

A workload names its launcher (`tkc_<name>`), the generated file stem
(`<stem>.<target>.cu`), its tensor parameters in launcher order, its non-dim
constants, the sizes to check and to benchmark, a float64 reference, the
peers to race, and the work per call (FLOPs or bytes). Adding a kernel means
adding a class to one of those files and listing it in workloads.py.

Sizes are plain dicts. torch is imported only inside methods.
"""


DTYPE_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "i32": 4, "f8e4m3": 1, "f8e5m2": 1}


def torch_dtype(name):
    import torch
    if name.startswith("f8"):
        return {"f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2}[name]
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "i32": torch.int32}[name]


def numel(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


class Param:
    """A tensor parameter; a scratch output is a work buffer that some
    targets' kernels write and others ignore, checked against nothing."""

    def __init__(self, name, dtype, output=False, scratch=False):
        self.name, self.dtype, self.output, self.scratch = name, dtype, output, scratch


class Workload:
    name = ""            # launcher: tkc_<name>
    stem = ""            # generated file: <stem>.<target>.cu
    params = []          # [Param] in launcher order
    const_names = []     # non-dim `where` constants, in declaration order
    main_output = ""     # output compared against peers in the benchmark
    peer_names = []      # the keys of peers(), for listings without torch
    # peers timed beside the others that compute less (the GEMM without the
    # kernel's epilogue): the peer check skips them
    timing_only_peers = []
    unit = "TFLOP/s"     # "TFLOP/s" (work = FLOPs) or "GB/s" (work = bytes)
    tolerances = {}      # output name -> max relative error (norm-wise)
    check_sizes = []
    bench_sizes = []
    quick_sizes = []
    argcheck_size = {}
    # (label, size, {param: shape override}, expected status)
    extra_arg_cases = []
    # outputs that every target's launcher rejects one element off alignment
    misaligned_outputs = []
    source = None        # a fixed .cu (selftest) instead of <gpu_dir>/<stem>.<target>.cu

    def shapes(self, size):
        raise NotImplementedError

    # Workloads of several launchers in a row: [(kernel, [tensor names], [constants])].
    steps = None

    def make_launcher(self, lib):
        """The callable the harness runs: `tkc_<name>` over every parameter,
        or each of `steps` in turn on its tensors."""
        if self.steps is None:
            return lib.launcher(self.name, len(self.params), len(self.const_names))
        from tkc_gpu import SequenceLauncher
        idx = {p.name: i for i, p in enumerate(self.params)}
        return SequenceLauncher(self.name, [(lib.launcher(k, len(ts), len(cs)), [idx[t] for t in ts], cs)
                                            for k, ts, cs in self.steps])

    def consts(self, size):
        return [int(size[c]) for c in self.const_names]

    def label(self, size):
        return "x".join(str(v) for v in size.values())

    def reference(self, inputs, size):
        """{output name: float64 tensor} from the (low-precision) inputs."""
        raise NotImplementedError

    def peers(self, size):
        """{peer name: callable(inputs dict) -> main output tensor}."""
        return {}

    def work(self, size):
        raise NotImplementedError

    def plot_group(self, size):
        return self.name

    def plot_x(self, size):
        return 0

    plot_xlabel = "size"

    def bytes_per_set(self, size):
        sh = self.shapes(size)
        return sum(numel(sh[p.name]) * DTYPE_BYTES[p.dtype] for p in self.params)

    @staticmethod
    def backward_peer(tag, leaves, forward, grad):
        """A peer that times a backward: `forward(*leaves(inputs))` runs once
        per input set (kept in the inputs under `tag`), and each call takes the
        gradient of every leaf for the upstream gradient `inputs[grad]`,
        returning the first leaf's."""
        import torch

        # A compiled forward's backward may free ("donate") buffers it saved,
        # which the repeated backward of one graph (retain_graph) needs.
        try:
            import torch._functorch.config as functorch_config
            functorch_config.donated_buffer = False
        except (ImportError, AttributeError):
            pass

        def run(inp):
            key = "_graph_" + tag
            if key not in inp:
                xs = tuple(x.detach().requires_grad_() for x in leaves(inp))
                inp[key] = (xs, forward(*xs))
            xs, out = inp[key]
            return torch.autograd.grad(out, xs, inp[grad], retain_graph=True)[0]
        return run

    def make_inputs(self, size, device="cuda"):
        import torch
        sh = self.shapes(size)
        return {p.name: torch.randn(sh[p.name], device=device, dtype=torch_dtype(p.dtype))
                for p in self.params if not p.output}

    def make_outputs(self, size, device="cuda"):
        import torch
        sh = self.shapes(size)
        return {p.name: torch.full(sh[p.name], float("nan"), device=device, dtype=torch_dtype(p.dtype))
                for p in self.params if p.output}
