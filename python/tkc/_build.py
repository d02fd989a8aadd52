"""Running tkc and nvcc, with a cache keyed by everything that shapes the
result: the source, the compiler binary, the runtime headers, the targets
and flags, and nvcc's version."""

import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from .errors import BuildError

PACKAGE_DIR = Path(__file__).resolve().parent
# In a checkout: python/tkc -> the repository root.
SOURCE_ROOT = PACKAGE_DIR.parents[1]

TARGET_FLAGS = {
    "sm_80": ["-gencode=arch=compute_80,code=sm_80"],
    "sm_90a": ["-gencode=arch=compute_90a,code=sm_90a"],
}
BASE_FLAGS = ["-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC"]


def _first_existing(candidates, what, hint):
    for c in candidates:
        if c and Path(c).exists():
            return Path(c)
    raise BuildError(f"{what} not found ({hint})")


def find_tkc(explicit=None):
    return _first_existing([explicit, os.environ.get("TKC"), shutil.which("tkc"),
                            SOURCE_ROOT / "build" / "tools" / "tkc"], "the tkc compiler",
                           "pass tkc=, set TKC, build it into build/ or put it on PATH")


def find_nvcc(explicit=None):
    return _first_existing([explicit, os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"],
                           "nvcc", "pass nvcc=, set NVCC or put it on PATH")


def find_runtime(tkc_path, explicit=None):
    """The folder of tkc_host.h and the device runtime headers."""
    tkc_path = Path(tkc_path).resolve()
    return _first_existing([explicit, os.environ.get("TKC_RUNTIME"), SOURCE_ROOT / "runtime",
                            tkc_path.parents[2] / "runtime" if len(tkc_path.parents) > 2 else None,
                            tkc_path.parents[1] / "include" / "tkc"], "the tkc runtime headers",
                           "pass runtime_dir= or set TKC_RUNTIME")


def parse_targets(target):
    targets = [t.strip() for t in (target.split(",") if isinstance(target, str) else target)]
    for t in targets:
        if t not in TARGET_FLAGS:
            raise BuildError(f"unknown target {t!r} (known: {', '.join(TARGET_FLAGS)})")
    return targets


def nvcc_flags(targets):
    flags = [f for t in targets for f in TARGET_FLAGS[t]]
    if "sm_90a" not in targets:
        # PTX as well, which the driver compiles for GPUs newer than sm_80
        # (sm_90a's image carries the sm_80 kernels too).
        flags.append("-gencode=arch=compute_80,code=compute_80")
    return BASE_FLAGS + flags


def default_cache_dir():
    if os.environ.get("TKC_CACHE_DIR"):
        return Path(os.environ["TKC_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tkc"


@lru_cache(maxsize=None)
def _file_digest(path, mtime_ns, size):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def file_digest(path):
    st = Path(path).stat()
    return _file_digest(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=None)
def _tool_version(tool):
    try:
        return subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout
    except Exception as e:  # the key then just differs
        return f"unknown: {e}"


def cache_key(source_text, tkc_path, runtime_dir, targets, flags, nvcc_path):
    h = hashlib.sha256()
    for part in (source_text, file_digest(tkc_path), ",".join(targets), " ".join(flags),
                 _tool_version(str(nvcc_path))):
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    for f in sorted(Path(runtime_dir).glob("*")):
        if f.is_file() and f.suffix in (".h", ".cuh"):
            h.update(f.name.encode() + b"\0" + bytes.fromhex(file_digest(f)))
    return h.hexdigest()[:32]


def _run(cmd, what):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{what} failed (exit {proc.returncode}):\n$ {' '.join(map(str, cmd))}\n"
                         f"{proc.stdout}{proc.stderr}")
    return proc.stdout + proc.stderr


class Build:
    """The files of one build: NAME.cu, NAME.h, libNAME.so in `folder`."""

    def __init__(self, folder, stem, cached):
        self.folder = Path(folder)
        self.stem = stem
        self.cached = cached
        self.cu = self.folder / f"{stem}.cu"
        self.header = self.folder / f"{stem}.h"
        self.so = self.folder / f"lib{stem}.so"


def build(source, target="sm_80,sm_90a", cache_dir=None, tkc=None, nvcc=None, runtime_dir=None, tkc_args=(),
          nvcc_args=()):
    """Compiles a .tk file (a path, or source text with a `name`-less stem
    `kernels`) into a shared library, reusing an identical earlier build."""
    path = Path(source) if not (isinstance(source, str) and "\n" in source) else None
    text = path.read_text() if path else source
    stem = path.stem if path else "kernels"
    stem = "".join(c if c.isalnum() or c == "_" else "_" for c in stem) or "kernels"
    targets = parse_targets(target)
    tkc_path = find_tkc(tkc)
    nvcc_path = find_nvcc(nvcc)
    runtime = find_runtime(tkc_path, runtime_dir)
    flags = nvcc_flags(targets) + list(nvcc_args)
    key = cache_key(text + "\0" + " ".join(tkc_args), tkc_path, runtime, targets, flags, nvcc_path)
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    folder = cache / f"{stem}-{key}"
    done = Build(folder, stem, cached=True)
    if done.so.exists() and done.header.exists():
        return done

    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{stem}-", dir=cache))
    try:
        tk = work / f"{stem}.tk"
        tk.write_text(text)
        partial = Build(work, stem, cached=False)
        _run([tkc_path, tk, f"--target={','.join(targets)}", "-o", partial.cu, f"--emit-header={partial.header}",
              *tkc_args], "tkc")
        _run([nvcc_path, *flags, "-I", runtime, "-o", partial.so, partial.cu], "nvcc")
        try:
            os.replace(work, folder)
        except OSError:  # another process finished the same build first
            if not (done.so.exists() and done.header.exists()):
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Build(folder, stem, cached=False)
