#include "TensorFiles.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <cstring>

namespace tkc::interp {
namespace {

using ir::DType;

size_t elementBytes(DType dtype) { return static_cast<size_t>(ir::dtypeBytes(dtype)); }

uint32_t floatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

float bitsFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// The binary16 pattern of a value that binary16 holds exactly (the
/// interpreter rounds every f16 it writes); larger ones become infinity.
uint16_t halfBits(double value) {
  uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  double magnitude = std::fabs(value);
  if (std::isnan(value))
    return 0x7e00;
  if (magnitude > 65504)
    return sign | 0x7c00;
  // (A mantissa that rounds up to 2^11 carries into the exponent, and a
  // subnormal that rounds up to 2^10 becomes the smallest normal.)
  if (magnitude < std::ldexp(1.0, -14)) // subnormal: units of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(magnitude, 24)));
  int exponent = std::ilogb(magnitude);
  auto mantissa = static_cast<int>(std::nearbyint(std::ldexp(magnitude, 10 - exponent)));
  return sign | static_cast<uint16_t>(((exponent + 15) << 10) + mantissa - 1024);
}

double halfValue(uint16_t bits) {
  double sign = bits & 0x8000 ? -1 : 1;
  int exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  if (exponent == 0x1f)
    return mantissa ? NAN : sign * INFINITY;
  if (exponent == 0)
    return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

/// An 8-bit float's fields: explicit mantissa bits and exponent bias.
struct F8Format {
  int mantissa, bias;
  bool e4m3;
};
F8Format f8Format(DType dtype) { return dtype == DType::F8E4M3 ? F8Format{3, 7, true} : F8Format{2, 15, false}; }

/// The 8-bit pattern of a value the format holds exactly (the interpreter
/// rounds every 8-bit float it writes); infinity is E5M2's own, E4M3's
/// largest finite value.
uint8_t f8Bits(DType dtype, double value) {
  F8Format f = f8Format(dtype);
  uint8_t sign = std::signbit(value) ? 0x80 : 0;
  double magnitude = std::fabs(value);
  if (std::isnan(value))
    return 0x7f;
  if (std::isinf(value))
    return sign | (f.e4m3 ? 0x7e : 0x7c);
  int minExponent = 1 - f.bias;
  if (magnitude < std::ldexp(1.0, minExponent)) // subnormal
    return sign | static_cast<uint8_t>(std::nearbyint(std::ldexp(magnitude, f.mantissa - minExponent)));
  int exponent = std::ilogb(magnitude);
  auto mantissa = static_cast<int>(std::nearbyint(std::ldexp(magnitude, f.mantissa - exponent))) - (1 << f.mantissa);
  return sign | static_cast<uint8_t>(((exponent + f.bias) << f.mantissa) + mantissa);
}

double f8Value(DType dtype, uint8_t bits) {
  F8Format f = f8Format(dtype);
  double sign = bits & 0x80 ? -1 : 1;
  int exponent = (bits & 0x7f) >> f.mantissa, mantissa = bits & ((1 << f.mantissa) - 1);
  int maxExponent = (1 << (7 - f.mantissa)) - 1;
  if (f.e4m3 && exponent == maxExponent && mantissa == 7)
    return NAN;
  if (!f.e4m3 && exponent == maxExponent)
    return mantissa ? NAN : sign * INFINITY;
  if (exponent == 0)
    return sign * std::ldexp(mantissa, 1 - f.bias - f.mantissa);
  return sign * std::ldexp(mantissa + (1 << f.mantissa), exponent - f.bias - f.mantissa);
}

void encode(DType dtype, double value, char *out) {
  uint32_t word = 0;
  switch (dtype) {
  case DType::BF16: word = floatBits(static_cast<float>(value)) >> 16; break;
  case DType::F16: word = halfBits(value); break;
  case DType::F32: word = floatBits(static_cast<float>(value)); break;
  case DType::F8E4M3:
  case DType::F8E5M2: word = f8Bits(dtype, value); break;
  default: word = static_cast<uint32_t>(static_cast<int32_t>(value)); break;
  }
  for (size_t i = 0; i < elementBytes(dtype); ++i)
    out[i] = static_cast<char>((word >> (8 * i)) & 0xff);
}

double decode(DType dtype, const unsigned char *in) {
  uint32_t word = 0;
  for (size_t i = 0; i < elementBytes(dtype); ++i)
    word |= static_cast<uint32_t>(in[i]) << (8 * i);
  switch (dtype) {
  case DType::BF16: return bitsFloat(word << 16);
  case DType::F16: return halfValue(static_cast<uint16_t>(word));
  case DType::F32: return bitsFloat(word);
  case DType::F8E4M3:
  case DType::F8E5M2: return f8Value(dtype, static_cast<uint8_t>(word));
  default: return static_cast<int32_t>(word);
  }
}

std::string fileOf(const std::string &dir, const std::string &name) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name + ".bin");
  return std::string(path);
}

} // namespace

std::string readTensors(const std::string &dir, const std::vector<NamedTensor> &tensors) {
  for (const NamedTensor &named : tensors) {
    Tensor &t = *named.tensor;
    std::string path = fileOf(dir, named.name);
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
    if (!buffer)
      return "cannot read " + path + ": " + buffer.getError().message();
    size_t bytes = t.data.size() * elementBytes(t.dtype);
    if ((*buffer)->getBufferSize() != bytes)
      return path + " holds " + std::to_string((*buffer)->getBufferSize()) + " bytes, not the " +
             std::to_string(bytes) + " of " + named.name + "'s sizes";
    auto *data = reinterpret_cast<const unsigned char *>((*buffer)->getBufferStart());
    for (size_t i = 0; i < t.data.size(); ++i)
      t.data[i] = decode(t.dtype, data + i * elementBytes(t.dtype));
  }
  return "";
}

std::string writeTensors(const std::string &dir, const std::string &kernel, const std::vector<NamedTensor> &tensors) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return "cannot create " + dir + ": " + ec.message();
  std::string json = "{\"kernel\": \"" + kernel + "\", \"tensors\": [";
  for (size_t n = 0; n < tensors.size(); ++n) {
    const Tensor &t = *tensors[n].tensor;
    std::string path = fileOf(dir, tensors[n].name);
    std::error_code ec;
    llvm::raw_fd_ostream out(path, ec);
    if (ec)
      return "cannot write " + path + ": " + ec.message();
    std::string bytes(t.data.size() * elementBytes(t.dtype), '\0');
    for (size_t i = 0; i < t.data.size(); ++i)
      encode(t.dtype, t.data[i], &bytes[i * elementBytes(t.dtype)]);
    out << bytes;
    std::string dims;
    for (int64_t d : t.dims)
      dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    json += std::string(n ? ", " : "") + "\n  {\"name\": \"" + tensors[n].name + "\", \"dtype\": \"" +
            ir::dtypeName(t.dtype) + "\", \"dims\": [" + dims + "], \"out\": " +
            (tensors[n].isOutput ? "true" : "false") + "}";
  }
  json += "\n]}\n";
  std::error_code ec;
  llvm::raw_fd_ostream out(dir + "/tensors.json", ec);
  if (ec)
    return "cannot write " + dir + "/tensors.json: " + ec.message();
  out << json;
  return "";
}

} // namespace tkc::interp
