// Calls the launcher that tkc_add_kernels compiled from scale.tk; the test
// only links it, so it needs no GPU.
#include "tkc_host.h"

#include <cstdio>

extern "C" int tkc_scale(const tkc_tensor *X, const tkc_tensor *Y, void *stream);
extern "C" const char *tkc_scale_error(void);

int main() {
  tkc_tensor x{}, y{};
  int status = tkc_scale(&x, &y, nullptr);
  if (status != TKC_OK)
    std::printf("tkc_scale: %s\n", tkc_scale_error());
  return status;
}
