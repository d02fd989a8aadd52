# C = A @ B with the example GEMM kernel: called on torch tensors, then as a torch operator.
from pathlib import Path
import torch, tkc, tkc.torch
lib = tkc.load(Path(__file__).resolve().parents[2] / "examples" / "gemm.tk")  # tkc + nvcc, cached
A = torch.randn(1000, 512, device="cuda", dtype=torch.bfloat16)
B = torch.randn(512, 768, device="cuda", dtype=torch.bfloat16)
C = torch.empty(1000, 768, device="cuda", dtype=torch.bfloat16)
lib.gemm(A, B, C)  # raises tkc.DTypeError, tkc.ShapeError, ... with the launcher's message
gemm = tkc.torch.register(lib.gemm)  # torch.ops.tkc.gemm(A, B) -> C, with a fake for tracing
torch.library.opcheck(gemm, (A, B))
D = torch.compile(lambda a, b: gemm(a, b) * 2, fullgraph=True)(A, B)
err = lambda X, k: ((X.float() - k * A.float() @ B.float()).norm() / (k * A.float() @ B.float()).norm()).item()
print(f"gemm: relative error {err(C, 1):.1e}; under torch.compile {err(D, 2):.1e}")
assert err(C, 1) < 1e-2 and err(D, 2) < 1e-2
