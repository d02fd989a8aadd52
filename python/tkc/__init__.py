"""Compile tile kernels (.tk) with tkc and call them from Python.

    import tkc
    lib = tkc.load("examples/gemm.tk")          # tkc + nvcc, cached
    lib.gemm(A, B, C)                           # torch tensors; raises tkc.TkcError subclasses
    lib.gemm.info.tensors                       # what it takes, from tkc_gemm_info()

`tkc.torch` registers kernels as torch operators, `tkc.ops` holds ready-made
ones (attention, layernorm), `tkc.bench` times them. Only tkc.torch, tkc.ops
and tkc.bench's timer need torch.
"""

from ._abi import ABI_VERSION, TkcTensor, make_tensor
from ._build import BuildError, build
from ._loader import KernelInfo, Launcher, Library, Param, load_library
from .errors import (AbiError, AlignmentError, CudaError, DeviceError, DTypeError, LaunchError, NoSpecializationError,
                     NoTargetError, NullPointerError, ShapeError, StrideError, TkcError)

__version__ = "0.1.0"

_loaded = {}


def compile(source, target="sm_80,sm_90a", **options):
    """Builds a .tk file (path or source text) with tkc and nvcc and returns
    the path of the shared library's build (`.so`, `.cu`, `.h`); cached in
    $TKC_CACHE_DIR (default ~/.cache/tkc) by content hash of the source, the
    compiler, the runtime headers and the options. Options: cache_dir, tkc,
    nvcc, runtime_dir, tkc_args, nvcc_args."""
    return build(source, target=target, **options)


def load(source, target="sm_80,sm_90a", **options):
    """Builds (see compile) and loads a .tk file: a Library whose attributes
    are the file's kernels, callable with tensors and constants."""
    result = build(source, target=target, **options)
    if result.so not in _loaded:
        _loaded[result.so] = load_library(result.so, result.header)
    return _loaded[result.so]


__all__ = ["ABI_VERSION", "AbiError", "AlignmentError", "BuildError", "CudaError", "DeviceError", "DTypeError",
           "KernelInfo", "LaunchError", "Launcher", "Library", "NoSpecializationError", "NoTargetError",
           "NullPointerError", "Param", "ShapeError", "StrideError", "TkcError", "TkcTensor", "compile", "load",
           "load_library", "make_tensor"]
