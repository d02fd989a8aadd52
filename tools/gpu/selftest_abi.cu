// A hand-written kernel behind the same host ABI as tkc-generated code, used
// to test the GPU harness itself (build line, ctypes descriptor, status codes,
// error messages, timing) independently of the compiler.
//
//   int tkc_axpy(const tkc_tensor *x, const tkc_tensor *y, const tkc_tensor *out,
//                int64_t alpha, void *stream);          // out = alpha * x + y, f32[n]
//   const char *tkc_axpy_error(void);
//   const tkc_kernel_info *tkc_axpy_info(void);        // what it takes, as tkc describes its launchers
//   int tkc_selftest_layout(int64_t *out);             // sizeof / offsetof of tkc_tensor
//
// Build: nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -I runtime \
//          -gencode=arch=compute_90,code=sm_90 -o axpy.so tools/gpu/selftest_abi.cu
#include "tkc_host.h"

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>

namespace {

thread_local char g_error[512];

int fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_error, sizeof g_error, fmt, ap);
  va_end(ap);
  return code;
}

// Four elements per thread through float4 while they last, then a scalar tail.
__global__ void axpy_kernel(const float *__restrict__ x, const float *__restrict__ y, float *__restrict__ out,
                            float alpha, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t n4 = n / 4;
  const float4 *x4 = reinterpret_cast<const float4 *>(x);
  const float4 *y4 = reinterpret_cast<const float4 *>(y);
  float4 *o4 = reinterpret_cast<float4 *>(out);
  for (int64_t i = first; i < n4; i += stride) {
    float4 a = x4[i], b = y4[i], r;
    r.x = alpha * a.x + b.x;
    r.y = alpha * a.y + b.y;
    r.z = alpha * a.z + b.z;
    r.w = alpha * a.w + b.w;
    o4[i] = r;
  }
  for (int64_t i = n4 * 4 + first; i < n; i += stride) out[i] = alpha * x[i] + y[i];
}

int check_tensor(const tkc_tensor *t, const char *name) {
  if (t == nullptr) return fail(1, "axpy: %s: null tensor descriptor", name);
  if (t->struct_size != sizeof(tkc_tensor) || t->abi_version != TKC_ABI_VERSION)
    return fail(7, "axpy: %s: descriptor of %u bytes, version %u", name, (unsigned)t->struct_size,
                (unsigned)t->abi_version);
  if (t->dtype.code != 2 || t->dtype.bits != 32 || t->dtype.lanes != 1)
    return fail(8, "axpy: %s: must be f32", name);
  if (t->data == nullptr) return fail(1, "axpy: %s: null data pointer", name);
  if (t->rank != 1) return fail(2, "axpy: %s: expected rank 1, got %d", name, (int)t->rank);
  if (t->sizes[0] < 0) return fail(2, "axpy: %s: negative size %lld", name, (long long)t->sizes[0]);
  return 0;
}

}  // namespace

extern "C" int tkc_axpy(const tkc_tensor *x, const tkc_tensor *y, const tkc_tensor *out, int64_t alpha,
                        void *stream) {
  const tkc_tensor *all[3] = {x, y, out};
  const char *names[3] = {"x", "y", "out"};
  for (int i = 0; i < 3; ++i)
    if (int code = check_tensor(all[i], names[i])) return code;
  const int64_t n = x->sizes[0];
  for (int i = 1; i < 3; ++i)
    if (all[i]->sizes[0] != n)
      return fail(2, "axpy: %s has %lld elements, x has %lld", names[i], (long long)all[i]->sizes[0],
                  (long long)n);
  for (int i = 0; i < 3; ++i)
    if (all[i]->strides[0] != 1 && n > 1)
      return fail(3, "axpy: %s: inner stride %lld, need 1", names[i], (long long)all[i]->strides[0]);
  for (int i = 0; i < 3; ++i)
    if (reinterpret_cast<uintptr_t>(all[i]->data) % 16 != 0)
      return fail(4, "axpy: %s: data pointer %p is not 16-byte aligned", names[i], all[i]->data);
  if (n > ((int64_t)1 << 40)) return fail(5, "axpy: no specialisation for n = %lld", (long long)n);
  g_error[0] = '\0';
  if (n == 0) return 0;
  const int threads = 256;
  int64_t blocks = (n / 4 + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  axpy_kernel<<<(unsigned)blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float *>(x->data), static_cast<const float *>(y->data), static_cast<float *>(out->data),
      (float)alpha, n);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return fail(6, "axpy: launch failed: %s", cudaGetErrorString(err));
  return 0;
}

extern "C" const char *tkc_axpy_error(void) { return g_error; }

// sizeof, then the offsets of struct_size, abi_version, dtype, device, data, rank, sizes and strides;
// returns how many were written.
extern "C" int tkc_selftest_layout(int64_t *out) {
  out[0] = (int64_t)sizeof(tkc_tensor);
  out[1] = (int64_t)offsetof(tkc_tensor, struct_size);
  out[2] = (int64_t)offsetof(tkc_tensor, abi_version);
  out[3] = (int64_t)offsetof(tkc_tensor, dtype);
  out[4] = (int64_t)offsetof(tkc_tensor, device);
  out[5] = (int64_t)offsetof(tkc_tensor, data);
  out[6] = (int64_t)offsetof(tkc_tensor, rank);
  out[7] = (int64_t)offsetof(tkc_tensor, sizes);
  out[8] = (int64_t)offsetof(tkc_tensor, strides);
  return 9;
}

extern "C" const tkc_kernel_info *tkc_axpy_info(void) {
  static const tkc_param_info tensors[] = {{"x", {2, 32, 1}, 0, 1, {"n"}, 16, 1},
                                           {"y", {2, 32, 1}, 0, 1, {"n"}, 16, 1},
                                           {"out", {2, 32, 1}, 1, 1, {"n"}, 16, 1}};
  static const char *const constants[] = {"alpha"};
  static const char *const targets[] = {"sm_80"};
  static const tkc_kernel_info info = {sizeof(tkc_kernel_info), TKC_ABI_VERSION, "axpy", 3, tensors, 1, constants,
                                       0, nullptr, 1, targets};
  return &info;
}

// 1: the layout above is runtime/tkc_host.h's.
extern "C" int tkc_selftest_uses_runtime_header(void) { return 1; }
