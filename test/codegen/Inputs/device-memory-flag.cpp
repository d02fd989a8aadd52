// Calls the runtime's device-memory check on descriptors with and without
// TKC_TENSOR_DEVICE_MEMORY and prints each status and message. A flagged
// descriptor is decided without a CUDA call, so this part runs without a GPU.
#include "tkc_host.h"
#include "tkc_launch.h"

#include <cstdio>

int main() {
  char message[tkc::host::kMessageBytes] = "";
  tkc_tensor t = TKC_TENSOR_INIT;
  t.data = reinterpret_cast<void *>(0x7f0000000000);
  t.device = 0;
  t.flags = TKC_TENSOR_DEVICE_MEMORY;
  std::printf("flagged, same device: %d\n", tkc::host::check_device_memory(message, &t, "X", 0));
  int status = tkc::host::check_device_memory(message, &t, "X", 2);
  std::printf("flagged, other device: %d %s\n", status, message);
  t.flags = 0;
  status = tkc::host::check_device_memory(message, &t, "X", 0);
  // Without a GPU the driver query fails; on one, the address is not device memory.
  std::printf("unflagged: %s\n", status == TKC_ERROR_CUDA || status == TKC_ERROR_DEVICE ? "asked the driver" : message);
  return 0;
}
