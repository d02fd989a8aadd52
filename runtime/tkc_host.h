// tkc host interface, ABI version 1: how generated launch functions receive
// tensors, report errors and describe themselves. Plain C so that any
// language can call them (ctypes, C++). docs/abi.md explains the rules.
#ifndef TKC_HOST_H
#define TKC_HOST_H
#include <stddef.h>
#include <stdint.h>

#define TKC_ABI_VERSION 1
#define TKC_MAX_RANK 6

/// Element type codes, as DLPack numbers them (DLDataTypeCode).
enum tkc_dtype_code {
  TKC_DTYPE_INT = 0,    ///< kDLInt: i32 is {0, 32, 1}
  TKC_DTYPE_UINT = 1,   ///< kDLUInt
  TKC_DTYPE_FLOAT = 2,  ///< kDLFloat: f16 is {2, 16, 1}, f32 {2, 32, 1}
  TKC_DTYPE_BFLOAT = 4, ///< kDLBfloat: bf16 is {4, 16, 1}
  TKC_DTYPE_BOOL = 6,   ///< kDLBool: 8 bits
  TKC_DTYPE_FLOAT8_E4M3FN = 10, ///< kDLFloat8_e4m3fn: f8e4m3 is {10, 8, 1}
  TKC_DTYPE_FLOAT8_E5M2 = 12,   ///< kDLFloat8_e5m2: f8e5m2 is {12, 8, 1}
};

/// An element type, laid out like DLPack's DLDataType.
typedef struct tkc_dtype {
  uint8_t code;   ///< a tkc_dtype_code
  uint8_t bits;   ///< bits of one lane
  uint16_t lanes; ///< 1 (vector types are not accepted)
} tkc_dtype;

/// A strided view of device memory. Sizes and strides count elements.
/// `struct_size` and `abi_version` let a launcher refuse a descriptor that
/// another version of this header filled in; TKC_TENSOR_INIT sets them.
typedef struct tkc_tensor {
  uint32_t struct_size; ///< sizeof(tkc_tensor) as the caller compiled it
  uint32_t abi_version; ///< TKC_ABI_VERSION
  tkc_dtype dtype;      ///< the element type of `data`
  int32_t device;       ///< the CUDA device ordinal that `data` lives on
  void *data;           ///< device memory (cudaMalloc or a pool of it)
  int32_t rank;
  uint32_t flags;   ///< TKC_TENSOR_* bits, or 0
  int64_t sizes[TKC_MAX_RANK];
  int64_t strides[TKC_MAX_RANK];
} tkc_tensor;

/// `flags`: the caller vouches that `data` is device memory of `device`, as
/// a framework's CUDA tensor is, so the launcher need not ask the driver
/// where it is (cudaPointerGetAttributes costs host time on every launch).
/// Without it the launcher asks, and refuses host and managed memory.
#define TKC_TENSOR_DEVICE_MEMORY 1u

#define TKC_TENSOR_INIT {(uint32_t)sizeof(tkc_tensor), TKC_ABI_VERSION, {0, 0, 1}, 0, NULL, 0, 0, {0}, {0}}

/// Launch functions return one of these; 0 means the kernel was launched.
/// `tkc_NAME_error()` returns a message saying what was wrong.
enum tkc_status {
  TKC_OK = 0,
  TKC_ERROR_NULL_POINTER = 1,      ///< a descriptor or its data pointer is null
  TKC_ERROR_SHAPE = 2,             ///< wrong rank, sizes that disagree or are out of range
  TKC_ERROR_STRIDE = 3,            ///< a stride the kernel cannot use
  TKC_ERROR_ALIGNMENT = 4,         ///< a pointer, row stride or row length not aligned enough
  TKC_ERROR_NO_SPECIALIZATION = 5, ///< sizes or constants outside the kernel's `where` sets
  TKC_ERROR_LAUNCH = 6,            ///< the launch itself (or its set-up) failed
  TKC_ERROR_ABI = 7,               ///< a descriptor of another struct size or ABI version
  TKC_ERROR_DTYPE = 8,             ///< a tensor of the wrong element type
  TKC_ERROR_DEVICE = 9,            ///< host, managed or another device's memory
  TKC_ERROR_CUDA = 10,             ///< a CUDA runtime query failed (no device, no driver)
  TKC_ERROR_NO_TARGET = 11,        ///< no code in this library for the current device
};

// --- what a launcher takes: `const tkc_kernel_info *tkc_NAME_info(void)` -----------

/// One tensor parameter. Each dim is a symbol (`"M"`, or a `where`
/// parameter such as `"D"`) or a fixed size in decimal (`"64"`).
typedef struct tkc_param_info {
  const char *name;
  tkc_dtype dtype;
  int32_t is_output;
  int32_t rank;
  const char *dims[TKC_MAX_RANK];
  int32_t alignment;    ///< bytes the data pointer and the outer strides need (the strictest target)
  int32_t row_multiple; ///< elements the last size must be a multiple of (1: any)
} tkc_param_info;

/// A compile-time parameter (`where NAME in {...}`) and the values that
/// have code. An argument one is an int64_t the caller passes after the
/// tensors; the others are read from tensor sizes.
typedef struct tkc_where_info {
  const char *name;
  int32_t is_argument;
  int32_t num_values;
  const int64_t *values;
} tkc_where_info;

typedef struct tkc_kernel_info {
  uint32_t struct_size; ///< sizeof(tkc_kernel_info)
  uint32_t abi_version; ///< TKC_ABI_VERSION
  const char *name;     ///< the source kernel: launch with tkc_NAME
  int32_t num_tensors;
  const tkc_param_info *tensors; ///< in argument order
  int32_t num_constants;
  const char *const *constants; ///< int64_t arguments after the tensors, in order
  int32_t num_wheres;
  const tkc_where_info *wheres;
  int32_t num_targets;
  const char *const *targets; ///< "sm_80", "sm_90a": tkc_NAME_sm80, tkc_NAME_sm90a
} tkc_kernel_info;

#endif
