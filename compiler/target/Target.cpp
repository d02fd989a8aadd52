#include "target/Target.h"

namespace tkc {
namespace {
// Figures from the CUDA C++ Programming Guide's table of compute
// capabilities: an A100 (8.0) has 164 KiB of shared memory a multiprocessor,
// of which a block may opt in to 163 KiB; an H100 (9.0) has 228 KiB and
// 227 KiB. Both have 64 Ki 32-bit registers a multiprocessor and at most
// 255 a thread. Function-local statics so that lookups from other static
// initialisers find them built.
const Target &sm80() {
  static const Target t{"sm_80", 80, 163 * 1024, 164 * 1024, 32, 65536, 255};
  return t;
}
const Target &sm90a() {
  static const Target t{"sm_90a", 90, 227 * 1024, 228 * 1024, 32, 65536, 255};
  return t;
}
} // namespace

const Target *Target::lookup(const std::string &name) {
  if (name == "sm_80")
    return &sm80();
  if (name == "sm_90a")
    return &sm90a();
  return nullptr;
}

const Target *Target::forComputeCapability(int64_t cc) {
  if (cc == 80)
    return &sm80();
  if (cc == 90)
    return &sm90a();
  return nullptr;
}

} // namespace tkc
