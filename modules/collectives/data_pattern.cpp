#include "data_pattern.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace incsim::collectives {

const char* dtype_name(DType t) { return t == DType::Float32 ? "float" : "int32"; }

DType parse_dtype(const std::string& text) {
  if (text == "float" || text == "float32") return DType::Float32;
  if (text == "int32" || text == "int") return DType::Int32;
  throw UserError("unknown data type '" + text + "'; choose one of " + kDTypes);
}

const char* redop_name(RedOp op) { return op == RedOp::Sum ? "sum" : op == RedOp::Min ? "min" : "max"; }

RedOp parse_redop(const std::string& text) {
  if (text == "sum") return RedOp::Sum;
  if (text == "min") return RedOp::Min;
  if (text == "max") return RedOp::Max;
  throw UserError("unknown reduction operator '" + text + "'; choose one of " + kRedOps);
}

namespace {
template <class T>
void reduce_as(RedOp op, uint8_t* acc, const uint8_t* in, uint32_t bytes) {
  for (uint32_t i = 0; i < bytes; i += sizeof(T)) {
    T a, b;
    std::memcpy(&a, acc + i, sizeof(T));
    std::memcpy(&b, in + i, sizeof(T));
    a = reduce(op, a, b);
    std::memcpy(acc + i, &a, sizeof(T));
  }
}
}  // namespace

void reduce_bytes(DType t, RedOp op, uint8_t* acc, const uint8_t* in, uint32_t bytes) {
  if (t == DType::Float32) reduce_as<float>(op, acc, in, bytes);
  else reduce_as<int32_t>(op, acc, in, bytes);
}

DataPattern::DataPattern(uint64_t seed, int ranks) : seed_(mix(seed)) {
  for (int r = 0; r < ranks; ++r) {
    a_.push_back(1 + static_cast<int32_t>(mix(seed_ + 0x5851F42D4C957F2Dull * (r + 1)) % 50));
    a_sum_ += a_.back();
    a_min_ = r == 0 ? a_.back() : std::min(a_min_, a_.back());
    a_max_ = r == 0 ? a_.back() : std::max(a_max_, a_.back());
  }
}

}  // namespace incsim::collectives
