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

void DataPattern::fill(DType t, int rank, uint64_t first, uint64_t n, uint8_t* out) const {
  for (uint64_t i = 0; i < n; ++i) {
    const int32_t v = value(rank, first + i);
    if (t == DType::Float32) {
      const float f = static_cast<float>(v);
      std::memcpy(out + i * 4, &f, 4);
    } else {
      std::memcpy(out + i * 4, &v, 4);
    }
  }
}

void DataPattern::reduce_own(DType t, RedOp op, int rank, uint64_t first, uint64_t n, uint8_t* out) const {
  constexpr uint64_t kStep = 256;
  uint8_t own[kStep * 4];
  for (uint64_t done = 0; done < n; done += kStep) {
    const uint64_t m = std::min(kStep, n - done);
    fill(t, rank, first + done, m, own);
    reduce_bytes(t, op, out + done * 4, own, static_cast<uint32_t>(m * 4));
  }
}

uint64_t DataPattern::mismatches(DType t, RedOp op, const uint8_t* bytes, uint64_t first, uint64_t n,
                                 int owner) const {
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < n; ++i) {
    int32_t v;
    if (t == DType::Float32) {
      float f;
      std::memcpy(&f, bytes + i * 4, 4);
      v = static_cast<int32_t>(f);
      if (static_cast<float>(v) != f) v = INT32_MIN;
    } else {
      std::memcpy(&v, bytes + i * 4, 4);
    }
    wrong += v != (owner < 0 ? reduced(op, first + i) : value(owner, first + i));
  }
  return wrong;
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
