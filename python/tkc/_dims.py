"""Derived dims of kernel parameters (`cdiv(M, 64)`, `D / 2`), as the info
table spells them (docs/abi.md): names and integer literals combined with
`+ - * / %` and `cdiv(a, b)`, with the kernel language's integer semantics
(`/` and `%` truncate toward zero, `cdiv` rounds the exact quotient up).
A small recursive-descent reader; nothing is ever passed to eval()."""

import functools
import re

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(.))")


def is_symbol(dim):
    """Whether a dim string is a plain name (`M`) rather than an expression."""
    return isinstance(dim, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", dim) is not None


def _tokens(text):
    out = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        number, name, other = m.groups()
        out.append(("int", int(number)) if number is not None else ("name", name) if name is not None
                   else ("op", other))
        pos = m.end()
    return out


def _div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _rem(a, b):
    return a - _div(a, b) * b


def _cdiv(a, b):
    return _div(a, b) + (1 if _rem(a, b) != 0 and (a < 0) == (b < 0) else 0)


_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
        "/": _div, "%": _rem, "cdiv": _cdiv}


@functools.lru_cache(maxsize=None)
def parse(text):
    """The expression as a tree: an int, a name (str), or (op, lhs, rhs).
    Raises ValueError for anything outside the grammar. A kernel's dims
    are few and fixed and a loader reads them on every call: each text is
    parsed once (the trees are immutable)."""
    tokens = _tokens(text)
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else ("end", None)

    def take(kind, value=None):
        nonlocal pos
        tok = peek()
        if tok[0] != kind or (value is not None and tok[1] != value):
            raise ValueError(f"unexpected {tok[1] if tok[1] is not None else 'end'} in dimension `{text}`")
        pos += 1
        return tok[1]

    def atom():
        kind, value = peek()
        if kind == "int":
            return take("int")
        if kind == "op" and value == "(":
            take("op", "(")
            inner = total()
            take("op", ")")
            return inner
        name = take("name")
        if name == "cdiv" and peek() == ("op", "("):
            take("op", "(")
            a = total()
            take("op", ",")
            b = total()
            take("op", ")")
            return ("cdiv", a, b)
        return name

    def binary(operand, ops):
        lhs = operand()
        while peek()[0] == "op" and peek()[1] in ops:
            op = take("op")
            lhs = (op, lhs, operand())
        return lhs

    def product():
        return binary(atom, "*/%")

    def total():
        return binary(product, "+-")

    tree = total()
    if pos != len(tokens):
        raise ValueError(f"unexpected {peek()[1]} in dimension `{text}`")
    return tree


def symbols(dim):
    """The names a dim string uses, in order of first appearance."""
    return list(_symbols(dim))


@functools.lru_cache(maxsize=None)
def _symbols(dim):
    out = []

    def walk(node):
        if isinstance(node, str):
            if node not in out:
                out.append(node)
        elif isinstance(node, tuple):
            walk(node[1])
            walk(node[2])

    walk(parse(dim))
    return tuple(out)


def evaluate(dim, values):
    """The value of a dim string given {name: int}. Raises KeyError naming a
    missing name and ZeroDivisionError where a divisor is zero."""
    def value(node):
        if isinstance(node, int):
            return node
        if isinstance(node, str):
            return values[node]
        op, a, b = node
        a, b = value(a), value(b)
        if op in ("/", "%", "cdiv") and b == 0:
            raise ZeroDivisionError(f"`{dim}` divides by zero")
        return _OPS[op](a, b)

    return value(parse(dim))
