"""Loading a built library and calling its launchers through ctypes."""

import ctypes
import re
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from . import _abi
from .errors import AbiError, DeviceError, DTypeError, ShapeError, TkcError, error_for


@dataclass(frozen=True)
class Param:
    """A tensor parameter as `tkc_NAME_info()` describes it."""
    name: str
    dtype: str          # "bf16", "f32", ...
    output: bool
    dims: tuple         # each a symbol ("M", "D"), an int, or a derived dim ("cdiv(M, 64)", python/tkc/_dims.py)
    alignment: int      # bytes, for the pointer and the outer strides
    row_multiple: int   # elements the last size must be a multiple of

    @property
    def rank(self):
        return len(self.dims)


@dataclass(frozen=True)
class KernelInfo:
    name: str
    tensors: tuple      # (Param, ...) in argument order
    constants: tuple    # names of the int64 arguments after the tensors
    wheres: dict        # name -> (values, passed as an argument?)
    targets: tuple      # ("sm_80", "sm_90a")

    @property
    def inputs(self):
        return tuple(p for p in self.tensors if not p.output)

    @property
    def outputs(self):
        return tuple(p for p in self.tensors if p.output)


def _text(b):
    return b.decode() if b is not None else None


def read_info(c_info):
    """A KernelInfo from the `tkc_kernel_info` a launcher library returns."""
    if c_info.abi_version != _abi.ABI_VERSION or c_info.struct_size != ctypes.sizeof(_abi.KernelInfoC):
        raise AbiError(f"the library describes ABI version {c_info.abi_version} ({c_info.struct_size} bytes); "
                       f"this package reads version {_abi.ABI_VERSION}")
    tensors = []
    for i in range(c_info.num_tensors):
        p = c_info.tensors[i]
        dims = tuple(int(d) if d.isdigit() else d for d in (_text(p.dims[j]) for j in range(p.rank)))
        dtype = _abi.DTYPE_NAMES.get((p.dtype.code, p.dtype.bits), f"({p.dtype.code}, {p.dtype.bits})")
        tensors.append(Param(_text(p.name), dtype, bool(p.is_output), dims, p.alignment, p.row_multiple))
    constants = tuple(_text(c_info.constants[i]) for i in range(c_info.num_constants))
    wheres = {}
    for i in range(c_info.num_wheres):
        w = c_info.wheres[i]
        wheres[_text(w.name)] = (tuple(w.values[j] for j in range(w.num_values)), bool(w.is_argument))
    targets = tuple(_text(c_info.targets[i]) for i in range(c_info.num_targets))
    return KernelInfo(_text(c_info.name), tuple(tensors), constants, wheres, targets)


_INFO_LINE = re.compile(r"^const tkc_kernel_info \*tkc_(\w+)_info\(void\);$", re.M)


def kernels_in_header(text):
    """The kernel names a generated header declares, in order."""
    return _INFO_LINE.findall(text)


# --- tensors -------------------------------------------------------------------


_torch_types = {}  # type -> whether it comes from torch (every launch asks)


def _is_torch(obj):
    cls = type(obj)
    known = _torch_types.get(cls)
    if known is None:
        known = _torch_types[cls] = cls.__module__.split(".")[0] == "torch"
    return known


def dtype_name(dtype):
    """tkc's name of a torch dtype (or of a tkc name), or None."""
    text = str(dtype)
    if text in _abi.DTYPE_CODES:
        return text
    return _abi.TORCH_DTYPES.get(text.replace("torch.", ""))


def describe(obj, param, kernel):
    """A TkcTensor describing `obj`: a TkcTensor, or an object with
    data_ptr(), shape, stride(), dtype and device (a torch tensor)."""
    if isinstance(obj, _abi.TkcTensor):
        return obj
    if not all(hasattr(obj, a) for a in ("data_ptr", "shape", "stride", "dtype", "device")):
        raise TypeError(f"tkc_{kernel}: {param.name} must be a tensor, not {type(obj).__name__}")
    name = dtype_name(obj.dtype)
    if name is None:
        raise DTypeError(f"{param.name} must be {param.dtype}, not {obj.dtype}", kernel)
    if len(obj.shape) > _abi.MAX_RANK:
        raise ShapeError(f"{param.name} must have rank {param.rank}, not {len(obj.shape)}", kernel)
    device = obj.device
    index = getattr(device, "index", None)
    on_gpu = getattr(device, "type", str(device)) == "cuda"
    desc = _abi.make_tensor(obj.data_ptr(), tuple(obj.shape), tuple(obj.stride()), name,
                            (index or 0) if on_gpu else -1)
    if on_gpu and _is_torch(obj):
        desc.flags = _DEVICE_MEMORY
    return desc


# The per-call path: descriptors packed into one buffer with struct (the
# layout of runtime/tkc_host.h's tkc_tensor, checked against TkcTensor at
# import), the dtype looked up by torch's dtype object, the stream read as an
# integer. A launch from Python then costs a few microseconds of host time
# rather than tens per tensor.
_PACKED = struct.Struct("<IIBBHiQiI6q6q")
_NO_DIMS = tuple((0,) * (_abi.MAX_RANK - r) for r in range(_abi.MAX_RANK + 1))
_dtype_codes = dict(_abi.DTYPE_CODES)  # tkc's dtype names; torch's dtype objects join once torch is loaded


def _late_dtype_code(dtype):
    """The code of a dtype the table lacks: torch's dtypes are added the
    first time one is looked up after torch has been imported."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.float32 not in _dtype_codes:
        _dtype_codes.update({getattr(torch, name): _abi.DTYPE_CODES[tkc]
                             for name, tkc in _abi.TORCH_DTYPES.items() if hasattr(torch, name)})
    return _dtype_codes.get(dtype)


_DEVICE_MEMORY = 1  # TKC_TENSOR_DEVICE_MEMORY


def pack(tensors):
    """(a buffer of descriptors of `tensors`, the first device index among
    them or -1), or None where one is not a tensor (an object with
    data_ptr(), shape, stride(), get_device() and a dtype tkc knows) or has
    too many dims: `describe` then says what is wrong."""
    codes = _dtype_codes
    size = _PACKED.size
    buf = ctypes.create_string_buffer(size * len(tensors))
    device = -1
    for i, t in enumerate(tensors):
        try:
            code = codes.get(t.dtype) or _late_dtype_code(t.dtype)
            shape, where = t.shape, t.get_device()
        except (AttributeError, TypeError):
            return None
        if code is None or len(shape) > _abi.MAX_RANK:
            return None
        if device < 0 <= where:
            device = where
        pad = _NO_DIMS[len(shape)]
        # A torch CUDA tensor is device memory of its device, so the
        # launcher need not ask the driver (it still checks the device).
        flags = _DEVICE_MEMORY if where >= 0 and _is_torch(t) else 0
        _PACKED.pack_into(buf, i * size, size, _abi.ABI_VERSION, code[0], code[1], 1, where, t.data_ptr() or 0,
                          len(shape), flags, *shape, *pad, *t.stride(), *pad)
    return buf, device


def pack_described(descs):
    """(a buffer of the TkcTensor descriptors `descs`, the first device
    index among them or -1), as `pack` gives."""
    size = _PACKED.size
    buf = ctypes.create_string_buffer(size * len(descs))
    for i, d in enumerate(descs):
        ctypes.memmove(ctypes.addressof(buf) + i * size, ctypes.addressof(d), size)
    return buf, next((d.device for d in descs if d.device >= 0), -1)


def _check_packed_layout():
    probe = _abi.make_tensor(0x1234, (2, 3), (3, 1), "f16", device=5)
    packed = _PACKED.pack(ctypes.sizeof(_abi.TkcTensor), _abi.ABI_VERSION, 2, 16, 1, 5, 0x1234, 2, 0,
                          2, 3, *_NO_DIMS[2], 3, 1, *_NO_DIMS[2])
    if packed != ctypes.string_at(ctypes.addressof(probe), ctypes.sizeof(probe)):
        raise AbiError("the packed descriptor layout does not match tkc_tensor")


_check_packed_layout()


def _current_stream(torch, device):
    """The handle of the current stream of a device index, without making a
    torch.cuda.Stream where torch offers the raw handle."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(device) if raw is not None else torch.cuda.current_stream(device).cuda_stream


# --- launchers -----------------------------------------------------------------


class Launcher:
    """One `extern "C"` launch function (`tkc_NAME` or `tkc_NAME_sm80`) and
    its kernel's `_error` and `_info` companions."""

    def __init__(self, lib, info, symbol=None):
        self.info = info
        self.name = info.name
        self.symbol = symbol or f"tkc_{info.name}"
        try:
            self.fn = getattr(lib, self.symbol)
        except AttributeError:
            raise TkcError(f"no symbol {self.symbol} in the library", info.name) from None
        n = len(info.tensors)
        self.fn.argtypes = [ctypes.POINTER(_abi.TkcTensor)] * n + [ctypes.c_int64] * len(info.constants) + [
            ctypes.c_void_p]
        self.fn.restype = ctypes.c_int
        # A second function object of the same symbol, taking descriptors by
        # address, for the packed path.
        self.packed_fn = lib[self.symbol]
        self.packed_fn.argtypes = [ctypes.c_void_p] * n + [ctypes.c_int64] * len(info.constants) + [ctypes.c_void_p]
        self.packed_fn.restype = ctypes.c_int
        self._arity = n + len(info.constants)
        self._error = getattr(lib, f"tkc_{info.name}_error")
        self._error.argtypes = []
        self._error.restype = ctypes.c_char_p

    def error_message(self):
        msg = self._error()
        return msg.decode(errors="replace") if msg else ""

    def ctypes_args(self, descs, constants, stream):
        if len(descs) != len(self.info.tensors) or len(constants) != len(self.info.constants):
            raise TypeError(f"{self.symbol} takes {len(self.info.tensors)} tensors and {len(self.info.constants)} "
                            f"constants, got {len(descs)} and {len(constants)}")
        return [ctypes.byref(d) for d in descs] + [int(c) for c in constants] + [stream or None]

    def raw(self, descs, constants=(), stream=None):
        """The launcher's status for descriptors (never raises on a status)."""
        return self.fn(*self.ctypes_args(descs, constants, stream))

    def check(self, status):
        if status != 0:
            raise error_for(status, self.name, self.error_message())

    def _bind_arguments(self, args, constants):
        """(tensors, constants) from positional and keyword arguments."""
        info = self.info
        n = len(info.tensors)
        if len(args) < n:
            missing = ", ".join(p.name for p in info.tensors[len(args):])
            raise TypeError(f"{self.symbol} needs the tensors {missing}")
        tensors, rest = args[:n], list(args[n:])
        values = []
        for c in info.constants:
            if rest:
                values.append(rest.pop(0))
            elif c in constants:
                values.append(constants.pop(c))
            else:
                raise TypeError(f"{self.symbol} needs the constant {c}")
        if rest or constants:
            raise TypeError(f"{self.symbol} takes {n} tensors and the constants {list(info.constants)}")
        return tensors, [int(v) for v in values]

    def _launch(self, buf, count, values, stream, device, torch_tensors):
        """Launches on the `count` descriptors packed in `buf`. Where the
        arguments are torch tensors on a GPU, the launch runs with their
        device current, on its current stream unless `stream` is given."""
        base, size = ctypes.addressof(buf), _PACKED.size
        args = [base + i * size for i in range(count)] + values
        torch = sys.modules.get("torch") if torch_tensors else None
        if device < 0 or torch is None:
            self.check(self.packed_fn(*args, stream))
        elif torch._C._cuda_getDevice() != device:
            with torch.cuda.device(device):
                self.check(self.packed_fn(*args, stream or _current_stream(torch, device)))
        else:
            self.check(self.packed_fn(*args, stream or _current_stream(torch, device)))

    def __call__(self, *args, stream=None, **constants):
        """Launches on tensors (outputs included, in declaration order) and
        constants (positional after the tensors, or by name). With torch
        tensors, the launch goes to the current stream of their device."""
        n = len(self.info.tensors)
        if not constants and len(args) == self._arity:
            tensors, values = args[:n], [int(v) for v in args[n:]]
        else:
            tensors, values = self._bind_arguments(args, dict(constants))
        packed = pack(tensors)
        if packed is not None:
            torch_tensors = _is_torch(tensors[0])
        else:  # describe says what is wrong, or takes what pack cannot (TkcTensors)
            packed = pack_described([describe(t, p, self.name) for t, p in zip(tensors, self.info.tensors)])
            torch_tensors = any(_is_torch(t) for t in tensors)
        buf, device = packed
        self._launch(buf, n, values, stream, device, torch_tensors)

    def bind(self, descs, constants=(), stream=None):
        """A zero-argument callable with the ctypes arguments built once (for timing loops)."""
        keep = list(descs)
        args = self.ctypes_args(keep, constants, stream)
        fn, check = self.fn, self.check

        def call():
            check(fn(*args))
            return keep

        return call


class Library:
    """A built launcher library: one Launcher per kernel, as attributes."""

    def __init__(self, so_path, kernel_names, header=None):
        self.path = Path(so_path)
        self.header = header
        self.lib = ctypes.CDLL(str(self.path))
        self.kernels = {}
        for name in kernel_names:
            fn = getattr(self.lib, f"tkc_{name}_info")
            fn.argtypes = []
            fn.restype = ctypes.POINTER(_abi.KernelInfoC)
            self.kernels[name] = Launcher(self.lib, read_info(fn().contents))

    def __getattr__(self, name):
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"no kernel {name!r} in {self.__dict__.get('path')} (it has {', '.join(kernels)})")

    def __getitem__(self, name):
        return self.kernels[name]

    def launcher(self, name, target=None):
        """The launcher of one target's code (`tkc_NAME_sm80`), or the dispatcher."""
        info = self.kernels[name].info
        if target is None:
            return self.kernels[name]
        if target not in info.targets:
            raise DeviceError(f"the library has no {target} code (it has {', '.join(info.targets)})", name)
        return Launcher(self.lib, info, f"tkc_{name}_{target.replace('_', '')}")

    def __repr__(self):
        return f"Library({self.path}, kernels={list(self.kernels)})"


def load_library(so_path, header_path):
    """A Library from a built .so and the header tkc wrote with it."""
    names = kernels_in_header(Path(header_path).read_text())
    return Library(so_path, names, header=header_path)
