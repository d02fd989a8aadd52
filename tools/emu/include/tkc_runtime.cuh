// tkc-emu's version of runtime/tkc_runtime.cuh: the same wrappers, computing
// on the CPU what each PTX instruction computes for the calling lane
// (fragment layouts as the PTX ISA gives them for ldmatrix and
// mma.sync.m16n8k16). Found before runtime/ on the include path.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "tkc_int.h"

#define TKC_UNROLL

namespace tkc {

using bf16 = __nv_bfloat16;
using f16 = __half;
using f8e4m3 = __nv_fp8_e4m3;
using f8e5m2 = __nv_fp8_e5m2;

namespace emu_detail {
inline void check_alignment(const void *p, size_t bytes, const char *what) {
  if (reinterpret_cast<uintptr_t>(p) % bytes != 0)
    ::tkc_emu::fail("%s at %p, not %zu-byte aligned", what, p, bytes);
}
inline void check_shared_alignment(uint32_t address, size_t bytes, const char *what) {
  if (address % bytes != 0)
    ::tkc_emu::fail("%s at shared address %u, not %zu-byte aligned", what, address, bytes);
}
template <class T> T load_shared(uint32_t address, const char *what) {
  check_shared_alignment(address, sizeof(T), what);
  T v;
  std::memcpy(&v, ::tkc_emu::shared_read(address, sizeof(T), what), sizeof(T));
  return v;
}
template <class T> void store_shared(uint32_t address, const T &v, const char *what) {
  check_shared_alignment(address, sizeof(T), what);
  std::memcpy(::tkc_emu::shared_write(address, sizeof(T), what), &v, sizeof(T));
}
inline uint16_t half_bits(uint32_t packed, int which) { return uint16_t(packed >> (which * 16)); }
} // namespace emu_detail

// --- addresses -------------------------------------------------------------------

inline uint32_t smem_address(const void *ptr) { return ::tkc_emu::shared_address_of(ptr); }

// --- asynchronous global -> shared copies ----------------------------------------

inline void cp_async_16(uint32_t dst, const void *src, int src_bytes) {
  if (src_bytes > 0)
    emu_detail::check_alignment(src, 16, "cp.async of 16 bytes from global memory");
  ::tkc_emu::async_copy(dst, src, 16, src_bytes);
}
inline void cp_async_4(uint32_t dst, const void *src, int src_bytes) {
  if (src_bytes > 0)
    emu_detail::check_alignment(src, 4, "cp.async of 4 bytes from global memory");
  ::tkc_emu::async_copy(dst, src, 4, src_bytes);
}
inline void cp_async_commit() { ::tkc_emu::commit_group(); }
template <int Pending> void cp_async_wait() { ::tkc_emu::wait_group(Pending); }

// --- reductions into global memory (blocks and threads never overlap here) -------

inline void red_add_f32_if(bool pred, float *p, float v) {
  if (pred) {
    emu_detail::check_alignment(p, 4, "a reduction");
    ::tkc_emu::check_global(p, 4, "a reduction");
    *p += v;
  }
}
inline void red_add_f32(float *p, float v) { red_add_f32_if(true, p, v); }
inline void red_add_f32x2_if(bool pred, float *p, float a, float b) {
  if (pred) {
    emu_detail::check_alignment(p, 8, "a two-float reduction");
    ::tkc_emu::check_global(p, 8, "a two-float reduction");
    p[0] += a, p[1] += b;
  }
}
inline void red_add_f32x2(float *p, float a, float b) { red_add_f32x2_if(true, p, a, b); }

// --- shared memory ----------------------------------------------------------------

inline void st_shared_b32(uint32_t addr, uint32_t value) { emu_detail::store_shared(addr, value, "st.shared.b32"); }
inline void st_shared_v2_b32(uint32_t addr, uint32_t lo, uint32_t hi) {
  const uint32_t v[2] = {lo, hi};
  emu_detail::check_shared_alignment(addr, 8, "st.shared.v2.b32");
  std::memcpy(::tkc_emu::shared_write(addr, 8, "st.shared.v2.b32"), v, 8);
}
inline void st_shared_v4_b32(uint32_t addr, uint4 v) { emu_detail::store_shared(addr, v, "st.shared.v4.b32"); }
inline float ld_shared_f32(uint32_t addr) { return emu_detail::load_shared<float>(addr, "ld.shared.f32"); }
inline void ld_shared_f32x2(uint32_t addr, float &a, float &b) {
  emu_detail::check_shared_alignment(addr, 8, "ld.shared.v2.f32");
  float v[2];
  std::memcpy(v, ::tkc_emu::shared_read(addr, 8, "ld.shared.v2.f32"), 8);
  a = v[0], b = v[1];
}

// --- ldmatrix ---------------------------------------------------------------------

namespace emu_detail {
/// ldmatrix.m8n8 of `count` matrices: lanes 8j..8j+7 give the row addresses
/// of matrix j. Untransposed, register j of lane l holds row l/4, columns
/// 2(l%4) and 2(l%4)+1 of matrix j; transposed, rows 2(l%4) and 2(l%4)+1 of
/// column l/4.
inline void ldmatrix(uint32_t *out, int count, bool trans, uint32_t addr, const char *what) {
  uint32_t rows[32];
  ::tkc_emu::warp_gather(what, addr, rows);
  const unsigned l = ::tkc_emu::lane();
  for (int j = 0; j < count; ++j) {
    uint16_t e[2];
    for (int h = 0; h < 2; ++h) {
      const unsigned row = trans ? 2 * (l % 4) + h : l / 4, col = trans ? l / 4 : 2 * (l % 4) + h;
      const unsigned giver = j * 8 + row; // the lane whose address names the row
      const uint32_t row_address = rows[giver];
      check_shared_alignment(row_address, 16, what);
      std::memcpy(&e[h], ::tkc_emu::shared_read(row_address + col * 2, 2, what, ::tkc_emu::linear_thread() - l + giver), 2);
    }
    out[j] = uint32_t(e[0]) | uint32_t(e[1]) << 16;
  }
}
} // namespace emu_detail

inline void ldmatrix_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, uint32_t addr) {
  uint32_t r[4];
  emu_detail::ldmatrix(r, 4, false, addr, "ldmatrix.x4");
  r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}
inline void ldmatrix_x4_trans(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, uint32_t addr) {
  uint32_t r[4];
  emu_detail::ldmatrix(r, 4, true, addr, "ldmatrix.x4.trans");
  r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}
inline void ldmatrix_x2(uint32_t &r0, uint32_t &r1, uint32_t addr) {
  uint32_t r[2];
  emu_detail::ldmatrix(r, 2, false, addr, "ldmatrix.x2");
  r0 = r[0], r1 = r[1];
}
inline void ldmatrix_x2_trans(uint32_t &r0, uint32_t &r1, uint32_t addr) {
  uint32_t r[2];
  emu_detail::ldmatrix(r, 2, true, addr, "ldmatrix.x2.trans");
  r0 = r[0], r1 = r[1];
}

// --- mma.sync m16n8k16 --------------------------------------------------------------

namespace emu_detail {
struct MmaOperands {
  uint32_t a[4], b[2];
};
/// d += a * b for the calling lane (g = lane / 4, t = lane % 4): it holds
/// d[g][2t], d[g][2t+1], d[g+8][2t], d[g+8][2t+1]. A's register r of lane
/// 4(i%8) + (k%8)/2 holds row i, columns k, k+1 with r = i/8 + 2(k/8); B's
/// register k/8 of lane 4n + (k%8)/2 holds rows k, k+1 of column n.
template <float (*ToFloat)(uint16_t)>
void mma_16816(float &d0, float &d1, float &d2, float &d3, const MmaOperands &mine, const char *what) {
  MmaOperands all[32];
  ::tkc_emu::warp_gather(what, mine, all);
  auto a = [&](unsigned i, unsigned k) {
    return ToFloat(half_bits(all[(i % 8) * 4 + (k % 8) / 2].a[i / 8 + 2 * (k / 8)], k % 2));
  };
  auto b = [&](unsigned k, unsigned n) { return ToFloat(half_bits(all[n * 4 + (k % 8) / 2].b[k / 8], k % 2)); };
  const unsigned l = ::tkc_emu::lane(), g = l / 4, t = l % 4;
  float *d[4] = {&d0, &d1, &d2, &d3};
  for (int r = 0; r < 4; ++r) {
    const unsigned row = g + 8 * (r / 2), col = 2 * t + r % 2;
    double sum = *d[r];
    for (unsigned k = 0; k < 16; ++k)
      sum += double(a(row, k)) * double(b(k, col));
    *d[r] = float(sum);
  }
}
} // namespace emu_detail

inline void mma_bf16_16816(float &d0, float &d1, float &d2, float &d3, uint32_t a0, uint32_t a1, uint32_t a2,
                           uint32_t a3, uint32_t b0, uint32_t b1) {
  emu_detail::mma_16816<::tkc_emu::bf16_to_float>(d0, d1, d2, d3, {{a0, a1, a2, a3}, {b0, b1}},
                                                  "mma.sync.m16n8k16.bf16");
}
inline void mma_f16_16816(float &d0, float &d1, float &d2, float &d3, uint32_t a0, uint32_t a1, uint32_t a2,
                          uint32_t a3, uint32_t b0, uint32_t b1) {
  emu_detail::mma_16816<::tkc_emu::f16_to_float>(d0, d1, d2, d3, {{a0, a1, a2, a3}, {b0, b1}},
                                                 "mma.sync.m16n8k16.f16");
}

// --- small value helpers -------------------------------------------------------------

inline uint32_t pack_bf16(float lo, float hi) {
  return uint32_t(::tkc_emu::bf16_from_float(lo)) | uint32_t(::tkc_emu::bf16_from_float(hi)) << 16;
}
inline uint32_t pack_f16(float lo, float hi) {
  return uint32_t(::tkc_emu::f16_from_float(lo)) | uint32_t(::tkc_emu::f16_from_float(hi)) << 16;
}

/// ex2.approx.ftz: subnormal results flush to zero.
inline float exp2_approx(float x) {
  const float y = exp2f(x);
  return y < 1.17549435e-38f ? 0.0f : y;
}

template <typename T> uint32_t pack2(T lo, T hi) {
  static_assert(sizeof(T) == 2, "pack2 packs 16-bit values");
  uint16_t l, h;
  std::memcpy(&l, &lo, 2);
  std::memcpy(&h, &hi, 2);
  return uint32_t(l) | uint32_t(h) << 16;
}
template <typename T> T half_of(uint32_t packed, int which) {
  const uint16_t bits = emu_detail::half_bits(packed, which);
  T v;
  std::memcpy(&v, &bits, 2);
  return v;
}

/// Lane q of each quad ends up with column q of the 4 x 4 matrix whose row
/// r lane r held: computed from that definition, not from the runtime's
/// shuffles, so that a slip in those would show.
inline void transpose_quad(uint32_t (&v)[4]) {
  struct Row {
    uint32_t v[4];
  } all[32];
  ::tkc_emu::warp_gather("transpose_quad", Row{{v[0], v[1], v[2], v[3]}}, all);
  const unsigned l = ::tkc_emu::lane(), quad = l & ~3u, q = l & 3u;
  for (unsigned r = 0; r < 4; ++r)
    v[r] = all[quad + r].v[q];
}

// --- global memory --------------------------------------------------------------------

template <class T> T load_global(const void *ptr, const char *what) {
  emu_detail::check_alignment(ptr, sizeof(T), what);
  ::tkc_emu::check_global(ptr, sizeof(T), what);
  T v;
  std::memcpy(&v, ptr, sizeof(T));
  return v;
}
template <class T> void store_global(void *ptr, const T &v, const char *what) {
  emu_detail::check_alignment(ptr, sizeof(T), what);
  ::tkc_emu::check_global(ptr, sizeof(T), what);
  std::memcpy(ptr, &v, sizeof(T));
}
inline uint4 load_global_16(const void *ptr) { return load_global<uint4>(ptr, "a 16-byte global load"); }
inline void store_global_16(void *ptr, uint4 v) { store_global(ptr, v, "a 16-byte global store"); }
inline uint2 load_global_8(const void *ptr) { return load_global<uint2>(ptr, "an 8-byte global load"); }
inline void store_global_8(void *ptr, uint2 v) { store_global(ptr, v, "an 8-byte global store"); }
inline uint32_t load_global_4(const void *ptr) { return load_global<uint32_t>(ptr, "a 4-byte global load"); }
inline void store_global_4(void *ptr, uint32_t v) { store_global(ptr, v, "a 4-byte global store"); }

inline float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }

} // namespace tkc
