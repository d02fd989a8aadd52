"""Names the CUDA kernels that a peer library launches for a workload size,
e.g. which cuBLAS GEMM (tile shape, cluster, schedule) torch.matmul picks:

    python3 tools/gpu/peer_kernels.py gemm M=4096,N=4096,K=4096 M=2048,N=2048,K=2048
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workloads as wl  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=sorted(wl.BY_NAME))
    ap.add_argument("sizes", nargs="+", help="sizes as NAME=VALUE lists, e.g. M=4096,N=4096,K=4096")
    args = ap.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    w = wl.BY_NAME[args.workload]
    for text in args.sizes:
        size = {k: int(v) for k, v in (item.split("=") for item in text.split(","))}
        data = {**w.make_inputs(size), **w.make_outputs(size)}
        for name, peer in w.peers(size).items():
            try:
                peer(data)
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    peer(data)
                    torch.cuda.synchronize()
            except Exception as e:  # a backend may be unavailable for this size
                print(f"{w.name} {text} {name}: unavailable ({str(e).splitlines()[0][:120]})")
                continue
            kernels = [e.name for e in prof.events() if e.device_type.name == "CUDA"]
            print(f"{w.name} {text} {name}: " + "; ".join(dict.fromkeys(kernels)))


if __name__ == "__main__":
    main()
