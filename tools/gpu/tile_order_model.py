#!/usr/bin/env python3
"""A model of how a persistent causal attention forward's tiles spread over
the blocks, for choosing the tile order (warp-specialize). A tile costs its
number of key tiles; a block's time is the sum over the tiles it takes; the
table gives the slowest block's time over the ideal (total / blocks).

  tools/gpu/tile_order_model.py [--blocks 132]

Rows: the bench's attention sizes (B * N = 16k, H * D = 2048) with the
sm_90a schedules of examples/attention_fwd.tk under the mask. Columns:
  hw          one block per tile, each taken by the block that frees first
              (the hardware's scheduler), plus one key tile of overhead
  launch      static round-robin in launch order (x fastest)
  xslow       x slowest over all heads
  snake       x slowest, every other full round backwards
  groupG      snake within groups of blocks / G heads (warp-specialize: G = 2)
"""
import argparse
import heapq


def tiles(n, bm, bn, heads):
    """(x, head, key tiles) in launch order; x = 0 is the longest (the
    example reverses the query tiles under the mask)."""
    tx = -(-n // bm)
    out = []
    for head in range(heads):
        for x in range(tx):
            q0 = (tx - 1 - x) * bm
            out.append((x, head, min(-(-n // bn), -(-(q0 + bm) // bn))))
    return tx, out


def hardware(ts, blocks, overhead):
    free = [0.0] * blocks
    for t in ts:
        heapq.heappush(free, heapq.heappop(free) + t[2] + overhead)
    return max(free)


def static(order, blocks, backwards=False):
    load = [0.0] * blocks
    for i, t in enumerate(order):
        r, b = divmod(i, blocks)
        if backwards and r % 2 == 1 and (r + 1) * blocks <= len(order):
            b = blocks - 1 - b
        load[b] += t[2]
    return max(load)


def grouped(ts, tx, group):
    heads = len(ts) // tx
    out = []
    for first in range(0, heads, group):
        for x in range(tx):
            for head in range(first, min(heads, first + group)):
                out.append(ts[head * tx + x])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blocks", type=int, default=132)
    blocks = ap.parse_args().blocks
    print("| D | N | hw | launch | xslow | snake | group4 | group2 |")
    print("|---|---|---|---|---|---|---|---|")
    for d, bm, bn, h in ((64, 192, 96, 32), (128, 128, 128, 16)):
        for n in (1024, 2048, 4096, 8192, 16384):
            tx, ts = tiles(n, bm, bn, h * (16384 // n))
            ideal = sum(t[2] for t in ts) / blocks
            xslow = sorted(ts, key=lambda t: (t[0], t[1]))
            cols = [hardware(ts, blocks, 1.0), static(ts, blocks), static(xslow, blocks),
                    static(xslow, blocks, True),
                    static(grouped(ts, tx, max(blocks // 4, 1)), blocks, True),
                    static(grouped(ts, tx, max(blocks // 2, 1)), blocks, True)]
            print(f"| {d} | {n} | " + " | ".join(f"{c / ideal:.3f}" for c in cols) + " |")


if __name__ == "__main__":
    main()
