#!/usr/bin/env python3
"""Tests of the generator itself (run by test/tools/tkgen.test): the same
kernels for the same seed, whatever the file they are generated into, and
the feature switches honoured. That tkc accepts them is the lit test's."""

import copy
import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen.kernels import SKELETONS  # noqa: E402
from gen.program import ALL_FEATURES, generate_file as generate_afresh, generate_kernel, pick_runs  # noqa: E402
import functools  # noqa: E402
import random  # noqa: E402


@functools.lru_cache(maxsize=None)
def cached_file(seed, count, features, start=0):
    return generate_afresh(seed, count, features, start)


def generate_file(seed, count, features, start=0):
    """A file's (text, manifest), generated once per arguments: the tests
    read the same large files; the manifest copied, as tests may not
    change it."""
    text, manifest = cached_file(seed, count, frozenset(features), start)
    return text, copy.deepcopy(manifest)


def kernels_of(text):
    return ["kernel" + k for k in text.split("\nkernel")[1:]]


class Determinism(unittest.TestCase):
    def test_same_seed_same_file(self):
        self.assertEqual(generate_afresh(7, 20, ALL_FEATURES), generate_afresh(7, 20, ALL_FEATURES))

    def test_kernel_independent_of_its_file(self):
        whole, _ = generate_file(7, 12, ALL_FEATURES)
        alone, _ = generate_file(7, 1, ALL_FEATURES, start=9)
        self.assertEqual(kernels_of(whole)[9], kernels_of(alone)[0])

    def test_seeds_differ(self):
        self.assertNotEqual(generate_file(1, 5, ALL_FEATURES)[0], generate_file(2, 5, ALL_FEATURES)[0])

    def test_runs_deterministic(self):
        _, manifest = generate_file(3, 10, ALL_FEATURES)
        a = [pick_runs(e, random.Random(4), 2) for e in manifest]
        b = [pick_runs(e, random.Random(4), 2) for e in manifest]
        self.assertEqual(a, b)


class Coverage(unittest.TestCase):
    def setUp(self):
        self.text, self.manifest = generate_file(11, 300, ALL_FEATURES)

    def test_every_skeleton_and_construct_appears(self):
        for construct in ["mma(", "^T", "[:, new]", "[new, :]", "rowsum(", "rowmax(", "rowmin(", "where(", "rowidx(",
                          "colidx(", "cdiv(", "pipelined(stages =", "atomic_add(", "if sm", "where BM =", "bf16(",
                          "f16(", "f32(", " % ", " / ", "min(", "max(", "exp2(", "i32[", "t_", "erf(", "sigmoid(",
                          "silu(", "colsum("]:
            self.assertIn(construct, self.text, construct)

    def test_balanced(self):
        for k in kernels_of(self.text):
            self.assertEqual(k.count("("), k.count(")"), k)
            self.assertEqual(k.count("{"), k.count("}"), k)
            self.assertEqual(k.count("["), k.count("]"), k)

    def test_tails_in_run_sizes(self):
        rng = random.Random(1)
        sizes = [v for e in self.manifest for r in pick_runs(e, rng, 2) for v in r["sizes"].values()]
        self.assertGreater(sum(v % 16 != 0 for v in sizes), len(sizes) // 2)

    def test_specialised_names(self):
        for e in self.manifest:
            for r in pick_runs(e, random.Random(2), 1):
                self.assertTrue(r["kernel"].startswith(e["name"]))
                self.assertEqual(r["kernel"].count("__"), len(e["specialised"]))


class WideRows(unittest.TestCase):
    """Tiles wider than 128 columns, whose strip layouts hold chunks of 8, 4
    or 2 elements a lane, and whole rows of a specialised width."""

    def setUp(self):
        self.text, self.manifest = generate_file(7, 300, ALL_FEATURES)

    def tile_widths(self, text):
        return {int(c) for c in re.findall(r"\[\d+, (\d+)\]", text)}

    def test_strip_chunks_of_each_width(self):
        widths = self.tile_widths(self.text)
        # Chunks of 2 (not a multiple of 128), of 4 (of 128, not 256), of 8.
        self.assertTrue(widths & {192, 320}, widths)
        self.assertTrue(widths & {384, 640}, widths)
        self.assertTrue(widths & {512, 768}, widths)

    def test_whole_rows_of_specialised_widths(self):
        whole = [k for k in kernels_of(self.text) if re.search(r"where N in \{\d+, \d+", k) and "+: " in k
                 and re.search(r"\[\w+ \+: \d+, :\]", k)]
        self.assertTrue(whole)
        for k in whole:
            values = [int(v) for v in re.search(r"where N in \{([\d, ]+)\}", k).group(1).split(", ")]
            self.assertTrue(all(v % 64 == 0 and v > 128 for v in values), k)
        self.assertTrue(any("colsum(" in k and "[block.x, :]" in k for k in whole))
        self.assertTrue(any("[new, :]" in k for k in whole))
        self.assertTrue(any("[:, new]" in k for k in whole))

    def test_wide_tiles_split_by_whole_rows(self):
        for k in kernels_of(self.text):
            warps = int(re.search(r"warps\((\d+)\)", k).group(1))
            for rows, cols in re.findall(r"\[(\d+), (\d+|N)\]", k):
                if cols == "N" or int(cols) > 128:
                    self.assertEqual(int(rows) % warps, 0, k)

    def test_avoided(self):
        text, _ = generate_file(7, 300, ALL_FEATURES - {"wide_rows"})
        self.assertFalse(self.tile_widths(text) & {192, 320, 384, 512, 640, 768})
        self.assertIsNone(re.search(r"where N in \{[\d, ]*(192|320|384|512|640|768)", text))

    def test_deterministic(self):
        self.assertEqual(generate_afresh(7, 300, ALL_FEATURES), (self.text, self.manifest))


def derived(dim):
    return isinstance(dim, str) and not dim.isidentifier()


class Gathers(unittest.TestCase):
    """Loads through tiles of i32 indices, whose inputs the runner draws
    around the indexed dim (some out of range)."""

    def setUp(self):
        self.text, self.manifest = generate_file(11, 300, ALL_FEATURES)

    def test_each_form(self):
        # X[r +: E, t] (also in a loop, at a chunk's offset), X[t, c +: E], W[t].
        self.assertRegex(self.text, r"load\(X\d+\[r0 \+: \d+, [^\]]*\bti\d*\b")
        self.assertRegex(self.text, r"load\(X\d+\[[^\]]*\btc\d+\b[^\]]*, c0 \+: \d+\]\)")
        self.assertRegex(self.text, r"load\(W\d+\[[^\]:+]*\bti\d+\b[^\]]*\]\)")
        self.assertRegex(self.text, r"gs = gs \+ f32\(load\(X\d+\[.*j \* \d+ \+ ti")
        # An mma operand's rows, with the accumulator's row sums.
        self.assertRegex(self.text, r"rowsum\(acc\) \* 0.125 \+ f32\(load\(A\d+\[[^\]]*\bt")
        # An mma operand's columns, with the accumulator's column sums.
        self.assertRegex(self.text, r"colsum\(acc\) \+ f32\(load\(B\d+\[[^\]]*\btc\d*[^\]]*, col \+: ")
        # Slices that start past the block's first row (or before it).
        self.assertRegex(self.text, r"load\(X\d+\[r0 \+ \d \+: \d+, [^\]]*\bt")
        self.assertRegex(self.text, r"load\(X\d+\[r0 - \d \+: \d+, [^\]]*\bt")

    def test_index_ranges_reach_past_the_dim(self):
        rng = random.Random(3)
        below = above = inside = 0
        for e in self.manifest:
            indexed = {p["name"]: p["ints"] for p in e["params"] if "ints" in p}
            for r in pick_runs(e, rng, 2):
                self.assertEqual(set(r.get("ints", {})), set(indexed))
                for name, (lo, hi) in r.get("ints", {}).items():
                    dim = indexed[name][0]
                    size = dim if isinstance(dim, int) else r["sizes"][dim]
                    self.assertLessEqual(lo, 0)
                    self.assertGreaterEqual(hi, size - 1)
                    below += lo < 0
                    above += hi >= size
                    inside += lo == 0 and hi == size - 1
        self.assertTrue(below and above and inside, (below, above, inside))

    def test_some_kernels_not_all(self):
        with_gathers = [k for k in kernels_of(self.text) if ": i32[" in k.split("\n", 1)[0]]
        self.assertGreater(len(with_gathers), 10)
        self.assertLess(len(with_gathers), 100)

    def test_avoided(self):
        text, manifest = generate_file(11, 300, ALL_FEATURES - {"gather"})
        self.assertNotIn(": i32[", text)
        self.assertFalse([p for e in manifest for p in e["params"] if "ints" in p])


class DerivedDims(unittest.TestCase):
    def setUp(self):
        self.text, self.manifest = generate_file(11, 300, ALL_FEATURES)

    def params(self, manifest):
        return [p for e in manifest for p in e["params"]]

    def test_operators_and_where_values(self):
        exprs = {d for p in self.params(self.manifest) for d in p["dims"] if derived(d)}
        for op in ["cdiv(", " + ", " - ", " * ", " / ", " % "]:
            self.assertTrue(any(op in x for x in exprs), op)
        self.assertTrue(any("flag" in x for x in exprs))
        self.assertTrue(any(p["out"] for p in self.params(self.manifest) if any(map(derived, p["dims"]))))
        self.assertTrue(any(not p["out"] for p in self.params(self.manifest) if any(map(derived, p["dims"]))))

    def test_never_a_row_length(self):
        # sm_90a wants the last dim of a 2-d tensor a multiple of 8.
        for p in self.params(self.manifest):
            if len(p["dims"]) == 2:
                self.assertFalse(derived(p["dims"][1]), p)

    def test_runs_name_only_bound_dims(self):
        for e in self.manifest:
            for r in pick_runs(e, random.Random(5), 1):
                self.assertFalse([n for n in r["sizes"] if derived(n)])

    def test_avoided(self):
        _, manifest = generate_file(11, 300, ALL_FEATURES - {"derived_dims"})
        self.assertFalse([p for p in self.params(manifest) if any(map(derived, p["dims"]))])


class Features(unittest.TestCase):
    def test_avoided_temp_names(self):
        text, _ = generate_file(5, 200, ALL_FEATURES - {"tempnames"})
        self.assertIsNone(re.search(r"\bt_\d", text))
        self.assertIsNotNone(re.search(r"\bt_\d", generate_file(5, 200, ALL_FEATURES)[0]))

    def test_avoided_skeletons(self):
        text, _ = generate_file(5, 100, {"elementwise"})
        self.assertNotIn("for ", text)
        self.assertNotIn("mma(", text)

    def test_every_skeleton_reachable(self):
        for name in SKELETONS:
            k = generate_kernel(1, 0, {name})
            self.assertTrue(k.lines, name)


if __name__ == "__main__":
    unittest.main()
