// tkc host interface: how generated launch functions receive tensors and
// report errors. Plain C so that any language can call them (ctypes, C++).
#ifndef TKC_HOST_H
#define TKC_HOST_H
#include <stdint.h>

#define TKC_MAX_RANK 6

/// A strided view of device memory. Sizes and strides count elements.
typedef struct tkc_tensor {
  void *data;
  int32_t rank;
  int64_t sizes[TKC_MAX_RANK];
  int64_t strides[TKC_MAX_RANK];
} tkc_tensor;

/// Launch functions return one of these; 0 means the kernel was launched.
enum tkc_status {
  TKC_OK = 0,
  TKC_ERROR_NULL_POINTER = 1,
  TKC_ERROR_SHAPE = 2,
  TKC_ERROR_STRIDE = 3,
  TKC_ERROR_ALIGNMENT = 4,
  TKC_ERROR_NO_SPECIALIZATION = 5,
  TKC_ERROR_LAUNCH = 6,
};

#endif
