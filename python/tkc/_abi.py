"""ctypes mirrors of runtime/tkc_host.h (ABI version 1), without torch."""

import ctypes

ABI_VERSION = 1
MAX_RANK = 6

STATUS_NAMES = {
    0: "ok",
    1: "null pointer",
    2: "wrong rank or inconsistent sizes",
    3: "unsupported stride",
    4: "misaligned pointer/stride",
    5: "no specialisation for this size",
    6: "CUDA launch error",
    7: "descriptor of another ABI version",
    8: "wrong dtype",
    9: "not device memory of the current device",
    10: "CUDA runtime error",
    11: "no code for this device",
}
STATUS_LAUNCH = 6
# Where no kernel can run (no GPU, fake pointers), the statuses that come
# after every structural check has passed.
STATUS_PAST_STRUCTURAL_CHECKS = (6, 9, 10)

# (DLPack type code, bits) by tkc's names, and the reverse.
DTYPE_CODES = {"bf16": (4, 16), "f16": (2, 16), "f32": (2, 32), "f64": (2, 64), "i32": (0, 32), "i64": (0, 64),
               "i16": (0, 16), "i8": (0, 8), "u8": (1, 8), "i1": (6, 8),
               "f8e4m3": (10, 8), "f8e5m2": (12, 8)}
DTYPE_NAMES = {v: k for k, v in DTYPE_CODES.items()}
# torch's dtype names -> tkc's.
TORCH_DTYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64", "int32": "i32",
                "int64": "i64", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "i1",
                "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2"}


class TkcDtype(ctypes.Structure):
    """`tkc_dtype`, laid out as DLPack's DLDataType."""

    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class TkcTensor(ctypes.Structure):
    """`tkc_tensor`."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("abi_version", ctypes.c_uint32),
        ("dtype", TkcDtype),
        ("device", ctypes.c_int32),
        ("data", ctypes.c_void_p),
        ("rank", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
        ("sizes", ctypes.c_int64 * MAX_RANK),
        ("strides", ctypes.c_int64 * MAX_RANK),
    ]

    def __repr__(self):
        r = max(0, min(self.rank, MAX_RANK))
        dtype = DTYPE_NAMES.get((self.dtype.code, self.dtype.bits), f"({self.dtype.code}, {self.dtype.bits})")
        return (f"TkcTensor({dtype}, device={self.device}, data=0x{(self.data or 0):x}, "
                f"sizes={list(self.sizes[:r])}, strides={list(self.strides[:r])})")


LAYOUT_FIELDS = ("struct_size", "abi_version", "dtype", "device", "data", "rank", "sizes", "strides")


def layout():
    """(sizeof, then the offset of each of LAYOUT_FIELDS) of TkcTensor."""
    return (ctypes.sizeof(TkcTensor),) + tuple(getattr(TkcTensor, f).offset for f in LAYOUT_FIELDS)


def make_tensor(ptr, sizes, strides, dtype="bf16", device=0, rank=None):
    """A descriptor from a raw address (int or None), sizes and strides in
    elements, and a dtype name (or a (code, bits) pair)."""
    sizes = [int(s) for s in sizes]
    strides = [int(s) for s in strides]
    if len(sizes) != len(strides):
        raise ValueError("sizes and strides differ in length")
    if len(sizes) > MAX_RANK:
        raise ValueError(f"rank {len(sizes)} exceeds {MAX_RANK}")
    d = TkcTensor()
    d.struct_size = ctypes.sizeof(TkcTensor)
    d.abi_version = ABI_VERSION
    d.dtype.code, d.dtype.bits = DTYPE_CODES[dtype] if isinstance(dtype, str) else dtype
    d.dtype.lanes = 1
    d.device = int(device)
    d.data = int(ptr) if ptr else None
    d.rank = len(sizes) if rank is None else rank
    for i, (s, st) in enumerate(zip(sizes, strides)):
        d.sizes[i] = s
        d.strides[i] = st
    return d


class ParamInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", TkcDtype), ("is_output", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("dims", ctypes.c_char_p * MAX_RANK), ("alignment", ctypes.c_int32),
                ("row_multiple", ctypes.c_int32)]


class WhereInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("is_argument", ctypes.c_int32), ("num_values", ctypes.c_int32),
                ("values", ctypes.POINTER(ctypes.c_int64))]


class KernelInfoC(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("abi_version", ctypes.c_uint32), ("name", ctypes.c_char_p),
                ("num_tensors", ctypes.c_int32), ("tensors", ctypes.POINTER(ParamInfo)),
                ("num_constants", ctypes.c_int32), ("constants", ctypes.POINTER(ctypes.c_char_p)),
                ("num_wheres", ctypes.c_int32), ("wheres", ctypes.POINTER(WhereInfo)),
                ("num_targets", ctypes.c_int32), ("targets", ctypes.POINTER(ctypes.c_char_p))]
