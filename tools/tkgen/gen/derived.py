"""Derived dims (feature `derived_dims`): parameter dims written as
expressions of the dims that parameters have alone and of `where NAME in
{...}` values, with `+ - * / %` and `cdiv` (grammar/reference.md, *Derived
dimensions*). The launcher and tkc-interp compute their sizes; the run
sizes name only the bound dims.

Every expression is one the compiler can show is never negative for any
size (it rejects `M - 1`), and is at least what the kernel indexes, so
that it only adds rows nobody writes (left NaN, as a never-written
element) or reads (an input's extra elements). They are never the last
dim of a 2-d tensor, whose size sm_90a wants a multiple of 8 elements.
"""


def pick(k, xs):
    return xs[k.rng.randrange(len(xs))]


def wanted(k, chance):
    return k.has("derived_dims") and k.rng.random() < chance


def flag(k):
    """A `where` value in {0, 1} of the kernel, if it has one."""
    return pick(k, list(k.consts)) if k.consts else None


def at_least(k, dim, extent):
    """An expression at least `dim` (a bound name; a static size gives a
    larger static size), at times rounded up to a multiple of `extent`."""
    if isinstance(dim, int):
        return dim + k.rng.randrange(0, 9)
    options = [
        f"{dim} + {k.rng.randrange(1, 9)}",
        f"cdiv({dim}, {extent}) * {extent}",
        f"({dim} + {extent - 1}) / {extent} * {extent}",
        f"{dim} + {dim} % {k.rng.randrange(2, 7)}",
        f"{dim} + 8 - {dim} % 8",
        f"{dim} * 2",
    ]
    f = flag(k)
    if f:
        options.append(f"{dim} + {f} * {extent}")
    return pick(k, options)


def blocks(k, dim, extent):
    """An expression at least cdiv(dim, extent): rows of a tensor of one
    row per block of `extent` rows of `dim`."""
    options = [
        f"cdiv({dim}, {extent})",
        f"cdiv({dim}, {extent})",
        f"({dim} + {extent - 1}) / {extent}",
        f"{dim} / {extent} + 1",
        f"cdiv({dim} + {dim} % 3, {extent})",
        f"cdiv({dim}, {2 * extent}) * 2",
    ]
    f = flag(k)
    if f:
        options.append(f"cdiv({dim}, {extent}) + {f}")
    return pick(k, options)
