# C = A @ B with the example GEMM kernel, called from PyTorch.
import sys
from pathlib import Path

import torch
import tkc

lib = tkc.load(Path(__file__).resolve().parents[2] / "examples" / "gemm.tk")  # tkc + nvcc, cached
A = torch.randn(1000, 512, device="cuda", dtype=torch.bfloat16)
B = torch.randn(512, 768, device="cuda", dtype=torch.bfloat16)
C = torch.empty(1000, 768, device="cuda", dtype=torch.bfloat16)
lib.gemm(A, B, C)  # raises tkc.DTypeError, tkc.ShapeError, ... with the launcher's message
err = ((C.float() - A.float() @ B.float()).norm() / (A.float() @ B.float()).norm()).item()
print(f"gemm: relative error {err:.1e}")
sys.exit(0 if err < 1e-2 else 1)
