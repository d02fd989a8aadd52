"""Gathers (feature `gather`): loads whose slice takes a 1-d i32 tile of
indices in one position (grammar/reference.md, *Gathers*).

The indices come from i32 inputs whose values the runner draws uniformly
around the indexed dim (`Param.ints`: a few below 0 and a few at its size
or past it), so that some read 0 (an index outside its dim) and the rest
read the tensor; a row of indices past the tensor's end is padding. The
index tiles are at times reshaped by i32 arithmetic before the gather.
"""

from . import derived as D
from . import exprs as E
from .types import Ty


def pick(k, xs):
    return xs[k.rng.randrange(len(xs))]


def index_input(k, length_dim, indexes, length_extent):
    """An i32 input of `length_dim` elements (longer, with `derived_dims`)
    whose values index dim `indexes` (a name or a static size)."""
    below, above = pick(k, [0, 1, 3]), pick(k, [0, 1, 2, 4])
    dims = [D.at_least(k, length_dim, length_extent) if D.wanted(k, 0.3) else length_dim]
    p = k.param("I", "i32", dims)
    p.ints = (indexes, below, above)
    return p


def reshaped(k, t, bound):
    """An index tile from `t` by i32 arithmetic, at times: indices that
    stay near 0 .. bound - 1 (`bound` a dim name or a static size)."""
    a = E.atom(t)
    return pick(k, [
        t, t, t,
        f"{a} % {bound}",
        f"max({t}, 0)",
        f"min({t}, {bound} - 1)",
        f"{a} * 2 - {k.rng.randrange(0, 3)}",
        f"abs({t})",
        f"{bound} - 1 - {a}",
    ])


def shifted(k, start):
    """The sliced dim's start, at times moved by a few elements (before
    the tensor's first row or column, with `negstart`)."""
    r = k.rng.random()
    if r < 0.2:
        return f"{start} + {k.rng.randrange(1, 6)}"
    if r < 0.35 and k.has("negstart"):
        return f"{start} - {k.rng.randrange(1, 6)}"
    return start


def rows_gather(k, x, start, rows, cols_dim):
    """`load(X[start +: rows, t])`: one element of each row, its column
    given by `t`. A row vector of X's element type."""
    src = index_input(k, "M", cols_dim, rows)
    name = k.fresh("ti")
    k.emit(f"{name} = load({src.name}[{start} +: {rows}])")
    g = k.fresh("g")
    k.emit(f"{g} = load({x.name}[{shifted(k, start)} +: {rows}, {reshaped(k, name, cols_dim)}])")
    k.bind(g, Ty("rvec", x.dtype, (rows,)), exact=True)
    return g


def cols_gather(k, x, start, cols, rows_dim, cols_dim):
    """`load(X[t, start +: cols])`: one element of each column, its row
    given by `t`. A column vector of X's element type."""
    src = index_input(k, cols_dim, rows_dim, cols)
    name = k.fresh("tc")
    k.emit(f"{name} = load({src.name}[{start} +: {cols}])")
    g = k.fresh("g")
    k.emit(f"{g} = load({x.name}[{reshaped(k, name, rows_dim)}, {shifted(k, start)} +: {cols}])")
    k.bind(g, Ty("cvec", x.dtype, (cols,)), exact=True)
    return g


def table_gather(k, start, rows, dtype):
    """`load(W[t])`: a lookup in a table of its own length L (a dim, or a
    static size). A row vector of the table's element type."""
    length = "L" if k.rng.random() < 0.7 else k.rng.randrange(5, 300)
    if length == "L" and "L" not in k.dims:
        k.dims["L"] = ("any", 1, 300)
    table = k.param("W", dtype, [length])
    src = index_input(k, "M", length, rows)
    name = k.fresh("ti")
    k.emit(f"{name} = load({src.name}[{start} +: {rows}])")
    g = k.fresh("g")
    k.emit(f"{g} = load({table.name}[{reshaped(k, name, length)}])")
    k.bind(g, Ty("rvec", dtype, (rows,)), exact=True)
    return g


def some_gathers(k, x, r0, c0, rows, cols, n):
    """Gathers of X (rows `r0 +: rows` of dims [M, n]) and of a table,
    bound as row and column vectors for later expressions (which broadcast
    them and reduce them into the outputs). Returns the row vectors and
    the column vectors made. `c0` is None where the kernel takes whole
    rows (no column slice to gather along)."""
    rvecs, cvecs = [], []
    for _ in range(pick(k, [1, 1, 2])):
        r = k.rng.random()
        if r < 0.45:
            rvecs.append(rows_gather(k, x, r0, rows, n))
        elif r < 0.75 and c0 is not None:
            cvecs.append(cols_gather(k, x, c0, cols, "M", n))
        else:
            rvecs.append(table_gather(k, r0, rows, pick(k, [x.dtype, "f32", "bf16"])))
    return rvecs, cvecs


def operand_gather(k, a, transposed, acc, rows):
    """After a product loop: one element of each row of the A operand
    (`A[row +: BM, t]`, or `A[t, row +: BM]` where A is stored K by M),
    added to the accumulator's row sums: a gathered vector in the layout of
    an accumulator's rows. Every column block adds its part."""
    src = index_input(k, "M", "K", rows if isinstance(rows, int) else 64)
    name = k.fresh("ti")
    k.emit(f"{name} = load({src.name}[row +: {rows}])")
    t = reshaped(k, name, "K")
    g = f"load({a.name}[{t}, row +: {rows}])" if transposed else f"load({a.name}[row +: {rows}, {t}])"
    z = k.param("Z", "f32", ["M"], out=True)
    k.emit(f"atomic_add({z.name}[row +: {rows}], rowsum({acc}) * 0.125 + f32({g}))")


def column_gather(k, b, acc, cols, blocks):
    """After a product loop: one element of each column of the B operand
    (`B[t, col +: BN]`, B stored K by N) added to the accumulator's column
    sums, a row of a partials tensor of `blocks` rows (a derived dim): a
    gathered vector in the layout of an accumulator's columns."""
    src = index_input(k, "N", "K", cols)
    name = k.fresh("tc")
    k.emit(f"{name} = load({src.name}[col +: {cols}])")
    p = k.param("P", "f32", [blocks, "N"], out=True)
    k.emit(f"store({p.name}[block.y, col +: {cols}], colsum({acc}) + f32(load({b.name}[{reshaped(k, name, 'K')}, "
           f"col +: {cols}])))")
