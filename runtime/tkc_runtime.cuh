// tkc runtime: thin, named wrappers over the PTX instructions that generated
// kernels use. No loops, layouts or schedules live here: the compiler emits
// those. Requires sm_80 or newer.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include "tkc_int.h"

#define TKC_UNROLL _Pragma("unroll")

namespace tkc {

using bf16 = __nv_bfloat16;
using f16 = __half;
// 8-bit floats: converting to them rounds to nearest even and saturates to
// the largest finite value; converting from them is exact.
using f8e4m3 = __nv_fp8_e4m3;
using f8e5m2 = __nv_fp8_e5m2;

// --- addresses ----------------------------------------------------------------

/// The 32-bit shared-state-space address of a generic pointer into shared memory.
__device__ __forceinline__ uint32_t smem_address(const void *ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}

// --- asynchronous global -> shared copies (cp.async) ----------------------------

/// Copies 16 bytes; reads only `src_bytes` of them (0..16) and zero-fills the rest.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void *src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}

/// Copies 4 bytes (`src_bytes` of them, zeros for the rest) from global
/// to shared memory asynchronously.
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void *src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

/// Arrives on the mbarrier at `bar` once this thread's cp.async copies so
/// far have landed (one of the arrivals its count expects).
__device__ __forceinline__ void cp_async_mbarrier_arrive_noinc(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int Pending> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

// --- reductions into global memory (atomic_add) ----------------------------------

/// Adds `v` to the f32 at `p`, in L2, without returning the old value.
__device__ __forceinline__ void red_add_f32(float *p, float v) {
  asm volatile("red.global.add.f32 [%0], %1;\n" ::"l"(p), "f"(v) : "memory");
}

// Predicated forms: one guarded instruction rather than a branch around the
// call, so that the compiler keeps the address arithmetic of a tile's
// reductions in one straight line, shared between them, instead of sinking
// a copy of it under each branch.

/// `red_add_f32` where `pred` holds.
__device__ __forceinline__ void red_add_f32_if(bool pred, float *p, float v) {
  asm volatile("{\n .reg .pred q;\n setp.ne.b32 q, %2, 0;\n @q red.global.add.f32 [%0], %1;\n}\n" ::"l"(p), "f"(v),
               "r"(int(pred))
               : "memory");
}

/// Adds `a` and `b` to the two f32 at the 8-byte aligned `p` where `pred`
/// holds: one vector reduction on sm_90, which takes half the L2's time of
/// two.
__device__ __forceinline__ void red_add_f32x2_if(bool pred, float *p, float a, float b) {
#if __CUDA_ARCH__ >= 900
  asm volatile("{\n .reg .pred q;\n setp.ne.b32 q, %3, 0;\n @q red.global.add.v2.f32 [%0], {%1, %2};\n}\n" ::"l"(p),
               "f"(a), "f"(b), "r"(int(pred))
               : "memory");
#else
  asm volatile("{\n .reg .pred q;\n setp.ne.b32 q, %3, 0;\n"
               " @q red.global.add.f32 [%0], %1;\n @q red.global.add.f32 [%0+4], %2;\n}\n" ::"l"(p), "f"(a),
               "f"(b), "r"(int(pred))
               : "memory");
#endif
}

/// Adds `a` and `b` to the two f32 at the 8-byte aligned `p`.
__device__ __forceinline__ void red_add_f32x2(float *p, float a, float b) {
#if __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(p), "f"(a), "f"(b) : "memory");
#else
  asm volatile("red.global.add.f32 [%0], %1;\n red.global.add.f32 [%0+4], %2;\n" ::"l"(p), "f"(a), "f"(b) : "memory");
#endif
}

// --- register -> shared stores ----------------------------------------------------

/// Writes 32 bits to shared memory at byte address `addr`.
__device__ __forceinline__ void st_shared_b32(uint32_t addr, uint32_t value) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(value) : "memory");
}

/// Writes 64 bits (two 32-bit words) to shared memory at the 8-byte aligned
/// byte address `addr`.
__device__ __forceinline__ void st_shared_v2_b32(uint32_t addr, uint32_t lo, uint32_t hi) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(addr), "r"(lo), "r"(hi) : "memory");
}

/// Writes 128 bits to shared memory at the 16-byte aligned byte address `addr`.
__device__ __forceinline__ void st_shared_v4_b32(uint32_t addr, uint4 v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// --- shared -> register loads -----------------------------------------------------

// Volatile, so that they stay behind the mbarrier wait that orders the
// producer's writes before them.

/// Reads the f32 at shared byte address `addr`.
__device__ __forceinline__ float ld_shared_f32(uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
  return v;
}

/// Reads the two f32 at the 8-byte aligned shared byte address `addr`.
__device__ __forceinline__ void ld_shared_f32x2(uint32_t addr, float &a, float &b) {
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(a), "=f"(b) : "r"(addr));
}

// --- shared -> register matrix loads (ldmatrix) ---------------------------------

// Each lane passes the address of one 16-byte row; x4 loads four 8x8
// matrices (rows from lanes 0-7, 8-15, 16-23, 24-31), x2 two (lanes 0-15).
__device__ __forceinline__ void ldmatrix_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3,
                                                  uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x2(uint32_t &r0, uint32_t &r1, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t &r0, uint32_t &r1, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
}

// --- tensor-core multiply-accumulate (mma.sync m16n8k16) ------------------------

/// d += a * b with bf16 operands and f32 accumulators.
__device__ __forceinline__ void mma_bf16_16816(float &d0, float &d1, float &d2, float &d3, uint32_t a0, uint32_t a1,
                                               uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/// d += a * b with f16 operands and f32 accumulators.
__device__ __forceinline__ void mma_f16_16816(float &d0, float &d1, float &d2, float &d3, uint32_t a0, uint32_t a1,
                                              uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// --- small value helpers --------------------------------------------------------

/// Two floats as one register of two bf16 (low half first).
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&v);
}

__device__ __forceinline__ uint32_t pack_f16(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&v);
}

/// 2^x with the hardware approximation (ex2.approx): what softmax needs.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

/// Two 16-bit values as one register (low half first).
template <typename T> __device__ __forceinline__ uint32_t pack2(T lo, T hi) {
  return static_cast<uint32_t>(*reinterpret_cast<uint16_t *>(&lo)) |
         (static_cast<uint32_t>(*reinterpret_cast<uint16_t *>(&hi)) << 16);
}

/// The 16-bit value in half `which` (0: low) of a packed register.
template <typename T> __device__ __forceinline__ T half_of(uint32_t packed, int which) {
  uint16_t bits = static_cast<uint16_t>(packed >> (which * 16));
  return *reinterpret_cast<T *>(&bits);
}

/// Transposes a 4 x 4 matrix of registers held by the four lanes of a quad
/// (lane q holds row q): afterwards lane q holds column q. Every lane of the
/// warp takes part (two rounds of two shuffles).
__device__ __forceinline__ void transpose_quad(uint32_t (&v)[4]) {
  const int lane = threadIdx.x % 32;
  const bool odd_pair = lane & 2, odd = lane & 1;
  uint32_t r0 = __shfl_xor_sync(0xffffffffu, odd_pair ? v[0] : v[2], 2);
  uint32_t r1 = __shfl_xor_sync(0xffffffffu, odd_pair ? v[1] : v[3], 2);
  if (odd_pair) {
    v[0] = r0, v[1] = r1;
  } else {
    v[2] = r0, v[3] = r1;
  }
  r0 = __shfl_xor_sync(0xffffffffu, odd ? v[0] : v[1], 1);
  r1 = __shfl_xor_sync(0xffffffffu, odd ? v[2] : v[3], 1);
  if (odd) {
    v[0] = r0, v[2] = r1;
  } else {
    v[1] = r0, v[3] = r1;
  }
}

// --- global memory, 16 bytes at a time (8 or 4 for strips of shorter chunks) -----

__device__ __forceinline__ uint4 load_global_16(const void *ptr) { return *reinterpret_cast<const uint4 *>(ptr); }
__device__ __forceinline__ void store_global_16(void *ptr, uint4 v) { *reinterpret_cast<uint4 *>(ptr) = v; }
__device__ __forceinline__ uint2 load_global_8(const void *ptr) { return *reinterpret_cast<const uint2 *>(ptr); }
__device__ __forceinline__ void store_global_8(void *ptr, uint2 v) { *reinterpret_cast<uint2 *>(ptr) = v; }
__device__ __forceinline__ uint32_t load_global_4(const void *ptr) { return *reinterpret_cast<const uint32_t *>(ptr); }
__device__ __forceinline__ void store_global_4(void *ptr, uint32_t v) { *reinterpret_cast<uint32_t *>(ptr) = v; }

__device__ __forceinline__ float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }

} // namespace tkc
