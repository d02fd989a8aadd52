#!/usr/bin/env python3
"""Tests of the generator itself (run by test/tools/tkgen.test): the same
kernels for the same seed, whatever the file they are generated into, and
the feature switches honoured. That tkc accepts them is the lit test's."""

import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen.kernels import SKELETONS  # noqa: E402
from gen.program import ALL_FEATURES, generate_file, generate_kernel, pick_runs  # noqa: E402
import random  # noqa: E402


def kernels_of(text):
    return ["kernel" + k for k in text.split("\nkernel")[1:]]


class Determinism(unittest.TestCase):
    def test_same_seed_same_file(self):
        self.assertEqual(generate_file(7, 20, ALL_FEATURES), generate_file(7, 20, ALL_FEATURES))

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
                          "f16(", "f32(", " % ", " / ", "min(", "max(", "exp2(", "i32[", "t_"]:
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
