#pragma once
#include "ir/IR.h"

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace tkc::interp {

/// A global tensor's contents, row-major, held in double precision but
/// rounded to the tensor's element type whenever it is written.
struct Tensor {
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> dims;
  std::vector<double> data;
};

/// Runs a kernel on the CPU with the reference semantics of the tile IR:
/// every block of the grid runs the body once, in order; tiles are dense
/// block-wide arrays whatever their layout; asynchronous copies complete at
/// once, barriers and waits do nothing. Arithmetic is done in double and
/// rounded to each result's element type, so that two versions of a kernel
/// that compute the same function agree up to reassociation.
class Interpreter {
public:
  /// `tensors` are the kernel's global parameters in order; scalar
  /// parameters are taken from the dims of the tensors that name them.
  /// Returns an error message, or nothing on success.
  std::optional<std::string> run(const ir::Kernel &kernel, std::vector<Tensor> &tensors);
};

/// Rounds to the nearest value of `dtype` (ties to even for bf16 and f16).
double roundTo(ir::DType dtype, double value);

} // namespace tkc::interp
