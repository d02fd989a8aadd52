"""Runs one generated kernel, or a workload's peers, a few times so that a
profiler (ncu) can look at it:

    python3 tools/gpu/profile_one.py FILE.cu WORKLOAD SIZE_JSON
    python3 tools/gpu/profile_one.py --peers WORKLOAD SIZE_JSON
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tkc_gpu as tg  # noqa: E402
import workloads as wl  # noqa: E402


def main():
    cu, name, size = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    import torch
    w = wl.BY_NAME[name]
    tensors = {**w.make_inputs(size), **w.make_outputs(size)}
    if cu == "--peers":
        for peer in w.peers(size).values():
            for _ in range(3):
                peer(tensors)
    else:
        lib = tg.load_library(Path(cu))  # the target comes from the file name
        launch = w.make_launcher(lib)
        descs = [tg.from_torch(tensors[p.name]) for p in w.params]
        for _ in range(3):
            launch(descs, w.consts(size))
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
