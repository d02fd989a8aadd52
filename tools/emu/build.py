#!/usr/bin/env python3
"""Builds CUDA that tkc emitted for sm_80 into a host shared library that
runs its kernels on the CPU (tools/emu/include: the emulated runtime).

The launchers keep their C ABI (docs/abi.md), so the library is called as
the nvcc-built one is, with host memory standing in for device memory. The
source is compiled as C++ after two rewrites that C++ cannot express as a
header: a launch `kernel<<<grid, block, shared, stream>>>(args)` becomes a
call of tkc_emu::launch, and the block's `extern __shared__` array becomes
a pointer to the block's shared memory.

  tools/emu/build.py OUT.cu -o OUT.so [--sanitize] [--cxx g++]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

LAUNCH = re.compile(r"\b(\w+)<<<(.*?)>>>\(")
SHARED = re.compile(r"extern __shared__ (?:__align__\(\d+\) )?unsigned char (\w+)\[\];")


class EmuBuildError(RuntimeError):
    pass


def rewrite(source):
    """The emitted CUDA as host C++ for the emulated runtime."""
    if '#include "tkc_hopper.cuh"' in source:
        raise EmuBuildError("this is sm_90a code (TMA, wgmma, mbarriers): tkc-emu runs sm_80 code only")
    source = SHARED.sub(r"unsigned char *const \1 = ::tkc_emu::block().shared;", source)
    return LAUNCH.sub(r"::tkc_emu::launch(\1, \2)(", source)


def compile_flags(sanitize=False):
    flags = ["-std=c++17", "-O1", "-fPIC", "-shared", "-w", "-I", str(HERE / "include"), "-I", str(REPO / "runtime")]
    if sanitize:
        flags += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    return flags


def build(cu_path, so_path, sanitize=False, cxx=None):
    """Compiles `cu_path` into `so_path`; raises EmuBuildError with the
    compiler's messages when it fails."""
    cxx = cxx or os.environ.get("CXX") or shutil.which("g++") or "c++"
    text = rewrite(Path(cu_path).read_text())
    so_path = Path(so_path)
    so_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cpp = Path(tmp) / (Path(cu_path).stem + ".emu.cpp")
        cpp.write_text(text)
        # Written next to the result, then renamed over it: a failed build
        # leaves no library behind, and a reader never sees half of one.
        partial = so_path.with_name(so_path.name + ".partial")
        proc = subprocess.run([cxx, *compile_flags(sanitize), "-x", "c++", str(cpp), "-o", str(partial)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            partial.unlink(missing_ok=True)
            raise EmuBuildError(f"{cxx} failed on {cu_path}:\n{proc.stderr[-4000:]}")
        if so_path.exists() and not so_path.is_file():
            partial.unlink(missing_ok=True)
            raise EmuBuildError(f"{so_path} exists and is not a regular file")
        os.replace(partial, so_path)
    return so_path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cu", help="CUDA emitted by tkc --target=sm_80")
    ap.add_argument("-o", "--output", required=True, help="the shared library to write")
    ap.add_argument("--sanitize", action="store_true", help="build with AddressSanitizer and UBSan")
    ap.add_argument("--cxx", default=None, help="C++ compiler (default $CXX or g++)")
    args = ap.parse_args(argv)
    try:
        build(args.cu, args.output, args.sanitize, args.cxx)
    except EmuBuildError as e:
        print(f"tkc-emu: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
