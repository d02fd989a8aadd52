"""Kernel skeletons: each fixes a kernel's parameters, grid and control flow
and fills the rest with random statements and expressions (exprs.py).

Every block writes its own part of each output (rows by block, columns by
block or by loop iteration), except through atomic_add, so that the result
does not depend on the order the blocks run in.
"""

import random

from . import derived as D
from . import exprs as E
from . import gathers as G
from .types import FLOATS, I32, Ty, tile

STAGES = (1, 2, 3, 4)

# Row tiles wider than 128 columns take strip layouts (a row per warp, each
# lane a chunk of 8, 4 or 2 elements in every 256, 128 or 64 columns), so
# their rows need only be a multiple of the warps: few rows, to keep the
# registers a thread holds near those of the narrow tiles.
WIDE_COLS = (192, 320, 384, 512, 640, 768)
WIDE_ROWS = (4, 8, 16)
# Widths of whole rows (`where N in {...}`, loaded as `X[r +: R, :]`).
WIDE_SETS = ((384, 768), (192, 320), (384, 640), (512, 768), (320, 640, 768))
# Elements of one wide tile a thread may hold.
WIDE_PER_THREAD = 32


def pick(k, xs):
    return xs[k.rng.randrange(len(xs))]


# --- shared pieces --------------------------------------------------------------


def declare_dim(k, name, tile_extent, specialise=None):
    """A dimension name run at sizes around `tile_extent` (tails included),
    or, specialised, at each of a few multiples of it."""
    if specialise:
        values = sorted({tile_extent * m for m in specialise})
        k.annotations.append(f"where {name} in {{{', '.join(map(str, values))}}}")
        k.dims[name] = ("set", values)
    else:
        k.dims[name] = ("any", 1, 3 * tile_extent + 7)
    return name


def declare_flag(k):
    """A compile-time parameter that is no dimension (a launcher argument)."""
    name = f"flag{len(k.consts)}"
    k.annotations.append(f"where {name} in {{0, 1}}")
    k.consts[name] = [0, 1]
    k.bind(name, I32)
    return name


def tile_shape(k, rows=(32, 64, 128), cols=(16, 32, 64, 128)):
    shape = pick(k, list(rows)), pick(k, list(cols))
    k.shapes.append(shape)
    return shape


def warps_for(k, shape):
    """Warps that split a tile outside mma: each lane of a row holds 16
    bytes of 8 elements, so a warp spans 256 / cols rows."""
    rows, cols = shape
    return pick(k, [w for w in (1, 2, 4, 4, 4, 8) if rows % (w * 256 // cols) == 0] or [1])


def wide(k, chance):
    """Whether a skeleton draws a wide row tile (feature `wide_rows`)."""
    return k.has("wide_rows") and k.rng.random() < chance


def wide_warps_ok(rows, cols):
    """Warps that split a wide tile of `rows` rows: whole rows each, and at
    most WIDE_PER_THREAD elements a thread."""
    return [w for w in (1, 2, 4, 8) if rows % w == 0 and rows * cols <= WIDE_PER_THREAD * 32 * w]


def wide_shape(k, widest):
    """Rows of a wide tile whose columns reach `widest`, and its warps."""
    rows = pick(k, [r for r in WIDE_ROWS if wide_warps_ok(r, widest)])
    return rows, pick(k, wide_warps_ok(rows, widest))


def wide_tile(k):
    """A wide tile of one of WIDE_COLS widths: its rows, columns and warps.
    Draws the width before the rows and warps: a seed's kernels depend on
    the order of the draws."""
    cols = pick(k, WIDE_COLS)
    rows, warps = wide_shape(k, cols)
    k.shapes.append((rows, cols))
    return rows, cols, warps


def declare_set(k, name, values):
    """A dimension specialised to exactly these sizes (`where N in {...}`)."""
    k.annotations.append(f"where {name} in {{{', '.join(map(str, values))}}}")
    k.dims[name] = ("set", sorted(values))
    return name


def assign(k, name, expr, ty, exact=False):
    k.emit(f"{name} = {expr}")
    k.bind(name, ty, exact)


def random_statements(k, shapes, dtype, count, depth=2):
    """New tiles and row vectors, and reassignments of tiles in scope."""
    for _ in range(count):
        shape = pick(k, shapes)
        choice = k.rng.random()
        mine = [v for v in k.scope[-1].values() if v.ty.kind == "tile" and v.ty.dtype in FLOATS]
        if choice < 0.25 and mine:
            v = pick(k, mine)
            assign(k, v.name, E.tile_expr(k, v.ty.dtype, v.ty.shape, depth), v.ty)
        elif choice < 0.45:
            assign(k, k.fresh("r"), E.row_vec(k, dtype, shape[0], depth), Ty("rvec", dtype, (shape[0],)))
        else:
            dt = dtype if k.rng.random() < 0.7 else pick(k, list(FLOATS))
            assign(k, k.fresh("t"), E.tile_expr(k, dt, shape, depth), tile(dt, *shape))


def assign_in_if(k, name, make_expr, ty):
    """Assigns `name` in both branches of an `if` on a compile-time
    condition (the target, `sm`, or a flag), from expressions of each."""
    flags = [n for n in k.consts]
    cond = pick(k, ["sm >= 90", "sm < 90"] + [f"{f} == 1" for f in flags])
    k.emit(f"if {cond} {{")
    k.indent += 1
    k.emit(f"{name} = {make_expr()}")
    k.indent -= 1
    k.emit("} else {")
    k.indent += 1
    k.emit(f"{name} = {make_expr()}")
    k.indent -= 1
    k.emit("}")
    k.bind(name, ty)


def col_start(k, dim, extent):
    """A column start the same for every block: a literal or a function of
    the sizes (negative, with `negstart`)."""
    options = ["0", str(k.rng.randrange(0, 9)), f"{dim} / {k.rng.randrange(2, 5)}"]
    if k.has("negstart"):
        options.append(f"{dim} - {extent + k.rng.randrange(0, 5)}")
    return pick(k, options)


def load_start(k, base):
    """A load's start: `base` plus a small run-time offset, at times."""
    r = k.rng.random()
    if r < 0.6:
        return base
    if r < 0.8:
        offset = E.int_scalar(k, 1)
        if k.has("negint") and not k.has("negstart"):  # (negint's scalars may be negative)
            offset = f"max({offset}, 0)"
        return f"{base} + {offset} % 5"
    if k.has("negstart"):
        return f"{base} - {k.rng.randrange(1, 6)}"
    return f"max({base} - {k.rng.randrange(1, 6)}, 0)"


def store_tile(k, out_dtype, rows, cols, shape, body_dtype):
    """The value stored into an out tensor of `out_dtype`."""
    if out_dtype == "i32":
        return E.index_tile(k, shape, 2)
    expr = E.tile_expr(k, body_dtype, shape, 3)
    return expr if out_dtype == body_dtype else f"{out_dtype}({expr})"


def store_rows(k, grid_2d, r0, br, dtype):
    """A row vector stored (1-d grid) or added (2-d grid: the column blocks
    of a row all add to it) into an f32 [M] output."""
    z = k.param("Z", "f32", [D.at_least(k, "M", br) if D.wanted(k, 0.3) else "M"], out=True)
    v = E.row_vec(k, dtype, br, 2)
    v = v if dtype == "f32" else f"f32({v})"
    verb = "atomic_add" if grid_2d or k.rng.random() < 0.2 else "store"
    k.emit(f"{verb}({z.name}[{r0} +: {br}], {v})")


def rows_dim(k, extent):
    """The rows of a 2-d tensor of M rows: M, or with `derived_dims` at
    times more (the rows past M of an output nobody writes, those of an
    input are read where a tile reaches them)."""
    return D.at_least(k, "M", extent) if D.wanted(k, 0.15) else "M"


def store_gathered_rows(k, gathered, grid_2d, r0, br):
    """Each gathered row vector into an output of its own, so that no
    gather is dead code: added to by every column block of a 2-d grid."""
    for g in gathered:
        v = k.lookup(g)
        z = k.param("Z", "f32", [D.at_least(k, "M", br) if D.wanted(k, 0.3) else "M"], out=True)
        extra = ""
        if k.rng.random() < 0.5:
            extra = f" {pick(k, ['+', '-', '*'])} {E.atom(E.row_vec(k, v.ty.dtype, br, 1))}"
        value = g + extra
        verb = "atomic_add" if grid_2d else "store"
        k.emit(f"{verb}({z.name}[{r0} +: {br}], {value if v.ty.dtype == 'f32' else f'f32({value})'})")


def store_partials(k, row, br, bc, cols, n, cvecs, dtype):
    """A row of a partials tensor (one row per block of `br` rows, its rows
    a derived dim with `derived_dims`) per column vector: gathered ones,
    else (with `colreduce`) a column reduction of a tile."""
    values = [f"f32({g})" if k.lookup(g).ty.dtype != "f32" else g for g in cvecs]
    if not values and k.has("colreduce"):
        values = [f"{pick(k, ['colsum', 'colmax', 'colmin'])}({E.tile_expr(k, 'f32', (br, bc), 2)})"]
    for v in values:
        rows = D.blocks(k, "M", br) if D.wanted(k, 0.8) else declare_dim(k, "PB", 2)
        p = k.param("P", "f32", [rows, n], out=True)
        k.emit(f"store({p.name}[{row}, {cols}], {v})")


# --- skeletons -----------------------------------------------------------------


def elementwise(k):
    """Rows (and columns) of tiles by block: maps, casts, masks, broadcasts
    and reductions, no loop. Wide tiles (strip layouts) at times, some of
    them whole rows of a specialised width."""
    dtype = pick(k, list(FLOATS))
    whole = None
    if wide(k, 0.3):
        if k.rng.random() < 0.4:
            whole = pick(k, WIDE_SETS)
            br, warps = wide_shape(k, max(whole))
            bc = "N"
            k.shapes.append((br, bc))
        else:
            br, bc, warps = wide_tile(k)
    else:
        br, bc = tile_shape(k)
        warps = None
    declare_dim(k, "M", br)
    ncols = "whole" if whole else pick(k, ["N", "static", "special"])
    if ncols == "whole":
        n = declare_set(k, "N", whole)
    elif ncols == "static":
        n = bc * k.rng.randrange(1, 3)
    else:
        n = declare_dim(k, "N", bc, specialise=(1, 2) if ncols == "special" else None)
    if k.rng.random() < 0.3:
        declare_flag(k)
    grid_2d = not whole and k.rng.random() < 0.5
    warps = k.warps = warps or warps_for(k, (br, bc))
    x = k.param("X", dtype, [rows_dim(k, br), n])
    side = k.param("W", pick(k, list(FLOATS)), [n]) if k.rng.random() < 0.4 else None
    if grid_2d:
        k.annotations.append(f"grid(cdiv({n}, {bc}), cdiv(M, {br})) warps({warps})")
        r0, c0 = "block.y", "block.x"
        assign(k, "r0", f"block.y * {br}", I32)
        assign(k, "c0", f"block.x * {bc}", I32)
    else:
        k.annotations.append(f"grid(cdiv(M, {br})) warps({warps})")
        assign(k, "r0", f"block.x * {br}", I32)
        if not whole:
            assign(k, "c0", col_start(k, n, bc), I32)
    # `:` takes a whole row of the specialised width.
    cols = (lambda: ":") if whole else (lambda: f"{load_start(k, 'c0')} +: {bc}")
    assign(k, "x", f"load({x.name}[{load_start(k, 'r0')} +: {br}, {cols()}])",
           tile(dtype, br, bc), exact=True)
    if side is not None:
        assign(k, "w", f"load({side.name}[{cols()}])", Ty("cvec", side.dtype, (bc,)))
        if side.dtype != dtype:
            assign(k, "wc", f"{dtype}(w)", Ty("cvec", dtype, (bc,)))
    if dtype != "f32" and k.rng.random() < 0.5:
        assign(k, "xf", "f32(x)", tile("f32", br, bc), exact=True)
    rvecs, cvecs = [], []
    if k.has("gather") and k.rng.random() < 0.3:
        rvecs, cvecs = G.some_gathers(k, x, "r0", None if whole else "c0", br, bc, n)
    if k.rng.random() < 0.3:
        assign_in_if(k, "y", lambda: E.tile_expr(k, dtype, (br, bc), 2), tile(dtype, br, bc))
    random_statements(k, [(br, bc)], dtype, k.rng.randrange(1, 5))
    out_dtype = pick(k, list(FLOATS) + ["i32"])
    # M stays bound: some parameter has it alone.
    y = k.param("Y", out_dtype, [rows_dim(k, br) if x.dims[0] == "M" else "M", n], out=True)
    out_cols = ":" if whole else f"c0 +: {bc}"
    k.emit(f"store({y.name}[r0 +: {br}, {out_cols}], {store_tile(k, out_dtype, br, bc, (br, bc), dtype)})")
    if k.rng.random() < 0.5:
        store_rows(k, grid_2d, "r0", br, dtype)
    store_gathered_rows(k, rvecs, grid_2d, "r0", br)
    if cvecs or D.wanted(k, 0.2):
        store_partials(k, "block.y" if grid_2d else "block.x", br, bc, out_cols, n, cvecs, dtype)


def row_loop(k):
    """A loop over the column tiles of a block's rows, carrying tile and row
    vector accumulators, with masks for the tail."""
    dtype = pick(k, list(FLOATS))
    if wide(k, 0.3):
        if k.rng.random() < 0.4:
            return row_groups(k, dtype)
        br, bc, warps = wide_tile(k)
    else:
        br, bc = tile_shape(k)
        warps = None
    declare_dim(k, "M", br)
    n = declare_dim(k, "N", bc)
    if k.rng.random() < 0.3:
        declare_flag(k)
    warps = k.warps = warps or warps_for(k, (br, bc))
    x = k.param("X", dtype, ["M", n])
    k.annotations.append(f"grid(cdiv(M, {br})) warps({warps})")
    assign(k, "r0", f"block.x * {br}", I32)
    assign(k, "acc", "zeros(f32[%d, %d])" % (br, bc), tile("f32", br, bc))
    init = pick(k, ["-inf", "0.0", "-1000.0"])
    assign(k, "m", f"fill(f32[{br}], {init})", Ty("rvec", "f32", (br,)))
    hint = ""
    if k.rng.random() < 0.6:
        hint = " pipelined" + (f"(stages = {pick(k, STAGES)})" if k.rng.random() < 0.7 else "")
    lo = pick(k, ["0", "0", "1", "flag0" if k.consts else "0"])
    y = k.param("Y", pick(k, list(FLOATS)), [rows_dim(k, br), n], out=True) if k.rng.random() < 0.5 else None
    # A gather in the loop: a column of each row's chunk, `t` from an
    # input of indices around 0 .. bc - 1 (so some reach the chunks either
    # side, and past N), summed over the chunks.
    gathered = k.has("gather") and k.rng.random() < 0.3
    if gathered:
        src = G.index_input(k, "M", bc, br)
        assign(k, "ti", f"load({src.name}[r0 +: {br}])", Ty("ivec", "i32", (br,)))
        assign(k, "gs", f"zeros(f32[{br}])", Ty("rvec", "f32", (br,)))
    k.emit(f"for j in {lo} .. cdiv({n}, {bc}){hint} {{")
    k.indent += 1
    k.scope.append({"j": None})
    k.bind("j", I32)
    rows = load_start(k, "r0") if k.has("carried_padding") else "r0"
    assign(k, "x", f"load({x.name}[{rows} +: {br}, j * {bc} +: {bc}])", tile(dtype, br, bc), exact=True)
    if gathered:
        k.emit(f"gs = gs + f32(load({x.name}[{rows} +: {br}, {G.reshaped(k, f'j * {bc} + ti', n)}]))")
    if k.rng.random() < 0.5:
        fill = "-inf" if init == "-inf" else "0.0"
        assign(k, "xm", f"where(j * {bc} + colidx(x) < {n}, f32(x), {fill})", tile("f32", br, bc))
    random_statements(k, [(br, bc)], dtype, k.rng.randrange(0, 3))
    k.emit(f"acc = acc * {pick(k, E.FLOAT_LITERALS)} + {E.tile_expr(k, 'f32', (br, bc), 2)}")
    red = pick(k, ["rowmax", "rowmin", "rowsum"])
    src = "xm" if k.lookup("xm") else E.tile_expr(k, "f32", (br, bc), 1)
    k.emit(f"m = max(m, {red}({src}))" if red != "rowsum" else f"m = m + rowsum({src})")
    if y is not None:
        k.emit(f"store({y.name}[r0 +: {br}, j * {bc} +: {bc}], {store_tile(k, y.dtype, br, bc, (br, bc), dtype)})")
    k.scope.pop()
    k.indent -= 1
    k.emit("}")
    z = k.param("Z", "f32", [D.at_least(k, "M", br) if D.wanted(k, 0.3) else "M"], out=True)
    k.emit(f"store({z.name}[r0 +: {br}], m + rowsum(acc) * 0.125{' + gs' if gathered else ''})")
    if k.rng.random() < 0.5 or y is None:
        y2 = k.param("Y", pick(k, list(FLOATS)), ["M", bc], out=True)
        k.emit(f"store({y2.name}[r0 +: {br}, :], {store_tile(k, y2.dtype, br, bc, (br, bc), 'f32')})")


def row_groups(k, dtype):
    """Whole rows of a specialised width, a group of R at a time: a block
    walks G groups, stores each group's rows and row vectors, and carries
    column sums of them in [N] vectors, stored as the block's row of a
    partials tensor (as examples/layernorm.tk's backward does)."""
    values = pick(k, WIDE_SETS)
    br, warps = wide_shape(k, max(values))
    k.warps = warps
    groups = pick(k, [2, 4, 8])
    declare_dim(k, "M", br * groups)
    n = declare_set(k, "N", values)
    k.shapes.append((br, n))
    x = k.param("X", dtype, ["M", n])
    side = k.param("W", pick(k, list(FLOATS)), [n]) if k.rng.random() < 0.5 else None
    k.annotations.append(f"grid(cdiv(M, {br * groups})) warps({warps})")
    assign(k, "r0", f"block.x * {br * groups}", I32)
    if side is not None:
        assign(k, "w", f"f32(load({side.name}[:]))", Ty("cvec", "f32", (n,)))
    sums = k.rng.randrange(1, 3)
    for s in range(sums):
        assign(k, f"cs{s}", f"zeros(f32[{n}])", Ty("cvec", "f32", (n,)))
    hint = " pipelined" if k.rng.random() < 0.3 else ""
    k.emit(f"for i in 0 .. min({groups}, cdiv(M - r0, {br})){hint} {{")
    k.indent += 1
    k.scope.append({})
    k.bind("i", I32)
    assign(k, "rows", f"r0 + i * {br}", I32)
    assign(k, "x", f"load({x.name}[rows +: {br}, :])", tile(dtype, br, n), exact=True)
    if dtype != "f32":
        assign(k, "xf", "f32(x)", tile("f32", br, n), exact=True)
    random_statements(k, [(br, n)], "f32", k.rng.randrange(1, 4))
    for s in range(sums):
        red = pick(k, ["colsum", "colsum", "colmax", "colmin"])
        value = E.tile_expr(k, "f32", (br, n), 2)
        k.emit(f"cs{s} = cs{s} + {red}({value})" if red == "colsum" else f"cs{s} = max(cs{s}, {red}({value}))")
    if k.rng.random() < 0.7:
        y = k.param("Y", pick(k, list(FLOATS)), ["M", n], out=True)
        k.emit(f"store({y.name}[rows +: {br}, :], {store_tile(k, y.dtype, br, n, (br, n), 'f32')})")
    if k.rng.random() < 0.5:
        z = k.param("Z", "f32", ["M"], out=True)
        k.emit(f"store({z.name}[rows +: {br}], {E.row_vec(k, 'f32', br, 2)})")
    k.scope.pop()
    k.indent -= 1
    k.emit("}")
    for s in range(sums):
        rows = D.blocks(k, "M", br * groups) if D.wanted(k, 0.5) else declare_dim(k, "P", 2)
        p = k.param("P", "f32", [rows, n], out=True)
        k.emit(f"store({p.name}[block.x, :], cs{s})")


def gemm(k):
    """A pipelined loop of products into an accumulator, operands possibly
    transposed or computed, then a random epilogue."""
    half = pick(k, ["bf16", "f16"])
    # Four warps; a tile of the epilogue that is no accumulator (a constant)
    # takes the strip layout, whose warps span 1024 / bn rows.
    bm, bn = pick(k, [(128, 32), (64, 64), (128, 64), (64, 128), (128, 128)])
    bk = pick(k, [16, 32, 64, 128])
    k.has_mma = True
    # A batch of products, one a block along z: 3-d operands and result.
    batched = k.has("batched") and k.rng.random() < 0.25
    lead, at = ([], "")
    if batched:
        k.dims["NB"] = ("any", 1, 3)
        lead, at = (["NB"], "block.z, ")
    declare_dim(k, "M", bm)
    if bn >= 64 and k.rng.random() < 0.3:
        # Rows per target (the tiles of the epilogue are BM rows on both),
        # or by the size of M: a specialisation each, the launcher picks.
        # A stream of its own keeps the kernels of a seed as they were.
        by_size = k.has("picked_where") and random.Random(f"picked_where:{k.name}").random() < 0.5
        condition = f"M >= {bm + 1}" if by_size else "sm >= 90"
        k.annotations.append(f"where BM = where({condition}, {bm}, 64)")
        bm = bm_name = "BM"
    else:
        bm_name = str(bm)
    k.shapes.append((bm, bn))
    declare_dim(k, "N", bn)
    declare_dim(k, "K", bk)
    ta, tb = k.rng.random() < 0.3, k.rng.random() < 0.4
    a = k.param("A", half, lead + (["K", "M"] if ta else ["M", "K"]))
    b = k.param("B", half, lead + (["N", "K"] if tb else ["K", "N"]))
    k.annotations.append(f"grid(cdiv(N, {bn}), cdiv(M, {bm_name}){', NB' if batched else ''}) warps(4)")
    assign(k, "row", f"block.y * {bm_name}", I32)
    assign(k, "col", f"block.x * {bn}", I32)
    assign(k, "acc", f"zeros(f32[{bm_name}, {bn}])", tile("f32", bm, bn))
    stages = pick(k, STAGES)
    k.emit(f"for k in 0 .. cdiv(K, {bk}) pipelined(stages = {stages}) {{")
    k.indent += 1
    k.scope.append({})
    k.bind("k", I32)
    a_slice = f"k * {bk} +: {bk}, row +: {bm_name}" if ta else f"row +: {bm_name}, k * {bk} +: {bk}"
    b_slice = f"col +: {bn}, k * {bk} +: {bk}" if tb else f"k * {bk} +: {bk}, col +: {bn}"
    k.emit(f"a = load({a.name}[{at}{a_slice}])")
    k.emit(f"b = load({b.name}[{at}{b_slice}])")
    if k.rng.random() < 0.2:
        k.emit(f"a = {half}(f32(a) * {pick(k, ['0.5', '2.0', '-1.0'])})")
    k.emit(f"acc = mma(a{'^T' if ta else ''}, b{'^T' if tb else ''}, acc)")
    k.scope.pop()
    k.indent -= 1
    k.emit("}")
    epilogue(k, "acc", bm, bn, bm_name, lead, at)
    if batched:
        return  # the gathers below index 2-d operands
    if k.has("gather") and k.rng.random() < 0.25:
        G.operand_gather(k, a, ta, "acc", bm_name)
    if k.has("gather") and k.has("colreduce") and not tb and k.rng.random() < 0.2:
        # One row per block of rows (BM is at least 64 on either target).
        if not k.has("derived_dims"):
            blocks = declare_dim(k, "PB", 2)
        else:
            blocks = D.blocks(k, "M", bm) if isinstance(bm, int) else "cdiv(M, 64)"
        G.column_gather(k, b, "acc", bn, blocks)


def epilogue(k, acc, bm, bn, bm_name, lead=(), at=""):
    """Maps and reductions of an accumulator, stored by block (at the batch
    index `at` of a result with the `lead` dims before its rows)."""
    if k.rng.random() < 0.5:
        assign(k, "e", f"{acc} {pick(k, ['+', '-', '*'])} {E.atom(E.tile_expr(k, 'f32', (bm, bn), 2))}",
               tile("f32", bm, bn))
    out = pick(k, ["bf16", "f16", "f32"])
    c = k.param("C", out, list(lead) + ["M", "N"], out=True)
    value = E.tile_expr(k, "f32", (bm, bn), 2) if k.rng.random() < 0.5 else acc
    k.emit(f"store({c.name}[{at}row +: {bm_name}, col +: {bn}], {value if out == 'f32' else f'{out}({value})'})")
    if k.rng.random() < 0.3:
        z = k.param("Z", "f32", ["M"], out=True)
        k.emit(f"atomic_add({z.name}[row +: {bm_name}], {E.row_vec(k, 'f32', bm, 1)})")


def attention(k):
    """Two products per iteration with an online row maximum and sum between
    them, under a tail (and optionally a causal) mask."""
    half = pick(k, ["bf16", "f16"])
    bm, bn = pick(k, [64, 128]), pick(k, [32, 64, 128])
    d = pick(k, [32, 64])
    k.has_mma = True
    k.shapes.append((bm, bn))
    declare_dim(k, "M", bm)
    declare_dim(k, "N", bn)
    if k.rng.random() < 0.5:
        dim_d = declare_dim(k, "D", 32, specialise=(1, 2))
        dim_d_static = False
    else:
        dim_d, dim_d_static = d, True
    causal = declare_flag(k) if k.rng.random() < 0.5 else None
    q = k.param("Q", half, ["M", dim_d])
    kk = k.param("K", half, ["N", dim_d])
    v = k.param("V", half, ["N", dim_d])
    k.annotations.append(f"grid(cdiv(M, {bm})) warps(4)")
    # `:` takes the whole of D, static either way.
    cols = ":"
    assign(k, "q0", f"block.x * {bm}", I32)
    k.emit(f"q = load({q.name}[q0 +: {bm}, :])")
    k.emit(f"m = fill(f32[{bm}], -inf)")
    k.emit(f"l = zeros(f32[{bm}])")
    dd = d if dim_d_static else "D"
    k.emit(f"acc = zeros(f32[{bm}, {dd}])")
    scale = pick(k, ["0.125", "rsqrt(%s) * 1.4426950408889634" % (dd,), "1.0"])
    stages = pick(k, (1, 2, 3))
    k.emit(f"for j in 0 .. cdiv(N, {bn}) pipelined(stages = {stages}) {{")
    k.indent += 1
    k.emit(f"kt = load({kk.name}[j * {bn} +: {bn}, {cols}])")
    k.emit(f"vt = load({v.name}[j * {bn} +: {bn}, {cols}])")
    k.emit("s = mma(q, kt^T)")
    keep = f"j * {bn} + colidx(s) < N"
    if causal:
        keep += f" && ({causal} == 0 || q0 + rowidx(s) >= j * {bn} + colidx(s))"
    k.emit(f"s = where({keep}, s * {scale}, -inf)")
    k.emit("m_new = max(m, rowmax(s))")
    k.emit("p = exp2(s - m_new[:, new])")
    k.emit("corr = exp2(m - m_new)")
    k.emit("l = l * corr + rowsum(p)")
    k.emit(f"acc = acc * corr[:, new] + mma({half}(p), vt)")
    k.emit("m = m_new")
    k.indent -= 1
    k.emit("}")
    o = k.param("O", half, ["M", dim_d], out=True)
    k.emit(f"store({o.name}[q0 +: {bm}, {cols}], {half}(acc / l[:, new]))")
    if k.rng.random() < 0.5:
        lse = k.param("L", "f32", [D.at_least(k, "M", bm) if D.wanted(k, 0.3) else "M"], out=True)
        k.emit(f"store({lse.name}[q0 +: {bm}], m + log2(l))")


SKELETONS = {
    "elementwise": (elementwise, 4),
    "row_loop": (row_loop, 3),
    "gemm": (gemm, 2),
    "attention": (attention, 1),
}
