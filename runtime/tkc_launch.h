// tkc runtime, host side: what generated launch functions share once their
// arguments have passed the structural checks (which they print inline):
// failure messages, the device queries (each CUDA result checked) and the
// per-device state a launch needs. C++17; include after tkc_host.h.
#pragma once
#include "tkc_host.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cuda_runtime.h>
#ifdef TKC_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace tkc::host {

/// Bytes of a launcher's thread-local message buffer.
constexpr size_t kMessageBytes = 512;
/// Devices whose state is cached; launches on higher ordinals query again.
constexpr int kCachedDevices = 64;

inline int failv(char *message, int status, const char *format, va_list args) {
  vsnprintf(message, kMessageBytes, format, args);
  return status;
}

inline int fail(char *message, int status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  failv(message, status, format, args);
  va_end(args);
  return status;
}

/// "bf16", "f32", ... or the numbers of a type no kernel takes.
inline const char *dtype_name(tkc_dtype dtype) {
  if (dtype.lanes == 1) {
    switch (dtype.code * 1000 + dtype.bits) {
    case TKC_DTYPE_FLOAT * 1000 + 16: return "f16";
    case TKC_DTYPE_FLOAT * 1000 + 32: return "f32";
    case TKC_DTYPE_FLOAT * 1000 + 64: return "f64";
    case TKC_DTYPE_BFLOAT * 1000 + 16: return "bf16";
    case TKC_DTYPE_INT * 1000 + 8: return "i8";
    case TKC_DTYPE_INT * 1000 + 16: return "i16";
    case TKC_DTYPE_INT * 1000 + 32: return "i32";
    case TKC_DTYPE_INT * 1000 + 64: return "i64";
    case TKC_DTYPE_UINT * 1000 + 8: return "u8";
    case TKC_DTYPE_BOOL * 1000 + 8: return "bool";
    case TKC_DTYPE_FLOAT8_E4M3FN * 1000 + 8: return "f8e4m3";
    case TKC_DTYPE_FLOAT8_E5M2 * 1000 + 8: return "f8e5m2";
    default: break;
    }
  }
  thread_local char text[64];
  snprintf(text, sizeof text, "{code %u, bits %u, lanes %u}", unsigned(dtype.code), unsigned(dtype.bits),
           unsigned(dtype.lanes));
  return text;
}

/// Clears the error a failed runtime call left, so that the next launch's
/// cudaGetLastError reports only its own.
inline cudaError_t consumed(cudaError_t error) {
  if (error != cudaSuccess)
    (void)cudaGetLastError();
  return error;
}

/// A value per device, computed once (0: not yet).
struct PerDevice {
  std::atomic<int> value[kCachedDevices] = {};
  int get(int device) const { return device >= 0 && device < kCachedDevices ? value[device].load() : 0; }
  void set(int device, int v) {
    if (device >= 0 && device < kCachedDevices)
      value[device].store(v);
  }
};

/// The current device and its compute capability (major * 10 + minor).
inline int current_device(char *message, int *device, int *capability) {
  static PerDevice capabilities;
  if (cudaError_t e = consumed(cudaGetDevice(device)); e != cudaSuccess)
    return fail(message, TKC_ERROR_CUDA, "no usable CUDA device: %s", cudaGetErrorString(e));
  if ((*capability = capabilities.get(*device)) != 0)
    return TKC_OK;
  int major = 0, minor = 0;
  cudaError_t e = consumed(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, *device));
  if (e == cudaSuccess)
    e = consumed(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, *device));
  if (e != cudaSuccess)
    return fail(message, TKC_ERROR_CUDA, "cannot read the compute capability of device %d: %s", *device,
                cudaGetErrorString(e));
  *capability = major * 10 + minor;
  capabilities.set(*device, *capability);
  return TKC_OK;
}

/// The multiprocessors of `device`, for persistent grids.
inline int multiprocessors(char *message, int device, int *count) {
  static PerDevice counts;
  if ((*count = counts.get(device)) != 0)
    return TKC_OK;
  cudaError_t e = consumed(cudaDeviceGetAttribute(count, cudaDevAttrMultiProcessorCount, device));
  if (e != cudaSuccess || *count <= 0)
    return fail(message, TKC_ERROR_CUDA, "cannot read the multiprocessor count of device %d: %s", device,
                cudaGetErrorString(e));
  counts.set(device, *count);
  return TKC_OK;
}

/// `tensor`'s data must be ordinary device memory of `device`: kernels read
/// host memory through a fault (or garbage) and managed memory page by page.
/// A descriptor flagged TKC_TENSOR_DEVICE_MEMORY is taken at its word.
inline int check_device_memory(char *message, const tkc_tensor *tensor, const char *name, int device) {
  if (tensor->flags & TKC_TENSOR_DEVICE_MEMORY) {
    if (tensor->device != device)
      return fail(message, TKC_ERROR_DEVICE, "%s is on device %d but the current device is %d", name,
                  (int)tensor->device, device);
    return TKC_OK;
  }
  cudaPointerAttributes attributes{};
  if (cudaError_t e = consumed(cudaPointerGetAttributes(&attributes, tensor->data)); e != cudaSuccess)
    return fail(message, TKC_ERROR_CUDA, "cannot tell where %s's memory is: %s", name, cudaGetErrorString(e));
  if (attributes.type == cudaMemoryTypeManaged)
    return fail(message, TKC_ERROR_DEVICE, "%s is managed memory; the kernel needs device memory", name);
  if (attributes.type != cudaMemoryTypeDevice)
    return fail(message, TKC_ERROR_DEVICE, "%s is not device memory (a host pointer: %p)", name, tensor->data);
  if (attributes.device != device)
    return fail(message, TKC_ERROR_DEVICE, "%s is on device %d but the current device is %d", name,
                attributes.device, device);
  if (tensor->device != attributes.device)
    return fail(message, TKC_ERROR_DEVICE, "%s.device is %d but its memory is on device %d", name,
                (int)tensor->device, attributes.device);
  return TKC_OK;
}

/// Lets `kernel` use `bytes` of dynamic shared memory on `device` (needed
/// above 48 KiB), once per device.
inline int allow_shared_memory(char *message, PerDevice &allowed, int device, const void *kernel, int bytes) {
  if (allowed.get(device))
    return TKC_OK;
  if (cudaError_t e = consumed(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
      e != cudaSuccess)
    return fail(message, TKC_ERROR_LAUNCH, "cannot give the kernel %d bytes of shared memory on device %d: %s", bytes,
                device, cudaGetErrorString(e));
  allowed.set(device, 1);
  return TKC_OK;
}

} // namespace tkc::host

// Each launcher opens an NVTX range named after it (`tkc_softmax_sm90a`)
// for its whole call when the generated code is compiled with -DTKC_NVTX,
// so that Nsight Systems shows which tkc kernel each launch is. NVTX 3 is
// header-only and part of the CUDA toolkit; without the macro the ranges
// cost nothing.
#ifdef TKC_NVTX
namespace tkc::host {
struct NvtxRange {
  explicit NvtxRange(const char *name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange &) = delete;
  NvtxRange &operator=(const NvtxRange &) = delete;
};
} // namespace tkc::host
#define TKC_NVTX_RANGE(name) const ::tkc::host::NvtxRange tkc_nvtx_range(name)
#else
#define TKC_NVTX_RANGE(name) ((void)0)
#endif
