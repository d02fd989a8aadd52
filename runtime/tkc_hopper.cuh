// tkc runtime for sm_90a: thin, named wrappers over the Hopper instructions
// that generated kernels use (mbarriers, the bulk tensor copy engine, wgmma
// descriptors, fences and waits, register reallocation). The wgmma.mma_async
// wrappers, one per width, are written into each generated file that calls
// them. Like tkc_runtime.cuh it holds no loops, layouts or schedules. Build
// with -gencode=arch=compute_90a,code=sm_90a.
#pragma once
#include <cuda.h> // CUtensorMap and its encoding enums (types only: no -lcuda needed)
#include <stdint.h>

namespace tkc {

// --- addresses -------------------------------------------------------------------

/// smem_address, kept in a register once computed: the address of the
/// shared-memory symbol is otherwise recomputed from the block's cluster id
/// (S2UR, long latency) where the loops use it, at every iteration.
__device__ __forceinline__ uint32_t kept_smem_address(const void *ptr) {
  uint32_t address = smem_address(ptr);
  asm volatile("" : "+r"(address));
  return address;
}

// --- mbarriers ------------------------------------------------------------------

/// Sets up the mbarrier at `bar` to complete a phase after `count` arrivals.
__device__ __forceinline__ void mbarrier_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

/// Makes initialised mbarriers visible to the async proxy (the copy engine).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/// One arrival that also announces `bytes` of asynchronous copies to come.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

/// One arrival.
__device__ __forceinline__ void mbarrier_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

/// True once the phase with the given parity (0 or 1) has completed.
__device__ __forceinline__ bool mbarrier_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done)
               : "r"(bar), "r"(parity)
               : "memory");
  return done != 0;
}

// --- proxies and registers ------------------------------------------------------

/// Orders this thread's ordinary shared-memory accesses before later
/// async-proxy accesses (wgmma operand reads, bulk copies).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/// The warps of one warpgroup meet at named barrier `id` (1 + warpgroup;
/// barrier 0 is __syncthreads).
__device__ __forceinline__ void warpgroup_sync(int id) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory");
}

/// Waits at named barrier `id` until `threads` threads (this warp's
/// included) have arrived; bar.arrive below arrives without waiting.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/// Hands registers back (dec) or takes more (inc) for the calling warpgroup.
template <int Registers> __device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers));
}
template <int Registers> __device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Registers));
}

// --- bulk tensor copies (TMA) ----------------------------------------------------

/// Copies the box at coordinates (c0 innermost, c1) of the tensor map into
/// shared memory at `dst`; completes `bytes` of transaction count on `bar`.
/// Elements outside the tensor are filled with zeros.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint32_t bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
               ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
               : "memory");
}

/// Copies `src` in shared memory to the box at coordinates (c0 innermost, c1)
/// of the tensor map, as part of this thread's current bulk group. Elements
/// outside the tensor are not written.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap *map, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];\n"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(c0), "r"(c1)
               : "memory");
}

/// Adds `src` in shared memory to the box at coordinates (c0 innermost, c1)
/// of the tensor map (the copy engine reads, adds in L2 and writes back), as
/// part of this thread's current bulk group. Elements outside the tensor are
/// left alone.
__device__ __forceinline__ void tma_reduce_add_2d(const CUtensorMap *map, uint32_t src, int c0, int c1) {
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3}], [%1];\n"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(c0), "r"(c1)
               : "memory");
}

/// The same stores and additions for tensors of 3 to 5 dims: coordinates
/// innermost first.
__device__ __forceinline__ void tma_store_3d(const CUtensorMap *map, uint32_t src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
__device__ __forceinline__ void tma_store_4d(const CUtensorMap *map, uint32_t src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
__device__ __forceinline__ void tma_store_5d(const CUtensorMap *map, uint32_t src, int c0, int c1, int c2, int c3,
                                             int c4) {
  asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];\n"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}
__device__ __forceinline__ void tma_reduce_add_3d(const CUtensorMap *map, uint32_t src, int c0, int c1, int c2) {
  asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
__device__ __forceinline__ void tma_reduce_add_4d(const CUtensorMap *map, uint32_t src, int c0, int c1, int c2,
                                                  int c3) {
  asm volatile("cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
__device__ __forceinline__ void tma_reduce_add_5d(const CUtensorMap *map, uint32_t src, int c0, int c1, int c2,
                                                  int c3, int c4) {
  asm volatile("cp.reduce.async.bulk.tensor.5d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];\n"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}

/// Closes this thread's current group of bulk stores.
__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

/// Waits until at most `Pending` of this thread's bulk store groups are still
/// reading their shared-memory source.
template <int Pending> __device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(Pending) : "memory");
}

/// Waits until at most `Pending` of this thread's bulk store groups are
/// incomplete (their writes done).
template <int Pending> __device__ __forceinline__ void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(Pending) : "memory");
}

/// The same for tensors of 3 to 5 dims: coordinates innermost first.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap *map, int c0, int c1, int c2, uint32_t bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
               ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap *map, int c0, int c1, int c2, int c3,
                                            uint32_t bar) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n"
               ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void tma_load_5d(uint32_t dst, const CUtensorMap *map, int c0, int c1, int c2, int c3,
                                            int c4, uint32_t bar) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n"
               ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar)
               : "memory");
}

/// Pulls a tensor map into the cache ahead of its first use.
__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap *map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// --- wgmma ------------------------------------------------------------------------

/// The matrix descriptor of a 128-byte-swizzled operand tile in shared
/// memory: start address, leading and stride byte offsets (all >> 4), and
/// the swizzle mode in bits 62-63 (1: 128-byte).
__device__ __forceinline__ uint64_t wgmma_desc_sw128(uint32_t addr, uint32_t leading_bytes, uint32_t stride_bytes) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(leading_bytes >> 4) << 16) |
         (static_cast<uint64_t>(stride_bytes >> 4) << 32) | (1ull << 62);
}

/// The descriptor of the same tile `bytes` further on: the start address
/// field holds the address / 16 (shared addresses stay below 2^18, so the
/// field never carries into the next).
__device__ __forceinline__ uint64_t wgmma_desc_advance(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int Pending> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}

/// Keeps the compiler from moving accesses of an accumulator register across
/// a wgmma fence or wait.
__device__ __forceinline__ void fence_operand(float &r) { asm volatile("" : "+f"(r)::"memory"); }

/// Reads four registers of an A fragment that a loop's products read and
/// that was loaded once before the loop, with a shared store that never runs
/// (`never_negative` is never below zero; ptxas cannot know). Read only by
/// wgmma inside the loop, such registers were reused there by ptxas
/// (CUDA 13.0) once the product reading them had retired, and the next
/// iteration's product read garbage; a read by an ordinary instruction
/// keeps them live across the loop.
__device__ __forceinline__ void keep_fragment(uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3, int never_negative,
                                              uint32_t addr) {
  asm volatile("{\n.reg .pred p;\nsetp.lt.s32 p, %4, 0;\n@p st.shared.v4.b32 [%5], {%0, %1, %2, %3};\n}\n" ::"r"(r0),
               "r"(r1), "r"(r2), "r"(r3), "r"(never_negative), "r"(addr)
               : "memory");
}

} // namespace tkc

// --- host: tensor maps -------------------------------------------------------------

/// cuTensorMapEncodeTiled, found through the runtime's driver entry point so
/// that programs need not link libcuda.
typedef CUresult (*tkc_tensor_map_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                             const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                             const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                             CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static inline tkc_tensor_map_encode_fn tkc_tensor_map_encoder(void) {
  static tkc_tensor_map_encode_fn fn = nullptr;
  if (!fn) {
    void *entry = nullptr;
    cudaDriverEntryPointQueryResult found;
#if CUDART_VERSION >= 12050
    cudaError_t status = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, 12000, cudaEnableDefault,
                                                          &found);
#else
    cudaError_t status = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &entry, cudaEnableDefault, &found);
#endif
    if (status == cudaSuccess && found == cudaDriverEntryPointSuccess && entry)
      fn = reinterpret_cast<tkc_tensor_map_encode_fn>(entry);
  }
  return fn;
}

/// A tiled tensor map over a tensor of `rank` (2..5) dims, listed outermost
/// first as the kernel sees them: sizes, strides in elements (the last one
/// must be 1), and a box of box_rows x box_cols elements over the last two
/// dims (one element along the others), 128-byte swizzled; reads outside
/// the tensor return zeros. 0 on success.
static inline int tkc_make_tensor_map(CUtensorMap *map, const void *data, CUtensorMapDataType type, int rank,
                                      const int64_t *sizes, const int64_t *strides, int element_bytes,
                                      uint32_t box_rows, uint32_t box_cols) {
  tkc_tensor_map_encode_fn encode = tkc_tensor_map_encoder();
  if (!encode || rank < 2 || rank > 5)
    return 1;
  cuuint64_t dims[5], byte_strides[4];
  cuuint32_t box[5], element_strides[5];
  for (int d = 0; d < rank; ++d) { // innermost first
    const int from = rank - 1 - d;
    dims[d] = sizes[from] > 0 ? static_cast<cuuint64_t>(sizes[from]) : 1;
    box[d] = d == 0 ? box_cols : d == 1 ? box_rows : 1;
    element_strides[d] = 1;
    if (d > 0)
      byte_strides[d - 1] = static_cast<cuuint64_t>(strides[from] > 0 ? strides[from] : 1) * element_bytes;
  }
  CUresult r = encode(map, type, rank, const_cast<void *>(data), dims, byte_strides, box, element_strides,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : 2;
}

/// A 2-d tiled tensor map over a row-major [rows, cols] tensor with a row
/// stride of `row_stride_bytes`, boxes of box_rows x box_cols elements and
/// 128-byte swizzling; reads outside the tensor return zeros. 0 on success.
static inline int tkc_make_tensor_map_2d(CUtensorMap *map, const void *data, CUtensorMapDataType type,
                                         uint64_t rows, uint64_t cols, uint64_t row_stride_bytes,
                                         uint32_t box_rows, uint32_t box_cols) {
  tkc_tensor_map_encode_fn encode = tkc_tensor_map_encoder();
  if (!encode)
    return 1;
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {row_stride_bytes};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  CUresult r = encode(map, type, 2, const_cast<void *>(data), dims, strides, box, element_strides,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : 2;
}
