// Calls the launcher of derived-dims.tk with fake device pointers and
// prints each status and message: the derived dims are checked before any
// CUDA call, so this runs without a GPU. Then the info's dims strings.
#include "derived-dims.h"

#include <cstdio>
#include <initializer_list>

namespace {

char *const kFake = reinterpret_cast<char *>(0x7f0000000000);

tkc_tensor f32(std::initializer_list<int64_t> sizes, int slot) {
  tkc_tensor t = TKC_TENSOR_INIT;
  t.dtype = {TKC_DTYPE_FLOAT, 32, 1};
  t.data = kFake + (int64_t(slot) << 24);
  t.rank = static_cast<int32_t>(sizes.size());
  int d = 0;
  for (int64_t s : sizes)
    t.sizes[d++] = s;
  int64_t stride = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    t.strides[i] = stride;
    stride *= t.sizes[i] ? t.sizes[i] : 1;
  }
  return t;
}

/// M = 1000 rows of D = 128, S = 2, K = 3: Lo [1000, 64], Part [16, 128],
/// Every [500, 128], Q [334].
struct Args {
  tkc_tensor X = f32({1000, 128}, 0), Lo = f32({1000, 64}, 1), Part = f32({16, 128}, 2),
             Every = f32({500, 128}, 3), G = f32({3}, 4), Q = f32({334}, 5);
  int64_t S = 2;
  int call() { return tkc_halves(&X, &Lo, &Part, &Every, &G, &Q, S, nullptr); }
};

void report(const char *label, int status) { std::printf("%s: %d %s\n", label, status, tkc_halves_error()); }

} // namespace

int main() {
  {
    Args a;
    int status = a.call();
    std::printf("valid: %s\n", status == TKC_ERROR_CUDA || status == TKC_ERROR_DEVICE ? "past the shape checks"
                                                                                      : tkc_halves_error());
  }
  {
    Args a;
    a.Part = f32({15, 128}, 2);
    report("Part short", a.call());
  }
  {
    Args a;
    a.Lo = f32({1000, 128}, 1);
    report("Lo full width", a.call());
  }
  {
    Args a;
    a.S = 1;
    report("S = 1, Every halved", a.call());
  }
  {
    Args a;
    a.S = 3;
    report("S = 3", a.call());
  }
  {
    Args a;
    a.G = f32({0}, 4);
    report("empty G", a.call());
  }
  {
    Args a;
    a.Q = f32({333}, 5);
    report("Q short", a.call());
  }
  {
    Args a;
    a.X = f32({1001, 128}, 0);
    a.Lo = f32({1001, 64}, 1);
    a.Every = f32({500, 128}, 3);
    a.Q = f32({334}, 5);
    int status = a.call();
    std::printf("1001 rows, S = 2 rounds down: %s\n",
                status == TKC_ERROR_CUDA || status == TKC_ERROR_DEVICE ? "past the shape checks" : tkc_halves_error());
  }
  const tkc_kernel_info *info = tkc_halves_info();
  for (int t = 0; t < info->num_tensors; ++t) {
    std::printf("tensor %s:", info->tensors[t].name);
    for (int d = 0; d < info->tensors[t].rank; ++d)
      std::printf(" [%s]", info->tensors[t].dims[d]);
    std::printf("\n");
  }
  return 0;
}
