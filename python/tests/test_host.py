"""Host-only tests of the tkc package: no GPU and no torch needed. The tests
that build a kernel need the tkc compiler (build/tools/tkc or $TKC) and
nvcc; they call the launcher with fake pointers, whose structural checks
answer before any CUDA call."""

import ctypes
import os
import shutil
import struct
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tkc  # noqa: E402
from tkc import _abi, _build, _loader, bench, errors  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class FakeDevice:
    def __init__(self, kind="cuda", index=0):
        self.type, self.index = kind, index


class FakeTensor:
    """What the loader reads of a torch tensor, at a made-up address."""

    def __init__(self, shape, dtype="bf16", address=0x7F0000000000, strides=None, device=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.address = address
        self.device = device or FakeDevice()
        if strides is None:
            strides, acc = [], 1
            for s in reversed(self.shape):
                strides.append(acc)
                acc *= s
            strides = list(reversed(strides))
        self._strides = tuple(strides)

    def data_ptr(self):
        return self.address

    def stride(self):
        return self._strides

    def get_device(self):
        return self.device.index if self.device.type == "cuda" else -1


class DescribedTensor(FakeTensor):
    """A tensor the packed path cannot read (no get_device): the launcher
    falls back to describing it field by field."""

    get_device = None


class AbiTest(unittest.TestCase):
    def test_descriptor_layout_matches_the_header(self):
        # sizeof, then struct_size, abi_version, dtype, device, data, rank, sizes, strides
        self.assertEqual(_abi.layout(), (128, 0, 4, 8, 12, 16, 24, 32, 80))

    def test_make_tensor_fills_in_version_and_dtype(self):
        t = tkc.make_tensor(0x1000, (3, 4), (4, 1), "f16", device=2)
        self.assertEqual((t.struct_size, t.abi_version), (128, 1))
        self.assertEqual((t.dtype.code, t.dtype.bits, t.dtype.lanes), (2, 16, 1))
        self.assertEqual((t.device, t.rank, list(t.sizes[:2]), list(t.strides[:2])), (2, 2, [3, 4], [4, 1]))
        with self.assertRaises(ValueError):
            tkc.make_tensor(0x1000, [1] * 7, [1] * 7)

    def test_every_status_has_its_exception(self):
        for status, cls in errors.ERRORS_BY_STATUS.items():
            e = errors.error_for(status, "k", "msg")
            self.assertIsInstance(e, cls)
            self.assertIsInstance(e, tkc.TkcError)
            self.assertEqual((e.status, e.kernel, e.message), (status, "k", "msg"))
        self.assertEqual(sorted(errors.ERRORS_BY_STATUS), list(range(1, 12)))
        self.assertIsInstance(errors.error_for(8, "k", ""), TypeError)

    def test_header_lists_the_kernels(self):
        text = ("int tkc_a(void *stream);\nconst tkc_kernel_info *tkc_attn_bwd_dq_info(void);\n"
                "const tkc_kernel_info *tkc_b_info(void);\n")
        self.assertEqual(_loader.kernels_in_header(text), ["attn_bwd_dq", "b"])


class BenchTest(unittest.TestCase):
    def test_each_round_calls_every_candidate_once_in_a_fixed_random_order(self):
        rounds = bench.interleaved_order(["a", "b", "c"], 20)
        self.assertEqual(rounds, bench.interleaved_order(["a", "b", "c"], 20))
        self.assertTrue(all(sorted(r) == ["a", "b", "c"] for r in rounds))
        self.assertGreater(len({tuple(r) for r in rounds}), 1)
        self.assertEqual(bench.sets_for_l2(0), 1)
        self.assertEqual(bench.sets_for_l2(1 << 20, l2_bytes=10 << 20), 16)


def tools_available():
    try:
        _build.find_tkc()
        _build.find_nvcc()
        return True
    except tkc.BuildError:
        return False


@unittest.skipUnless(tools_available(), "needs the tkc compiler and nvcc")
class LauncherTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cache = Path(os.environ.get("TKC_TEST_CACHE") or tempfile.mkdtemp(prefix="tkc-test-"))
        cls.lib = tkc.load(EXAMPLES / "layernorm.tk", target="sm_80", cache_dir=cls.cache)
        cls.ln = cls.lib.layernorm

    def args(self, **change):
        t = dict(X=FakeTensor((8, 1024)), W=FakeTensor((1024,), address=0x7F0000100000),
                 Bias=FakeTensor((1024,), address=0x7F0000200000), Y=FakeTensor((8, 1024), address=0x7F0000300000),
                 Mean=FakeTensor((8,), "f32", address=0x7F0000400000),
                 Rstd=FakeTensor((8,), "f32", address=0x7F0000500000))
        t.update(change)
        return [t[name] for name in ("X", "W", "Bias", "Y", "Mean", "Rstd")]

    def test_info_describes_the_kernel(self):
        info = self.ln.info
        self.assertEqual(info.name, "layernorm")
        self.assertEqual([(p.name, p.dtype, p.output, p.dims) for p in info.tensors],
                         [("X", "bf16", False, ("R", "D")), ("W", "bf16", False, ("D",)),
                          ("Bias", "bf16", False, ("D",)), ("Y", "bf16", True, ("R", "D")),
                          ("Mean", "f32", True, ("R",)), ("Rstd", "f32", True, ("R",))])
        self.assertEqual(info.constants, ())
        self.assertEqual(info.wheres, {"D": ((384, 768, 1024, 2048, 4096), False)})
        self.assertEqual(info.targets, ("sm_80",))
        self.assertEqual(self.ln.info.tensors[0].alignment, 16)

    def check_raises(self, cls, text, args, **kw):
        with self.assertRaises(cls) as caught:
            self.ln(*args, **kw)
        self.assertIn(text, str(caught.exception))
        self.assertIn(text, caught.exception.message)
        self.assertEqual(caught.exception.kernel, "layernorm")

    def test_launcher_messages_become_typed_exceptions(self):
        self.check_raises(tkc.DTypeError, "X must be bf16, not f16", self.args(X=FakeTensor((8, 1024), "f16")))
        self.check_raises(tkc.DTypeError, "Y must be bf16, not f32",
                          self.args(Y=FakeTensor((8, 1024), "torch.float32", address=0x7F0000300000)))
        self.check_raises(tkc.ShapeError, "X must have rank 2, not 3", self.args(X=FakeTensor((1, 8, 1024))))
        self.check_raises(tkc.NullPointerError, "W's data is null", self.args(W=FakeTensor((1024,), address=0)))
        self.check_raises(tkc.StrideError, "unit stride", self.args(X=FakeTensor((8, 1024), strides=(2048, 2))))
        self.check_raises(tkc.AlignmentError, "X must be 16-byte aligned",
                          self.args(X=FakeTensor((8, 1024), address=0x7F0000000002)))
        self.check_raises(tkc.AlignmentError, "multiple of 8",
                          self.args(X=FakeTensor((8, 1024), strides=(1001, 1))))
        self.check_raises(tkc.NoSpecializationError, "no specialisation for D = 96",
                          self.args(X=FakeTensor((8, 96)), W=FakeTensor((96,)), Bias=FakeTensor((96,)),
                                    Y=FakeTensor((8, 96))))
        self.check_raises(tkc.ShapeError, "W.sizes[0] is 2048", self.args(W=FakeTensor((2048,))))
        self.check_raises(tkc.ShapeError, "Rstd.sizes[0] is 4",
                          self.args(Rstd=FakeTensor((4,), "f32", address=0x7F0000500000)))

    def test_a_valid_call_passes_every_structural_check(self):
        # No GPU here: the device query fails (CudaError); on a GPU the
        # fake pointers are not device memory (DeviceError).
        with self.assertRaises((tkc.CudaError, tkc.DeviceError)):
            self.ln(*self.args())
        # A host tensor is never launched on.
        with self.assertRaises((tkc.CudaError, tkc.DeviceError)):
            self.ln(*self.args(X=FakeTensor((8, 1024), device=FakeDevice("cpu", None))))

    def test_packed_descriptors_equal_described_ones(self):
        tensors = self.args(X=FakeTensor((8, 1024), strides=(1032, 1), address=0x7F0000000040),
                            Mean=FakeTensor((8,), "f32", address=0x7F0000400000, device=FakeDevice("cuda", 3)))
        buf, device = _loader.pack(tensors)
        self.assertEqual(device, 0)
        for i, (t, p) in enumerate(zip(tensors, self.ln.info.tensors)):
            d = _loader.describe(t, p, "layernorm")
            self.assertEqual(buf.raw[i * 128:(i + 1) * 128], ctypes.string_at(ctypes.addressof(d), 128), p.name)
        self.assertIsNone(_loader.pack(self.args(X=DescribedTensor((8, 1024)))))
        self.assertIsNone(_loader.pack(self.args(X=FakeTensor((8, 1024), "c64"))))

    def test_torch_gpu_tensors_are_flagged_as_device_memory(self):
        # A type from torch's modules vouches for its CUDA memory; others
        # and host tensors leave the launcher to ask the driver.
        TorchLike = type("Tensor", (FakeTensor,), {"__module__": "torch.fake"})
        tensors = self.args(X=TorchLike((8, 1024)), W=TorchLike((1024,), device=FakeDevice("cpu", None)))
        buf, _ = _loader.pack(tensors)
        flags = [struct.unpack_from("<I", buf.raw, i * 128 + 28)[0] for i in range(len(tensors))]
        self.assertEqual(flags, [1, 0, 0, 0, 0, 0])
        for i, (t, p) in enumerate(zip(tensors, self.ln.info.tensors)):
            self.assertEqual(_loader.describe(t, p, "layernorm").flags, flags[i], p.name)

    def test_described_tensors_get_the_same_answers(self):
        self.check_raises(tkc.AlignmentError, "multiple of 8",
                          self.args(X=DescribedTensor((8, 1024), strides=(1001, 1))))
        with self.assertRaises(tkc.DTypeError):
            self.ln(*self.args(X=FakeTensor((8, 1024), "c64")))
        with self.assertRaises((tkc.CudaError, tkc.DeviceError)):
            self.ln(*self.args(X=DescribedTensor((8, 1024))))

    def test_wrong_versions_are_refused(self):
        descs = [_loader.describe(t, p, "layernorm") for t, p in zip(self.args(), self.ln.info.tensors)]
        descs[2].abi_version = 2
        self.assertEqual(self.ln.raw(descs), 7)
        self.assertIn("ABI version 2", self.ln.error_message())

    def test_argument_counts_are_checked_before_the_call(self):
        with self.assertRaises(TypeError):
            self.ln(*self.args()[:3])
        with self.assertRaises(TypeError):
            self.ln(*self.args(), 1)
        with self.assertRaises(TypeError):
            self.ln(*self.args()[:3], "not a tensor")

    def test_the_backward_kernels_are_in_the_library(self):
        bwd = self.lib.layernorm_bwd.info
        self.assertEqual([(p.name, p.dtype, p.output) for p in bwd.tensors],
                         [("dY", "bf16", False), ("X", "bf16", False), ("W", "bf16", False), ("Mean", "f32", False),
                          ("Rstd", "f32", False), ("dX", "bf16", True), ("dWp", "f32", True), ("dBp", "f32", True)])
        self.assertEqual(bwd.wheres, {"D": ((384, 768, 1024), False)})
        self.assertEqual([p.name for p in self.lib.layernorm_bwd_dwdb.info.outputs], ["dW", "dBias"])

    def test_per_target_launchers(self):
        sm80 = self.lib.launcher("layernorm", "sm_80")
        self.assertEqual(sm80.symbol, "tkc_layernorm_sm80")
        with self.assertRaises(tkc.DTypeError):
            sm80(*self.args(X=FakeTensor((8, 1024), "f16")))
        with self.assertRaises(tkc.DeviceError):
            self.lib.launcher("layernorm", "sm_90a")

    def test_builds_are_cached_by_content(self):
        again = tkc.compile(EXAMPLES / "layernorm.tk", target="sm_80", cache_dir=self.cache)
        self.assertTrue(again.cached)
        self.assertEqual(again.so, self.lib.path)
        self.assertTrue(again.cu.exists() and again.header.exists())
        source = (EXAMPLES / "layernorm.tk").read_text()
        other = tkc.compile(source + "\n// changed\n", target="sm_80", cache_dir=self.cache)
        self.assertNotEqual(other.folder, again.folder)
        self.assertFalse(other.cached)

    def test_build_errors_carry_the_compiler_output(self):
        with self.assertRaises(tkc.BuildError) as caught:
            tkc.compile("kernel broken(\n", target="sm_80", cache_dir=self.cache)
        self.assertIn("error:", str(caught.exception))
        with self.assertRaises(tkc.BuildError):
            tkc.compile(EXAMPLES / "layernorm.tk", target="sm_70", cache_dir=self.cache)


class ImportTest(unittest.TestCase):
    def test_the_package_imports_without_torch(self):
        import subprocess
        code = ("import sys; sys.modules['torch'] = None; sys.path.insert(0, sys.argv[1]); "
                "import tkc, tkc.bench; print('ok', tkc.ABI_VERSION)")
        out = subprocess.run([sys.executable, "-c", code, str(Path(tkc.__file__).parents[1])], capture_output=True,
                             text=True)
        self.assertEqual(out.stdout.strip(), "ok 1", out.stderr)


if __name__ == "__main__":
    unittest.main()
