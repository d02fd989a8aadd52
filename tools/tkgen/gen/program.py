"""A file of generated kernels and its manifest, and the run sizes of a
kernel (shared by the CI runner and the GPU harness)."""

import random

from .kernels import SKELETONS
from .types import Kernel

# Language features the generator can leave out (`--avoid`), besides the
# skeletons: a known-broken one stays out of CI until it is fixed.
FEATURES = {
    "tempnames": "variable names like `t_1`, the shape of the compiler's temporaries",
    "negint": "i32 `/`, `%` and `cdiv` of negative operands",
    "negstart": "slices that start before a tensor's first element",
    "mma_mix": "products in elementwise kernels, beside tiles of other layouts",
    "mixed_layouts": "row vectors reduced from a tile of no product, next to products",
    "lone_vectors": "1-d tiles neither reduced from nor broadcast to a 2-d tile",
    "colreduce": "colsum, colmax and colmin, broadcast back with [new, :]",
    "wide_rows": "row tiles of 192 to 768 columns (strip layouts), whole rows of specialised widths",
    "carried_padding": "loop loads at a row offset: rows past the tensor's end reach carried accumulators",
    "gather": "loads through i32 index tiles (X[r +: E, t], X[t, c +: E], W[t]) from inputs with some indices out of range",
    "derived_dims": "parameter dims that are expressions of other dims and where values (cdiv(M, 32), M + 8 - M % 8)",
    "batched": "GEMMs over 3-d operands and results, one batch index a block (block.z)",
    "picked_where": "a GEMM's rows picked by the size of M (`where BM = where(M >= 129, 128, 64)`): the launcher picks",
}
ALL_FEATURES = frozenset(FEATURES) | frozenset(SKELETONS)

# Features that a known compiler bug breaks (tools/tkgen/README.md): left
# out by default, so that CI stays green and `tkgen.py --seed S --start I`
# gives the kernel CI ran; `--avoid=` tries everything.
KNOWN_BROKEN = ""


def kernel_rng(seed, index):
    # Seeding by string is stable across runs and Python versions (sha512),
    # and makes kernel `index` of `seed` the same whatever the count.
    return random.Random(f"tkgen:{seed}:{index}")


def generate_kernel(seed, index, features, target="sm_80"):
    rng = kernel_rng(seed, index)
    k = Kernel(name=f"gen{seed}x{index}", rng=rng, features=frozenset(features), target=target)
    skeletons = [(w, f) for name, (f, w) in SKELETONS.items() if name in features]
    total = sum(w for w, _ in skeletons)
    x = rng.random() * total
    for w, build in skeletons:
        x -= w
        if x < 0:
            break
    build(k)
    return k


def manifest_entry(k):
    specialised = []
    for a in k.annotations:
        parts = a.split()
        if parts[0] == "where" and parts[2] == "in":
            specialised.append(parts[1])
    return {
        "name": k.name,
        "params": [{"name": p.name, "dtype": p.dtype, "dims": p.dims, "out": p.out,
                    **({"ints": list(p.ints)} if p.ints else {})} for p in k.params],
        "dims": k.dims,
        "consts": k.consts,
        "specialised": specialised,
    }


def generate_file(seed, count, features, start=0):
    """(.tk text, manifest) of kernels start .. start+count-1 of `seed`."""
    kernels = [generate_kernel(seed, i, features) for i in range(start, start + count)]
    header = f"// tkgen --seed {seed} --start {start} --count {count}\n"
    return header + "\n".join(k.text() for k in kernels), [manifest_entry(k) for k in kernels]


def odd_size(rng, lo, hi):
    """Sizes that are mostly not tile multiples: the tails are the point."""
    v = rng.randrange(lo, hi + 1)
    if v % 16 == 0 and rng.random() < 0.8:
        v = max(lo, v - 1 - rng.randrange(5))
    return v


def row_dims(entry):
    """Dim names that are the last dim of a tensor of two dims or more."""
    return {p["dims"][-1] for p in entry["params"] if len(p["dims"]) >= 2 and isinstance(p["dims"][-1], str)}


def pick_runs(entry, rng, count, target="sm_80"):
    """`count` runs of a kernel: the specialised kernel's name, the sizes of
    its dims and the launcher's compile-time arguments. On sm_90a rows are
    a multiple of 16 bytes long (8 elements), as bulk tensor copies need."""
    runs = []
    aligned = row_dims(entry) if target == "sm_90a" else set()
    for _ in range(count):
        sizes, consts, suffix = {}, {}, ""
        for name, spec in entry["dims"].items():
            sizes[name] = rng.choice(spec[1]) if spec[0] == "set" else odd_size(rng, spec[1], spec[2])
            if name in aligned:
                sizes[name] = -(-sizes[name] // 8) * 8
        for name, values in entry["consts"].items():
            consts[name] = rng.choice(values)
        for name in entry["specialised"]:
            suffix += f"__{name}{sizes[name] if name in sizes else consts[name]}"
        run = {"kernel": entry["name"] + suffix, "sizes": sizes, "consts": [consts[n] for n in entry["consts"]]}
        ints = index_ranges(entry, sizes)
        if ints:
            run["ints"] = ints
        runs.append(run)
    return runs


def index_ranges(entry, sizes):
    """The values to draw each i32 index input from (tkc-interp --ints):
    the indexed dim's positions and a few on either side of them."""
    ranges = {}
    for p in entry["params"]:
        if "ints" in p:
            dim, below, above = p["ints"]
            size = dim if isinstance(dim, int) else sizes[dim]
            ranges[p["name"]] = [-below, size - 1 + above]
    return ranges
