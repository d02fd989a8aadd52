"""The types the generator tracks, and a kernel under construction."""

from dataclasses import dataclass, field
import random

FLOATS = ("f32", "bf16", "f16")


@dataclass(frozen=True)
class Ty:
    """`tile` (2-d), `vec` (1-d) or `scalar`, with its element type and shape."""

    kind: str
    dtype: str
    shape: tuple = ()


def tile(dtype, rows, cols):
    return Ty("tile", dtype, (rows, cols))


def vec(dtype, n):
    return Ty("vec", dtype, (n,))


I32 = Ty("scalar", "i32")
F32 = Ty("scalar", "f32")


@dataclass
class Param:
    name: str
    dtype: str
    dims: list  # a str is a dimension name or a derived dim's expression, an int a static size
    out: bool = False
    # An i32 input of gather indices: (the dim it indexes, a name or a static
    # size; how many values below 0 and how many at its size or past it
    # the runner draws besides those in range).
    ints: tuple = None

    def decl(self):
        dims = ", ".join(str(d) for d in self.dims)
        return f"{self.name}: {'out ' if self.out else ''}{self.dtype}[{dims}]"


@dataclass
class Var:
    name: str
    ty: Ty
    # Exactly an input's values (a load, possibly converted to f32): a
    # comparison of it gives the same mask on every implementation, where one
    # of a computed value could flip on a last-bit difference.
    exact: bool = False


@dataclass
class Kernel:
    """A kernel being generated: its signature, annotations and body lines.

    `features` is the set of language features the generator may use;
    `sizes` maps each dimension name to how to pick run sizes for it.
    """

    name: str
    rng: random.Random
    features: frozenset
    target: str
    params: list = field(default_factory=list)
    annotations: list = field(default_factory=list)
    lines: list = field(default_factory=list)
    scope: list = field(default_factory=lambda: [{}])
    indent: int = 1
    counter: int = 0
    # dim name -> values it may take at run time: ("any", lo, hi) or
    # ("set", [v...]) for a `where D in {...}` specialisation.
    dims: dict = field(default_factory=dict)
    # compile-time `where` parameters that are not dims: name -> values.
    consts: dict = field(default_factory=dict)
    # The 2-d tile shapes of the kernel (what a row reduction reduces).
    shapes: list = field(default_factory=list)
    # Whether the kernel computes products (whose accumulator layout a row
    # vector cannot share with other tiles).
    has_mma: bool = False
    # warps(...) of the kernel: an accumulator whose rows are reduced needs
    # 16 rows per warp (the warps split its rows alone).
    warps: int = 4

    def has(self, feature):
        return feature in self.features

    def fresh(self, stem):
        self.counter += 1
        if self.has("tempnames") and self.rng.random() < 0.3:
            return f"t_{self.counter}"
        return f"{stem}{self.counter}"

    def emit(self, line):
        self.lines.append("  " * self.indent + line)

    def bind(self, name, ty, exact=False):
        self.scope[-1][name] = Var(name, ty, exact)

    def lookup(self, name):
        for frame in reversed(self.scope):
            if name in frame:
                return frame[name]
        return None

    def visible(self):
        seen = {}
        for frame in self.scope:
            seen.update(frame)
        return list(seen.values())

    def vars_of(self, ty, exact=None):
        return [v for v in self.visible() if v.ty == ty and (exact is None or v.exact == exact)]

    def param(self, stem, dtype, dims, out=False):
        p = Param(f"{stem}{len(self.params)}", dtype, list(dims), out)
        self.params.append(p)
        return p

    def text(self):
        head = f"kernel {self.name}({', '.join(p.decl() for p in self.params)})"
        notes = "".join(f"\n  {a}" for a in self.annotations)
        return f"{head}{notes}\n{{\n" + "\n".join(self.lines) + "\n}\n"
