#pragma once
#include "codegen/CodeWriter.h"

#include <cstdint>
#include <set>
#include <string>
#include <tuple>

namespace tkc::codegen {

/// One form of wgmma.mma_async (m64nNk16, f32 accumulators) that generated
/// code calls.
struct WgmmaShape {
  int64_t n = 0;           ///< the width N
  std::string elementType; ///< of A and B: "bf16" or "f16"
  bool aInRegisters = false;

  bool operator<(const WgmmaShape &other) const {
    return std::tie(aInRegisters, n, elementType) < std::tie(other.aInRegisters, other.n, other.elementType);
  }
  /// The wrapper's name in namespace tkc, e.g. `wgmma_rs_m64n64k16_f32_bf16`.
  std::string wrapperName() const;
};

/// Writes the inline-PTX wrappers of `shapes` inside `namespace tkc`. PTX
/// takes the accumulators as a brace list of N / 2 registers, so every
/// width needs a function of its own; the file gets those its kernels call.
void emitWgmmaWrappers(const std::set<WgmmaShape> &shapes, CodeWriter &out);

} // namespace tkc::codegen
