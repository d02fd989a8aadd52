// Global tensors as files, so that another implementation of a kernel (the
// CUDA tkc emits, run on a GPU) can be given the same inputs and compared
// with the interpreter's outputs.
//
// A folder holds NAME.bin per tensor, the raw little-endian elements of its
// element type in row-major order (bf16 and f16 as their 16-bit patterns),
// and tensors.json, which lists each tensor's name, element type, sizes and
// whether it is an output.
#pragma once
#include "interp/Interpreter.h"

#include <string>
#include <vector>

namespace tkc::interp {

struct NamedTensor {
  std::string name;
  bool isOutput = false;
  Tensor *tensor = nullptr;
};

/// Fills each tensor (whose dtype and dims are set) from DIR/NAME.bin.
/// Returns an error message, empty on success.
std::string readTensors(const std::string &dir, const std::vector<NamedTensor> &tensors);

/// Writes DIR/NAME.bin of each tensor and DIR/tensors.json, creating DIR.
std::string writeTensors(const std::string &dir, const std::string &kernel, const std::vector<NamedTensor> &tensors);

} // namespace tkc::interp
