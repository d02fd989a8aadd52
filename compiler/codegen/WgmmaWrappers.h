#pragma once
#include "codegen/CodeWriter.h"

#include <cstdint>
#include <set>
#include <string>
#include <tuple>

namespace tkc::codegen {

/// One form of wgmma.mma_async (m64nNk16, or m64nNk32 for 8-bit floats;
/// f32 accumulators) that generated code calls.
struct WgmmaShape {
  int64_t n = 0;           ///< the width N
  std::string elementType; ///< of A: "bf16", "f16", "e4m3" or "e5m2"
  bool aInRegisters = false;
  std::string bType; ///< of B where it differs from A's (8-bit floats mix)

  bool operator<(const WgmmaShape &other) const {
    return std::tie(aInRegisters, n, elementType, bType) <
           std::tie(other.aInRegisters, other.n, other.elementType, other.bType);
  }
  bool eightBit() const { return elementType == "e4m3" || elementType == "e5m2"; }
  /// K of one instruction: 32 bytes of each row of A and B.
  int64_t k() const { return eightBit() ? 32 : 16; }
  const std::string &typeOfB() const { return bType.empty() ? elementType : bType; }
  /// The wrapper's name in namespace tkc, e.g. `wgmma_rs_m64n64k16_f32_bf16`
  /// or `wgmma_m64n256k32_f32_e4m3_e5m2`.
  std::string wrapperName() const;
};

/// Writes the inline-PTX wrappers of `shapes` inside `namespace tkc`. PTX
/// takes the accumulators as a brace list of N / 2 registers, so every
/// width needs a function of its own; the file gets those its kernels call.
void emitWgmmaWrappers(const std::set<WgmmaShape> &shapes, CodeWriter &out);

} // namespace tkc::codegen
