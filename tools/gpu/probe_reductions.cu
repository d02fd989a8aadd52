// How fast the H200 adds f32 into global memory the way a backward pass that
// owns key tiles would accumulate dQ: every block adds a [64, D] tile into
// each query tile of its head, N * N * D / BK additions per head, with all
// blocks of a head starting on the same rows. Three ways: a scalar
// reduction per element (red.global.add.f32, what atomicAdd compiles to),
// one vector reduction per pair of adjacent columns (red.global.add.v2.f32,
// sm_90), and bulk copy-reductions of whole rows from shared memory
// (cp.reduce.async.bulk, sm_90). Prints milliseconds and additions per
// second for the benchmark's attention shapes (B * N = 16k, H * D = 2048).
//
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o probe tools/gpu/probe_reductions.cu && ./probe
#include <cstdio>
#include <cuda_runtime.h>

enum Method { kScalar, kPair, kBulk };
static const char *kNames[] = {"red.f32", "red.v2.f32", "bulk reduce"};

// Four warps; each thread adds the elements an mma accumulator fragment
// holds: rows lane / 4 and lane / 4 + 8 of its warp's 16, columns in pairs.
template <int D, Method M>
__global__ void add_from_registers(float *dq, int n) {
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float *head = dq + size_t(blockIdx.y) * n * D;
  float v = 1e-3f * (blockIdx.x + 1);
  for (int tile = 0; tile < n / 64; ++tile) {
    for (int half = 0; half < 2; ++half) {
      float *row = head + size_t(tile * 64 + warp * 16 + lane / 4 + half * 8) * D + lane % 4 * 2;
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        float *p = row + j * 8;
        if (M == kPair) {
          asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(v), "f"(v) : "memory");
        } else {
          asm volatile("red.global.add.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
          asm volatile("red.global.add.f32 [%0], %1;" ::"l"(p + 1), "f"(v) : "memory");
        }
      }
    }
    v += 1e-4f;
  }
}

// 64 threads each reduce one row of a [64, D] shared tile into global
// memory; a row's copy must have read shared memory before the next.
template <int D>
__global__ void add_from_shared(float *dq, int n) {
  extern __shared__ __align__(128) float tile[];
  for (int x = threadIdx.x; x < 64 * D; x += blockDim.x)
    tile[x] = 1e-3f * (x % 7);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  float *head = dq + size_t(blockIdx.y) * n * D;
  unsigned src = unsigned(__cvta_generic_to_shared(tile + threadIdx.x * D));
  for (int t = 0; t < n / 64 && threadIdx.x < 64; ++t) {
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    float *row = head + size_t(t * 64 + threadIdx.x) * D;
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" ::"l"(row), "r"(src),
                 "n"(D * 4)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

template <int D, Method M>
void measure(int n, int keyTile, int heads) {
  float *dq;
  size_t elems = size_t(heads) * n * D;
  cudaMalloc(&dq, elems * 4);
  cudaMemset(dq, 0, elems * 4);
  dim3 grid(n / keyTile, heads);
  if (M == kBulk)
    cudaFuncSetAttribute(add_from_shared<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * D * 4);
  auto launch = [&] {
    if constexpr (M == kBulk)
      add_from_shared<D><<<grid, 128, 64 * D * 4>>>(dq, n);
    else
      add_from_registers<D, M><<<grid, 128>>>(dq, n);
  };
  launch();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  for (int r = 0; r < 5; ++r)
    launch();
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  ms /= 5;
  double adds = double(heads) * n * n / keyTile * D;
  printf("D=%-3d N=%d key tile %-3d %-11s %7.3f ms  %.2e adds  %4.0f Gadd/s  (%s)\n", D, n, keyTile, kNames[M], ms, adds,
         adds / ms / 1e6, cudaGetErrorString(cudaGetLastError()));
  cudaFree(dq);
}

/// Every method at one shape, one after another.
template <int D> void measureAll(int n, int keyTile, int heads) {
  measure<D, kScalar>(n, keyTile, heads);
  measure<D, kPair>(n, keyTile, heads);
  measure<D, kBulk>(n, keyTile, heads);
}

int main() {
  measureAll<128>(4096, 64, 64);
  measureAll<128>(4096, 128, 64);
  measureAll<64>(4096, 64, 128);
  measureAll<64>(4096, 128, 128);
  return 0;
}
