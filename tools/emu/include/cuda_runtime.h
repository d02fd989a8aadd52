// tkc-emu's stand-in for the CUDA runtime header: the keywords, built-in
// variables and intrinsics that tkc's sm_80 kernels use, and the runtime
// API that its launchers call, on the CPU (see tkc_emu_core.h).
#pragma once
#include "tkc_emu_core.h"
#include "tkc_emu_floats.h"

#include <math.h>
#include <type_traits>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__

#define threadIdx (::tkc_emu::fiber().index)
#define blockIdx (::tkc_emu::block().index)
#define blockDim (::tkc_emu::block().dim)
#define gridDim (::tkc_emu::block().grid)
constexpr int warpSize = 32;

// --- device intrinsics -------------------------------------------------------------

inline void __syncthreads() { ::tkc_emu::sync_block(); }
[[noreturn]] inline void __trap() { ::tkc_emu::fail("the kernel executed a trap (__trap)"); }

template <class T> T __shfl_xor_sync(unsigned mask, T value, int lane_mask) {
  if (mask != 0xffffffffu)
    ::tkc_emu::fail("__shfl_xor_sync with a partial mask");
  T all[32];
  ::tkc_emu::warp_gather("__shfl_xor_sync", value, all);
  return all[(::tkc_emu::lane() ^ unsigned(lane_mask)) % 32];
}

inline bool __all_sync(unsigned mask, bool predicate) {
  if (mask != 0xffffffffu)
    ::tkc_emu::fail("__all_sync with a partial mask");
  bool all[32];
  ::tkc_emu::warp_gather("__all_sync", predicate, all);
  for (bool p : all)
    if (!p)
      return false;
  return true;
}

inline unsigned __float_as_uint(float f) { return ::tkc_emu::float_bits(f); }
inline float __uint_as_float(unsigned u) { return ::tkc_emu::bits_float(u); }
inline int __float_as_int(float f) { return int(__float_as_uint(f)); }

inline size_t __cvta_generic_to_shared(const void *pointer) { return ::tkc_emu::shared_address_of(pointer); }
inline void *__cvta_shared_to_generic(size_t address) {
  return ::tkc_emu::shared_at(uint32_t(address), 0, "a generic pointer");
}

// The fast forms, as the PTX ISA bounds them: exact here, except where the
// hardware's result is specified (a divisor beyond 2^126 gives 0).
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __fdividef(float x, float y) {
  if (fabsf(y) > 0x1p126f && fabsf(y) <= 3.40282347e38f)
    return isinf(x) ? NAN : 0.0f;
  return x / y;
}
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }

// CUDA's unqualified min and max of device code, for any two arithmetic types.
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return C(b) < C(a) ? C(b) : C(a);
}
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return C(a) < C(b) ? C(b) : C(a);
}

struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(8) float2 {
  float x, y;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline float2 make_float2(float x, float y) { return {x, y}; }

// --- the runtime API ----------------------------------------------------------------

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorNoDevice = 100 };
struct CUstream_st;
typedef CUstream_st *cudaStream_t;

enum cudaDeviceAttr {
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
};
enum cudaMemoryType { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1, cudaMemoryTypeDevice = 2, cudaMemoryTypeManaged = 3 };
struct cudaPointerAttributes {
  cudaMemoryType type;
  int device;
  void *devicePointer;
  void *hostPointer;
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

inline cudaError_t cudaGetLastError() {
  const int e = ::tkc_emu::last_error();
  ::tkc_emu::last_error() = 0;
  return cudaError_t(e);
}
inline cudaError_t cudaPeekAtLastError() { return cudaError_t(::tkc_emu::last_error()); }
inline const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument (tkc-emu)";
  default: return "unknown error (tkc-emu)";
  }
}
inline cudaError_t cudaGetDevice(int *device) {
  *device = 0;
  return cudaSuccess;
}
/// An sm_80 device of 108 multiprocessors (an A100's).
inline cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attribute, int) {
  switch (attribute) {
  case cudaDevAttrMultiProcessorCount: *value = 108; return cudaSuccess;
  case cudaDevAttrComputeCapabilityMajor: *value = 8; return cudaSuccess;
  case cudaDevAttrComputeCapabilityMinor: *value = 0; return cudaSuccess;
  }
  return cudaErrorInvalidValue;
}
/// Every pointer is device memory of device 0: the host's memory stands in for it.
inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *attributes, const void *pointer) {
  *attributes = {cudaMemoryTypeDevice, 0, const_cast<void *>(pointer), nullptr};
  return cudaSuccess;
}
template <class Kernel> cudaError_t cudaFuncSetAttribute(Kernel kernel, cudaFuncAttribute attribute, int value) {
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      value > ::tkc_emu::kDeviceSharedLimit)
    return cudaErrorInvalidValue;
  const void *key = reinterpret_cast<const void *>(kernel);
  for (auto &[k, bytes] : ::tkc_emu::shared_limits())
    if (k == key) {
      bytes = value;
      return cudaSuccess;
    }
  ::tkc_emu::shared_limits().emplace_back(key, value);
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
