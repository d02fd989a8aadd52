// tkc integer semantics: the one definition of the language's integer
// division, remainder, ceiling division, minimum, maximum and absolute
// value. Generated kernels and launchers call these; the compiler's
// constant folder, its front end and its interpreter include this header
// too, so a value computed at compile time, in the interpreter and on the
// GPU is the same. Plain C++17 without CUDA as well.
#ifndef TKC_INT_H
#define TKC_INT_H
#include <type_traits>

#if defined(__CUDACC__)
#define TKC_INT_FN __host__ __device__ __forceinline__ constexpr
#else
#define TKC_INT_FN inline constexpr
#endif

namespace tkc {

/// -a, wrapping where it does not fit (the most negative value is its own
/// negation) instead of overflowing.
template <class T> TKC_INT_FN T wrapping_neg(T a) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(0) - static_cast<U>(a));
}

/// a / b rounded toward zero (as in C++). Division by zero yields 0, and the
/// most negative value divided by -1 wraps to itself.
template <class T> TKC_INT_FN T div(T a, T b) {
  return b == 0 ? T(0) : b == T(-1) ? wrapping_neg(a) : a / b;
}

/// The remainder of div: a - div(a, b) * b, which has the sign of a. By zero
/// it is a, so that the identity holds for every b.
template <class T> TKC_INT_FN T rem(T a, T b) { return b == 0 ? a : b == T(-1) ? T(0) : a % b; }

/// The ceiling of the exact quotient a / b for operands of any sign (0 when
/// b is 0): the truncated quotient, 1 more where it was rounded down (a
/// positive quotient with a remainder). Unlike `(a + b - 1) / b`, it cannot
/// overflow.
template <class T> TKC_INT_FN T cdiv(T a, T b) {
  bool roundedDown = b != 0 && rem(a, b) != 0 && ((a < 0) == (b < 0));
  return static_cast<T>(div(a, b) + T(roundedDown));
}

template <class T> TKC_INT_FN T min(T a, T b) { return b < a ? b : a; }
template <class T> TKC_INT_FN T max(T a, T b) { return a < b ? b : a; }

/// |a|, wrapping for the most negative value.
template <class T> TKC_INT_FN T abs(T a) { return a < 0 ? wrapping_neg(a) : a; }

} // namespace tkc

#undef TKC_INT_FN
#endif
