"""Derived dims (`cdiv(M, 64)`) without a GPU or torch: the evaluator, the
output shapes a loader allocates, and the info and launcher checks of
kernels that have them (test/codegen/Inputs/derived-dims.tk, and the
examples' backwards with a row of partials a block)."""

import importlib
import os
import sys
import tempfile
import types
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tkc  # noqa: E402
from tkc import _dims, _loader  # noqa: E402
from test_host import FakeTensor, tools_available  # noqa: E402

DERIVED = Path(__file__).resolve().parents[2] / "test" / "codegen" / "Inputs" / "derived-dims.tk"


def torch_module_without_torch():
    """tkc.torch imported against a stand-in for torch: output_shapes reads
    only the tensors' dim() and shape."""
    stub = types.ModuleType("torch")
    stub.__getattr__ = lambda name: name
    saved = {k: sys.modules.get(k) for k in ("torch", "tkc.torch")}
    sys.modules["torch"] = stub
    sys.modules.pop("tkc.torch", None)
    try:
        return importlib.import_module("tkc.torch")
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


class Sized:
    """What output_shapes reads of an input tensor."""

    def __init__(self, *shape):
        self.shape = shape

    def dim(self):
        return len(self.shape)


class EvaluatorTest(unittest.TestCase):
    def test_values_follow_the_kernel_language(self):
        self.assertEqual(_dims.evaluate("cdiv(M, 64)", {"M": 1000}), 16)
        self.assertEqual(_dims.evaluate("cdiv(M, 64)", {"M": 1024}), 16)
        self.assertEqual(_dims.evaluate("cdiv(M, 64)", {"M": 0}), 0)
        self.assertEqual(_dims.evaluate("D / 2", {"D": 129}), 64)
        self.assertEqual(_dims.evaluate("(M + D) * 2 - D % 7", {"M": 3, "D": 64}), 133)
        self.assertEqual(_dims.evaluate("M - (N - 1)", {"M": 10, "N": 4}), 7)
        # Truncation toward zero, as in C, not Python's floor.
        self.assertEqual(_dims.evaluate("(M - 9) / 4", {"M": 2}), -1)
        self.assertEqual(_dims.evaluate("(M - 9) % 4", {"M": 2}), -3)
        self.assertEqual(_dims.evaluate("cdiv(M - 70, 64)", {"M": 7}), 0)
        self.assertEqual(_dims.evaluate("cdiv(M, 64)", {"M": 65}), 2)

    def test_names_and_plain_symbols(self):
        self.assertEqual(_dims.symbols("cdiv(M, K) + M * D"), ["M", "K", "D"])
        self.assertEqual(_dims.symbols("64"), [])
        self.assertTrue(_dims.is_symbol("M"))
        self.assertFalse(_dims.is_symbol("M / 2"))
        self.assertFalse(_dims.is_symbol(64))

    def test_errors(self):
        with self.assertRaises(ZeroDivisionError):
            _dims.evaluate("cdiv(M, K)", {"M": 5, "K": 0})
        with self.assertRaises(KeyError):
            _dims.evaluate("M / S", {"M": 5})
        for bad in ("M /", "M ** 2", "__import__('os').system('true')", "cdiv(M)", "(M", "M M", "-M", "1.5 * M"):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                _dims.parse(bad)


def info(*tensors, constants=()):
    params = tuple(_loader.Param(name, "f32", out, dims, 16, 1) for name, out, dims in tensors)
    return _loader.KernelInfo("k", params, constants, {}, ("sm_80",))


class OutputShapesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.torch = torch_module_without_torch()

    def test_derived_dims_are_computed(self):
        k = info(("X", False, ("M", "D")), ("Lo", True, ("M", "D / 2")), ("Part", True, ("cdiv(M, 64)", "D")),
                 ("Every", True, ("M / S", 4)), constants=("S",))
        self.assertEqual(self.torch.output_shapes(k, [Sized(1000, 128)], [2]),
                         {"Lo": (1000, 64), "Part": (16, 128), "Every": (500, 4)})
        self.assertEqual(self.torch.output_shapes(k, [Sized(1, 6)], [1]),
                         {"Lo": (1, 3), "Part": (1, 6), "Every": (1, 4)})

    def test_an_input_derived_dim_binds_nothing(self):
        # The partials' rows are checked by the launcher; here they give no R.
        k = info(("P", False, ("cdiv(R, 32)", "D")), ("Out", True, ("R",)))
        with self.assertRaises(tkc.ShapeError) as caught:
            self.torch.output_shapes(k, [Sized(4, 8)])
        self.assertIn("no input gives Out's dims ['R']", str(caught.exception))

    def test_missing_names_and_zero_divisors_are_shape_errors(self):
        k = info(("G", False, ("K",)), ("X", False, ("M",)), ("Q", True, ("cdiv(M, K)",)))
        self.assertEqual(self.torch.output_shapes(k, [Sized(3), Sized(1000)]), {"Q": (334,)})
        with self.assertRaises(tkc.ShapeError) as caught:
            self.torch.output_shapes(k, [Sized(0), Sized(1000)])
        self.assertIn("Q's dim `cdiv(M, K)` divides by zero", str(caught.exception))


@unittest.skipUnless(tools_available(), "needs the tkc compiler and nvcc")
class DerivedKernelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cache = Path(os.environ.get("TKC_TEST_CACHE") or tempfile.mkdtemp(prefix="tkc-test-"))
        cls.halves = tkc.load(DERIVED, target="sm_80", cache_dir=cache).halves

    def test_info_carries_the_expressions(self):
        self.assertEqual([p.dims for p in self.halves.info.tensors],
                         [("M", "D"), ("M", "D / 2"), ("cdiv(M, 64)", "D"), ("M / S", "D"), ("K",),
                          ("cdiv(M, K)",)])
        torch = torch_module_without_torch()
        self.assertEqual(torch.output_shapes(self.halves.info, [Sized(1000, 128), Sized(3)], [2]),
                         {"Lo": (1000, 64), "Part": (16, 128), "Every": (500, 128), "Q": (334,)})

    def test_the_launcher_names_the_dim_and_its_value(self):
        a = 0x7F0000000000
        args = [FakeTensor((1000, 128), "f32", a), FakeTensor((1000, 64), "f32", a + (1 << 24)),
                FakeTensor((15, 128), "f32", a + (2 << 24)), FakeTensor((500, 128), "f32", a + (3 << 24)),
                FakeTensor((3,), "f32", a + (4 << 24)), FakeTensor((334,), "f32", a + (5 << 24)), 2]
        with self.assertRaises(tkc.ShapeError) as caught:
            self.halves(*args)
        self.assertIn("Part.sizes[0] is 15 but cdiv(M, 64) is 16", str(caught.exception))


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@unittest.skipUnless(tools_available(), "needs the tkc compiler and nvcc")
class ExamplePartialsTest(unittest.TestCase):
    """The examples' backwards that write a row of f32 partials a block
    declare the partials' rows as a derived dim: loaders size them from the
    other inputs, and the launchers refuse any other row count."""

    # (example, kernel, input shapes, constants, partials, their rows' expression, rows a block)
    CASES = [
        ("rmsnorm", "rmsnorm_bwd", [(1000, 768), (1000, 768), (768,), (1000,)], [], ("dWp",), "cdiv(R, 32)", 32),
        ("residual_layernorm", "residual_layernorm_bwd",
         [(1000, 768), (1000, 768), (1000, 768), (768,), (1000,), (1000,)], [], ("dWp", "dBp"), "cdiv(R, 32)", 32),
        ("gelu_bwd", "gelu_bwd", [(1001, 3072), (1001, 3072)], [1], ("dBp",), "cdiv(M, 64)", 64),
    ]

    @classmethod
    def setUpClass(cls):
        cache = Path(os.environ.get("TKC_TEST_CACHE") or tempfile.mkdtemp(prefix="tkc-test-"))
        cls.torch = torch_module_without_torch()
        cls.launchers = {kernel: getattr(tkc.load(EXAMPLES / f"{stem}.tk", target="sm_80", cache_dir=cache), kernel)
                         for stem, kernel, *_ in cls.CASES}

    def test_loaders_size_the_partials_a_row_a_block(self):
        for _, kernel, shapes, constants, partials, expression, per_block in self.CASES:
            with self.subTest(kernel=kernel):
                info = self.launchers[kernel].info
                declared = {p.name: p.dims for p in info.outputs}
                rows, cols = shapes[0]
                for n in partials:
                    self.assertEqual(declared[n], (expression, declared[n][1]))
                sizes = self.torch.output_shapes(info, [Sized(*s) for s in shapes], constants)
                self.assertEqual({n: sizes[n] for n in partials}, {n: (-(-rows // per_block), cols) for n in partials})

    def call(self, kernel, shapes, constants, partials, change):
        """The launcher on fake tensors of the declared shapes, with `change`
        rows added to every partials buffer."""
        launcher = self.launchers[kernel]
        info = launcher.info
        sizes = dict(zip((p.name for p in info.inputs), shapes))
        sizes.update(self.torch.output_shapes(info, [Sized(*s) for s in shapes], constants))
        for n in partials:
            sizes[n] = (sizes[n][0] + change,) + sizes[n][1:]
        launcher(*(FakeTensor(sizes[p.name], p.dtype, 0x7F0000000000 + (i << 28)) for i, p in enumerate(info.tensors)),
                 *constants)

    def test_the_launchers_refuse_other_row_counts(self):
        for _, kernel, shapes, constants, partials, expression, per_block in self.CASES:
            blocks = -(-shapes[0][0] // per_block)
            for change in (-1, 1):
                with self.subTest(kernel=kernel, change=change):
                    with self.assertRaises(tkc.ShapeError) as caught:
                        self.call(kernel, shapes, constants, partials, change)
                    self.assertIn(f"{partials[0]}.sizes[0] is {blocks + change} but {expression} is {blocks}",
                                  str(caught.exception))
            # The declared rows pass every structural check: no GPU here
            # (CudaError), or fake pointers on one (DeviceError).
            with self.subTest(kernel=kernel, change=0), self.assertRaises((tkc.CudaError, tkc.DeviceError)):
                self.call(kernel, shapes, constants, partials, 0)


if __name__ == "__main__":
    unittest.main()
