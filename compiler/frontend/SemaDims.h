#pragma once
// Derived dims of parameter lists (`dWp: out f32[cdiv(R, 32), D]`).
#include "frontend/AST.h"
#include "frontend/Sema.h"
#include "support/Diagnostics.h"

#include <optional>

namespace tkc::sema {

/// Checks every derived dim of the kernel's parameters: each name is a dim
/// that some parameter has alone (in any position of the list: the
/// launcher reads every size before it checks) or a `where NAME in {...}`
/// value; no divisor is zero; the value cannot be negative.
void checkDerivedDims(const ast::Kernel &kernel, DiagnosticEngine &diags);

/// A dim's size under a specialisation, where it is a compile-time value:
/// a literal, a `where` value, or an expression of them.
std::optional<int64_t> staticDimSize(const ast::Dim &dim, const Specialization &specialization);

/// How a dim is written: `M`, `64`, `cdiv(M, 64)`.
std::string dimText(const ast::Dim &dim);

} // namespace tkc::sema
