#include "data_pattern.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace incsim::elements {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Int32: return "int32";
    case DType::Float16: return "half";
    case DType::BFloat16: return "bfloat16";
    default: return "float";
  }
}

DType parse_dtype(const std::string& text) {
  if (text == "float" || text == "float32") return DType::Float32;
  if (text == "int32" || text == "int") return DType::Int32;
  if (text == "half" || text == "float16" || text == "fp16") return DType::Float16;
  if (text == "bfloat16" || text == "bf16") return DType::BFloat16;
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
// The type and the operator are fixed outside the element loop.
template <RedOp kOp, class E>
void reduce_as(uint8_t* acc, const uint8_t* in, uint32_t bytes) {
  for (uint32_t i = 0; i < bytes; i += E::kBytes) E::store(acc + i, reduce(kOp, E::load(acc + i), E::load(in + i)));
}
}  // namespace

void reduce_bytes(DType t, RedOp op, uint8_t* acc, const uint8_t* in, uint32_t bytes) {
  with_elements(t, [&](auto e) {
    using E = decltype(e);
    switch (op) {
      case RedOp::Min: return reduce_as<RedOp::Min, E>(acc, in, bytes);
      case RedOp::Max: return reduce_as<RedOp::Max, E>(acc, in, bytes);
      default: return reduce_as<RedOp::Sum, E>(acc, in, bytes);
    }
  });
}

// The remainders in 32-bit lanes, which vectorize (64-bit division does
// not): 2^16 and 2^32 are 1 modulo 3, and 88 and 68 modulo 101, so folding
// h's 16- and 32-bit parts with those weights keeps each remainder and
// leaves a number below 2^31. The AVX2 clone does four hashes at a time
// (its 64-bit multiplies from 32-bit ones), the x86-64-v4 clone eight with
// AVX-512's 64-bit multiply (a quarter less time; valgrind offers no
// AVX-512, so cachegrind counts the AVX2 clone); test_data_pattern checks
// the remainders against h % 3 and (h >> 8) % 101.
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default"))) void pattern_keys(
    uint64_t seed, uint64_t first, uint32_t n, uint8_t* s_index, uint8_t* b_index) {
  for (uint32_t k = 0; k < n; ++k) {
    const uint64_t h = splitmix64(seed ^ (first + k));
    const auto lo = static_cast<uint32_t>(h), hi = static_cast<uint32_t>(h >> 32);
    s_index[k] = static_cast<uint8_t>(((lo & 0xFFFF) + (lo >> 16) + (hi & 0xFFFF) + (hi >> 16)) % 3);
    const uint64_t g = h >> 8;  // 56 bits: g2 * 2^32 + g1 * 2^16 + g0
    const auto g0 = static_cast<uint32_t>(g) & 0xFFFF, g1 = static_cast<uint32_t>(g) >> 16,
               g2 = static_cast<uint32_t>(g >> 32);
    b_index[k] = static_cast<uint8_t>((g2 * 68 + g1 * 88 + g0) % 101);
  }
}

DataPattern::Coefficients DataPattern::reference(RedOp op, int owner) const {
  if (owner >= 0) return {a_[owner], 1};
  switch (op) {
    case RedOp::Min: return {a_min_, 1};
    case RedOp::Max: return {a_max_, 1};
    default: return {a_sum_, static_cast<int32_t>(a_.size())};
  }
}

void DataPattern::fill(DType t, int rank, uint64_t first, uint64_t n, uint8_t* out) const {
  with_elements(t, [&](auto e) {
    using E = decltype(e);
    each({a_[rank], 1}, first, n,
         [out](uint64_t k, int32_t v) { E::store(out + k * E::kBytes, static_cast<typename E::T>(v)); });
  });
}

void DataPattern::reduce_own(DType t, RedOp op, int rank, uint64_t first, uint64_t n, uint8_t* out) const {
  constexpr uint64_t kStep = 256;
  const uint32_t size = dtype_bytes(t);
  uint8_t own[kStep * 4];
  for (uint64_t done = 0; done < n; done += kStep) {
    const uint64_t m = std::min(kStep, n - done);
    fill(t, rank, first + done, m, own);
    reduce_bytes(t, op, out + done * size, own, static_cast<uint32_t>(m * size));
  }
}

uint64_t DataPattern::mismatches(DType t, RedOp op, const uint8_t* bytes, uint64_t first, uint64_t n,
                                 int owner) const {
  return with_elements(t, [&](auto e) {
    using E = decltype(e);
    uint64_t wrong = 0;
    each(reference(op, owner), first, n,
         [&wrong, bytes](uint64_t k, int32_t v) { wrong += whole_number(E::load(bytes + k * E::kBytes)) != v; });
    return wrong;
  });
}

DataPattern::DataPattern(uint64_t seed, int ranks, DType t, RedOp op) : seed_(mix(seed)) {
  int32_t m = 200;  // the bound on |f| (data_pattern.h)
  if ((t == DType::Float16 || t == DType::BFloat16) && op == RedOp::Sum) {
    const int32_t exact = t == DType::Float16 ? 2048 : 256;  // 2^p: every whole number up to it is exact
    m = std::min<int32_t>(m, (exact - 1) / std::max(ranks, 1));
    if (m == 0)
      throw UserError(std::string("--dtype ") + dtype_name(t) + " cannot sum " + std::to_string(ranks) +
                      " ranks exactly (it holds every whole number only up to " + std::to_string(exact) +
                      "), so its results could not be checked; use at most " + std::to_string(exact - 1) +
                      " ranks or --dtype float");
  }
  const int32_t a = std::max(1, m / 4), b = m / 4, s = std::min(3, (m - b) / a);
  for (int k = 0; k < 3; ++k) s_[k] = 1 + k * (s - 1) / 2;
  for (int k = 0; k < 101; ++k) b_[k] = (k - 50) * b / 50;
  for (int r = 0; r < ranks; ++r) {
    a_.push_back(1 + static_cast<int32_t>(mix(seed_ + 0x5851F42D4C957F2Dull * (r + 1)) % static_cast<uint64_t>(a)));
    a_sum_ += a_.back();
    a_min_ = r == 0 ? a_.back() : std::min(a_min_, a_.back());
    a_max_ = r == 0 ? a_.back() : std::max(a_max_, a_.back());
  }
}

}  // namespace incsim::elements
