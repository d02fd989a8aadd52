// Calls a generated launcher (layernorm, built for sm_80 and sm_90a) with
// fake device pointers and bad descriptors, and prints each status and
// message. Nothing is launched: every case fails a structural check, which
// a launcher makes before any CUDA call, so this runs without a GPU. The
// one valid call gets past them to the device query (no device here) or,
// on a GPU machine, to the memory check (the pointers are fake).
#include "layernorm.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace {

void *const kFake = reinterpret_cast<void *>(0x7f0000000000);

tkc_tensor bf16(int rank, std::initializer_list<int64_t> sizes, void *data = kFake) {
  tkc_tensor t = TKC_TENSOR_INIT;
  t.dtype = {TKC_DTYPE_BFLOAT, 16, 1};
  t.data = data;
  t.rank = rank;
  int d = 0;
  for (int64_t s : sizes)
    t.sizes[d++] = s;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    t.strides[i] = stride;
    stride *= t.sizes[i];
  }
  return t;
}

tkc_tensor f32(std::initializer_list<int64_t> sizes, void *data) {
  tkc_tensor t = bf16(1, sizes, data);
  t.dtype = {TKC_DTYPE_FLOAT, 32, 1};
  return t;
}

struct Args {
  tkc_tensor X = bf16(2, {8, 1024});
  tkc_tensor W = bf16(1, {1024}, static_cast<char *>(kFake) + (1 << 20));
  tkc_tensor Bias = bf16(1, {1024}, static_cast<char *>(kFake) + (2 << 20));
  tkc_tensor Y = bf16(2, {8, 1024}, static_cast<char *>(kFake) + (3 << 20));
  tkc_tensor Mean = f32({8}, static_cast<char *>(kFake) + (4 << 20));
  tkc_tensor Rstd = f32({8}, static_cast<char *>(kFake) + (5 << 20));
};

void report(const char *label, int status) {
  std::printf("%s: %d %s\n", label, status, tkc_layernorm_error());
}

} // namespace

int main() {
  {
    Args a;
    int status = tkc_layernorm(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr);
    std::printf("valid: %s\n", status == TKC_ERROR_CUDA || status == TKC_ERROR_DEVICE ? "past the structural checks"
                                                                                      : tkc_layernorm_error());
  }
  {
    Args a;
    report("null descriptor", tkc_layernorm(nullptr, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
  }
  {
    Args a;
    a.X.abi_version = 2;
    report("version 2", tkc_layernorm(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
  }
  {
    Args a;
    a.W.struct_size = 112; // the descriptor before version 1
    report("old struct", tkc_layernorm(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
  }
  {
    Args a;
    a.X.dtype = {TKC_DTYPE_FLOAT, 16, 1};
    report("f16 input", tkc_layernorm(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
  }
  {
    Args a;
    a.Y.dtype = {TKC_DTYPE_FLOAT, 32, 1};
    report("f32 output", tkc_layernorm_sm80(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
  }
  {
    Args a;
    a.Bias.dtype = {TKC_DTYPE_BFLOAT, 16, 2};
    report("two lanes", tkc_layernorm_sm90a(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
  }
  {
    Args a;
    a.X.data = nullptr;
    report("null data", tkc_layernorm(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
  }
  {
    Args a;
    a.X.rank = 3;
    report("rank 3", tkc_layernorm(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
  }
  {
    Args a;
    a.Y.strides[1] = 2;
    report("inner stride", tkc_layernorm(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
  }
  {
    Args a;
    a.X.data = static_cast<char *>(a.X.data) + 2;
    report("misaligned", tkc_layernorm(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
  }
  {
    Args a;
    a.X.strides[0] = 1001;
    report("row stride", tkc_layernorm(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
  }
  {
    Args a;
    a.W.sizes[0] = 2048;
    report("W size", tkc_layernorm(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
  }
  {
    Args a;
    for (tkc_tensor *t : {&a.X, &a.Y}) {
      t->sizes[1] = 96;
      t->strides[0] = 96;
    }
    a.W.sizes[0] = a.Bias.sizes[0] = 96;
    report("D = 96", tkc_layernorm(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
  }
  {
    // At D = 384 the rows go in 8-byte chunks: rows 8-byte aligned (a stride
    // of 388 elements) are enough there, on both targets, and not at 1024.
    for (int target = 0; target < 2; ++target) {
      Args a;
      for (tkc_tensor *t : {&a.X, &a.Y}) {
        t->sizes[1] = 384;
        t->strides[0] = 388;
      }
      a.W.sizes[0] = a.Bias.sizes[0] = 384;
      auto launch = target ? tkc_layernorm_sm90a : tkc_layernorm_sm80;
      int status = launch(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr);
      std::printf("D = 384, 8-byte rows, %s: %s\n", target ? "sm_90a" : "sm_80",
                  status == TKC_ERROR_CUDA || status == TKC_ERROR_DEVICE || status == TKC_ERROR_NO_TARGET
                      ? "past the structural checks"
                      : tkc_layernorm_error());
      a.X.data = static_cast<char *>(a.X.data) + 4;
      report("D = 384, 4-byte X", launch(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
    }
    Args a;
    a.X.strides[0] = 1028;
    report("D = 1024, 8-byte rows", tkc_layernorm(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr));
  }
  {
    // Messages are per thread: another thread's failure leaves ours.
    Args a;
    a.X.rank = 1;
    tkc_layernorm(&a.X, &a.W, &a.Bias, &a.Y, &a.Mean, &a.Rstd, nullptr);
    std::thread other([] {
      Args b;
      b.W.data = nullptr;
      tkc_layernorm(&b.X, &b.W, &b.Bias, &b.Y, &b.Mean, &b.Rstd, nullptr);
    });
    other.join();
    std::printf("after another thread: %s\n", tkc_layernorm_error());
  }

  const tkc_kernel_info *info = tkc_layernorm_info();
  std::printf("info: %s, version %u, %d tensors, %d constants, %d wheres, size ok %d\n", info->name,
              info->abi_version, info->num_tensors, info->num_constants, info->num_wheres,
              info->struct_size == sizeof(tkc_kernel_info));
  for (int i = 0; i < info->num_tensors; ++i) {
    const tkc_param_info &p = info->tensors[i];
    std::string dims;
    for (int d = 0; d < p.rank; ++d)
      dims += std::string(d ? "," : "") + p.dims[d];
    std::printf("tensor %s: dtype %d/%d out %d [%s] align %d rows %d\n", p.name, p.dtype.code, p.dtype.bits,
                p.is_output, dims.c_str(), p.alignment, p.row_multiple);
  }
  for (int i = 0; i < info->num_wheres; ++i) {
    const tkc_where_info &w = info->wheres[i];
    std::printf("where %s argument %d:", w.name, w.is_argument);
    for (int v = 0; v < w.num_values; ++v)
      std::printf(" %lld", static_cast<long long>(w.values[v]));
    std::printf("\n");
  }
  for (int i = 0; i < info->num_targets; ++i)
    std::printf("target %s\n", info->targets[i]);
  return 0;
}
