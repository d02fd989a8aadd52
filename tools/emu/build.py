#!/usr/bin/env python3
"""Builds CUDA that tkc emitted for sm_80 into a host shared library that
runs its kernels on the CPU (tools/emu/include: the emulated runtime).

The launchers keep their C ABI (docs/abi.md), so the library is called as
the nvcc-built one is, with host memory standing in for device memory. The
source is compiled as C++ after rewrites that C++ cannot express as a
header: a launch `kernel<<<grid, block, shared, stream>>>(args)` becomes a
call of tkc_emu::launch, the block's `extern __shared__` array becomes a
pointer to the block's shared memory, and element accesses through a
generic pointer into shared memory (`static_cast<float *>(
__cvta_shared_to_generic(slot))[i]`) become the emulator's checked ones.

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
# Shared memory through a generic pointer, as codegen writes it for small
# vectors: routed through the emulator's checked accesses.
GENERIC_STORE = re.compile(r"static_cast<([\w:]+) \*>\(__cvta_shared_to_generic\((\w+)\)\)\[([^\[\]]*)\] = ([^;]*);")
GENERIC_LOAD = re.compile(r"static_cast<const ([\w:]+) \*>\(__cvta_shared_to_generic\((\w+)\)\)\[([^\[\]]*)\]")


class EmuBuildError(RuntimeError):
    pass


def rewrite(source):
    """The emitted CUDA as host C++ for the emulated runtime."""
    if '#include "tkc_hopper.cuh"' in source:
        raise EmuBuildError("this is sm_90a code (TMA, wgmma, mbarriers): tkc-emu runs sm_80 code only")
    source = SHARED.sub(r"unsigned char *const \1 = ::tkc_emu::block().shared;", source)
    source = GENERIC_STORE.sub(r"::tkc_emu::generic_store<\1>(\2, \3, \4);", source)
    source = GENERIC_LOAD.sub(r"::tkc_emu::generic_load<\1>(\2, \3)", source)
    if "__cvta_shared_to_generic" in source:  # an unchecked access would hide races
        line = next(ln for ln in source.splitlines() if "__cvta_shared_to_generic" in ln)
        raise EmuBuildError(f"a shared-memory access through a generic pointer of a form tkc-emu does not know:\n{line}")
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
