"""Random well-typed expressions over the variables a kernel has in scope.

Every expression is one tkc must accept, and one whose value a GPU and the
interpreter compute alike up to rounding: divisors are kept away from zero,
logarithms and square roots see non-negative arguments, exponentials see
bounded ones, and float comparisons only look at exact input values (a
comparison of computed values could flip on a last-bit difference).
"""

from .types import I32, Ty, tile

FLOAT_LITERALS = ("0.5", "0.25", "1.5", "2.0", "-1.0", "0.75", "3.0")


def atom(text):
    """`text` ready for a postfix (`[:, new]`, `^T`): parenthesised unless
    it is a name or a call."""
    if text.replace("_", "a").isalnum() or (text.endswith(")") and text.split("(", 1)[0].isidentifier()
                                            and balanced_call(text)):
        return text
    return f"({text})"


def balanced_call(text):
    """True if the first `(` of `text` closes at its end: `f(x)`, not `f(x) + g(y)`."""
    depth = 0
    for i, c in enumerate(text):
        depth += c == "("
        depth -= c == ")"
        if depth == 0 and c == ")":
            return i == len(text) - 1
    return False


def pick(k, choices):
    return choices[k.rng.randrange(len(choices))]


def weighted(k, options):
    """options: [(weight, thunk)] with thunk None meaning not available."""
    options = [(w, f) for w, f in options if f is not None and w > 0]
    total = sum(w for w, _ in options)
    x = k.rng.random() * total
    for w, f in options:
        x -= w
        if x < 0:
            return f()
    return options[-1][1]()


# --- scalars -------------------------------------------------------------------


def int_scalar(k, depth, nonneg=True):
    """An i32 scalar expression; with `nonneg`, one that is never negative."""
    rng = k.rng
    atoms = [v.name for v in k.vars_of(I32)] + ["block.x"] + [d for d in k.dims]
    if depth <= 0 or rng.random() < 0.35:
        return pick(k, atoms) if rng.random() < 0.7 else str(rng.randrange(0, 10))
    a = int_scalar(k, depth - 1, nonneg)
    any_sign = not nonneg or k.has("negint")
    n = int_scalar(k, depth - 1, not k.has("negint"))
    lit = str(rng.randrange(1, 8))
    return weighted(k, [
        (3, lambda: f"{a} + {int_scalar(k, depth - 1, nonneg)}"),
        (2, lambda: f"{a} * {lit}"),
        (2, lambda: f"cdiv({n}, {lit})"),
        (2, lambda: f"{n} / {lit}"),
        (2, lambda: f"{n} % {lit}"),
        (2, lambda: f"min({a}, {int_scalar(k, depth - 1, nonneg)})"),
        (2, lambda: f"max({a}, {int_scalar(k, depth - 1, nonneg)})"),
        (2 if any_sign else 0, lambda: f"{a} - {int_scalar(k, depth - 1)}"),
        (1, lambda: f"({a})"),
    ])


def float_scalar(k, depth):
    rng = k.rng
    if depth <= 0 or rng.random() < 0.5:
        return pick(k, FLOAT_LITERALS)
    return weighted(k, [
        (2, lambda: f"f32({int_scalar(k, depth - 1)}) * 0.125"),
        (1, lambda: f"rsqrt({int_scalar(k, depth - 1)} + 1)"),
        (1, lambda: f"{float_scalar(k, depth - 1)} * {float_scalar(k, depth - 1)}"),
        (1, lambda: f"max({float_scalar(k, depth - 1)}, 0.5)"),
    ])


# --- masks ---------------------------------------------------------------------


def shape_var(k, shape):
    """A variable with this 2-d shape (for rowidx/colidx), if any."""
    cands = [v.name for v in k.visible() if v.ty.kind == "tile" and v.ty.shape == shape]
    return pick(k, cands) if cands else None


def index_tile(k, shape, depth):
    """An i32 tile of row/column indices and scalar offsets."""
    rng = k.rng
    base = shape_var(k, shape)
    if base is None:
        base = f"zeros(f32[{shape[0]}, {shape[1]}])"
    atom = f"{pick(k, ['rowidx', 'colidx'])}({base})"
    if depth <= 0 or rng.random() < 0.3:
        return atom
    neg = k.has("negint")
    return weighted(k, [
        (3, lambda: f"{atom} + {int_scalar(k, 1)}"),
        (2, lambda: f"{atom} * {rng.randrange(1, 4)}"),
        (2, lambda: f"{index_tile(k, shape, depth - 1)} - {index_tile(k, shape, depth - 1)}"),
        (2, lambda: f"{atom} % {rng.randrange(2, 6)}"),
        (2, lambda: f"{atom} / {rng.randrange(2, 6)}"),
        (1 if neg else 0, lambda: f"({index_tile(k, shape, depth - 1)} - {int_scalar(k, 1)}) / {rng.randrange(2, 6)}"),
        (1, lambda: f"abs({index_tile(k, shape, depth - 1)} - {int_scalar(k, 1)})"),
        (1, lambda: f"max({atom}, {int_scalar(k, 1)})"),
    ])


def mask(k, shape, depth):
    """A condition tile of this shape (or a scalar condition)."""
    rng = k.rng
    exact = [v for v in k.visible() if v.exact and v.ty.kind == "tile" and v.ty.shape == shape]

    def index_cmp():
        op = pick(k, ["<", "<=", ">", ">=", "==", "!="])
        return f"{index_tile(k, shape, 1)} {op} {int_scalar(k, 1)}"

    def tail():
        axis = pick(k, ["rowidx", "colidx"])
        base = shape_var(k, shape) or f"zeros(f32[{shape[0]}, {shape[1]}])"
        return f"{int_scalar(k, 1)} + {axis}({base}) < {int_scalar(k, 1)}"

    def diagonal():
        base = shape_var(k, shape) or f"zeros(f32[{shape[0]}, {shape[1]}])"
        return f"{int_scalar(k, 1)} + rowidx({base}) >= {int_scalar(k, 1)} + colidx({base})"

    def value_cmp():
        v = pick(k, exact)
        lit = pick(k, ["0.0", "0.5", "-0.5"])
        return f"{v.name} {pick(k, ['>', '<', '>=', '<='])} {lit}"

    def scalar_cmp():
        return f"{int_scalar(k, 1)} % 2 == {rng.randrange(2)}"

    if depth <= 0 or rng.random() < 0.5:
        return weighted(k, [
            (3, index_cmp), (3, tail), (2, diagonal),
            (2 if exact else 0, value_cmp), (1, scalar_cmp),
        ])
    return weighted(k, [
        (2, lambda: f"{mask(k, shape, depth - 1)} && {mask(k, shape, depth - 1)}"),
        (2, lambda: f"{mask(k, shape, depth - 1)} || {mask(k, shape, depth - 1)}"),
        (1, lambda: f"!({mask(k, shape, depth - 1)})"),
    ])


# --- vectors -------------------------------------------------------------------


def row_vec(k, dtype, n, depth):
    """A vector [n] laid out like the rows of a tile: a row reduction, or
    built from one (a vector tied to no tile has no layout of its own)."""
    rng = k.rng
    own = [v.name for v in k.vars_of(Ty("rvec", dtype, (n,)))]
    sources = [v for v in k.visible() if v.ty.kind == "tile" and v.ty.dtype == dtype and v.ty.shape[0] == n]
    cols = pick(k, [s[1] for s in k.shapes if s[0] == n] or [16])
    red = pick(k, ["rowsum", "rowmax", "rowmin"])
    if depth <= 0 or rng.random() < 0.3:
        return weighted(k, [
            (3 if own else 0, lambda: pick(k, own)),
            (3 if sources else 0, lambda: f"{red}({pick(k, sources).name})"),
            (0 if k.has_mma and not k.has("mixed_layouts") else 1,
             lambda: f"{red}({tile_expr(k, dtype, (n, cols), 0)})"),
            (1 if k.has("lone_vectors") else 0, lambda: f"fill({dtype}[{n}], {pick(k, FLOAT_LITERALS)})"),
        ])
    const = f"fill({dtype}[{n}], {pick(k, FLOAT_LITERALS)})" if rng.random() < 0.5 else f"zeros({dtype}[{n}])"
    # With products in the kernel, a reduction of a tile of its own could
    # tie the vector to two layouts (see `mixed_layouts`).
    return weighted(k, [
        (0 if k.has_mma and not k.has("mixed_layouts") else 3,
         lambda: f"{red}({tile_expr(k, dtype, (n, cols), depth - 1)})"),
        (2, lambda: f"{row_vec(k, dtype, n, depth - 1)} {pick(k, ['+', '-', '*'])} {row_vec(k, dtype, n, depth - 1)}"),
        (1, lambda: f"{row_vec(k, dtype, n, depth - 1)} {pick(k, ['+', '*'])} {const}"),
        (1, lambda: f"{row_vec(k, dtype, n, depth - 1)} * {pick(k, FLOAT_LITERALS)}"),
        (1, lambda: f"max({row_vec(k, dtype, n, depth - 1)}, {row_vec(k, dtype, n, depth - 1)})"),
        (1, lambda: f"tanh({row_vec(k, dtype, n, depth - 1)})"),
    ])


def col_vec(k, dtype, n):
    """A vector [n] laid out like the columns of a tile: a loaded one, or a
    column reduction (with `colreduce`)."""
    own = [v.name for v in k.vars_of(Ty("cvec", dtype, (n,)))]
    sources = [v.name for v in k.visible() if v.ty.kind == "tile" and v.ty.dtype == dtype and v.ty.shape[1] == n]
    if k.has("colreduce") and sources and (not own or k.rng.random() < 0.5):
        return f"{pick(k, ['colsum', 'colmax', 'colmin'])}({pick(k, sources)})"
    if own:
        return pick(k, own)
    return None


# --- tiles ---------------------------------------------------------------------


def unary(k, dtype, shape, depth):
    a = tile_expr(k, dtype, shape, depth - 1)
    return pick(k, [
        f"tanh({a})", f"exp(tanh({a}))", f"exp2(-abs({a}))", f"log(abs({a}) + 1.0)",
        f"log2(abs({a}) + 0.5)", f"sqrt(abs({a}))", f"rsqrt(abs({a}) + 1.0)", f"abs({a})", f"-{atom(a)}",
        f"erf({a})", f"sigmoid({a})", f"silu({a})",
    ])


def binary(k, dtype, shape, depth):
    a = tile_expr(k, dtype, shape, depth - 1)
    b = tile_expr(k, dtype, shape, depth - 1)
    return weighted(k, [
        (3, lambda: f"{a} + {b}"),
        (2, lambda: f"{a} - {b}"),
        (2, lambda: f"{atom(a)} * {atom(b)}"),
        (1, lambda: f"{atom(a)} / (abs({b}) + 1.0)"),
        (1, lambda: f"max({a}, {b})"),
        (1, lambda: f"min({a}, {b})"),
        (2, lambda: f"{atom(a)} * {atom(float_scalar(k, 1))}"),
        (1, lambda: f"{a} + {float_scalar(k, 1)}"),
        (1 if dtype == "f32" else 0, lambda: f"{a} + {int_scalar(k, 1)} * 0.01"),
    ])


def broadcast(k, dtype, shape, depth):
    a = tile_expr(k, dtype, shape, depth - 1)
    r = row_vec(k, dtype, shape[0], depth - 1)
    c = col_vec(k, dtype, shape[1])
    op = pick(k, ["+", "-", "*"])
    return weighted(k, [
        (3, lambda: f"{atom(a) if op == '*' else a} {op} {atom(r)}[:, new]"),
        (1, lambda: f"max({a}, {atom(r)}[:, new])"),
        (2 if c else 0, lambda: f"{atom(a) if op == '*' else a} {op} {atom(c)}[new, :]"),
        (1 if c else 0, lambda: f"{atom(r)}[:, new] * {atom(c)}[new, :]"),
    ])


def cast(k, dtype, shape, depth):
    other = pick(k, [d for d in ("f32", "bf16", "f16") if d != dtype])
    if acc_only(k):
        return f"{dtype}({other}({tile_expr(k, dtype, shape, depth - 1)}))"
    return weighted(k, [
        (3, lambda: f"{dtype}({tile_expr(k, other, shape, depth - 1)})"),
        (1, lambda: f"{dtype}({index_tile(k, shape, 1)})"),
    ])


def acc_only(k):
    """In a kernel with products, every tile expression reaches a variable
    at each leaf, so that all take the accumulators' layout: a row vector
    reduced from one and broadcast to a tile of no product would tie two
    layouts together (see `mixed_layouts`)."""
    return k.has_mma and not k.has("mixed_layouts")


def mma_expr(k, shape):
    """`mma(a, b)` from operand variables in scope, if some fit: a product
    whose accumulator layout meets the other tiles of the kernel, and whose
    rows the kernel's warps can split alone (as a row reduction needs)."""
    rows, cols = shape
    if not k.has("mma_mix") or not isinstance(rows, int) or not isinstance(cols, int) \
            or rows % (16 * k.warps) or cols % 16:
        return None
    k.has_mma = True
    found = []
    for half in ("bf16", "f16"):
        ops = [v for v in k.visible() if v.ty.kind == "tile" and v.ty.dtype == half]
        for a in ops:
            for ta in (False, True):
                m, kk = a.ty.shape[::-1] if ta else a.ty.shape
                if m != rows or kk % 16:
                    continue
                for b in ops:
                    for tb in (False, True):
                        k2, n = b.ty.shape[::-1] if tb else b.ty.shape
                        if k2 == kk and n == cols:
                            found.append((a.name + ("^T" if ta else ""), b.name + ("^T" if tb else "")))
    if not found:
        return None
    a, b = pick(k, found)
    return lambda: f"mma({a}, {b})"


def tile_expr(k, dtype, shape, depth):
    """A tile expression of this element type and 2-d shape."""
    rng = k.rng
    ty = tile(dtype, *shape)
    own = [v.name for v in k.vars_of(ty)]
    if dtype == "i32":
        return index_tile(k, shape, depth)
    if depth <= 0 or rng.random() < 0.2:
        fresh = 0 if own and acc_only(k) else 1
        return weighted(k, [
            (6 if own else 0, lambda: pick(k, own)),
            (fresh, lambda: f"zeros({dtype}[{shape[0]}, {shape[1]}])"),
            (fresh, lambda: f"fill({dtype}[{shape[0]}, {shape[1]}], {pick(k, FLOAT_LITERALS)})"),
            (fresh if dtype == "f32" else 0, lambda: f"f32({index_tile(k, shape, 0)}) * 0.03125"),
        ])
    return weighted(k, [
        (2 if own else 0, lambda: pick(k, own)),
        (4, lambda: binary(k, dtype, shape, depth)),
        (2, lambda: unary(k, dtype, shape, depth)),
        (2, lambda: broadcast(k, dtype, shape, depth)),
        (2, lambda: cast(k, dtype, shape, depth)),
        (2, lambda: f"where({mask(k, shape, 1)}, {tile_expr(k, dtype, shape, depth - 1)}, "
                    f"{tile_expr(k, dtype, shape, depth - 1)})"),
        (1, lambda: f"where({mask(k, shape, 1)}, {tile_expr(k, dtype, shape, depth - 1)}, {pick(k, FLOAT_LITERALS)})"),
        (1 if dtype == "f32" else 0, mma_expr(k, shape)),
    ])
