#pragma once
// Real input data for collectives, and the reference result.
//
// Element i of rank r holds f(r, i) = a(r) * s(i) + b(i) with a(r) in [1, 50],
// s(i) in [1, 3] and b(i) in [-50, 50], all hashed from the seed. Every rank's
// contribution differs and no index pattern repeats, so a lost, doubled or
// misplaced contribution changes the result; yet the reference has a closed
// form (sum = s(i) * sum_r a(r) + n * b(i); since s(i) > 0, min and max are
// s(i) * min_r a(r) + b(i) and likewise), so checking costs O(1) per element
// and nothing of size message x ranks is stored. |f| <= 200 keeps every
// partial sum of up to 2^16 ranks exact in float32, whatever the order.
#include <cstdint>
#include <string>
#include <vector>

#include "core/hash.h"

namespace incsim::collectives {

enum class DType { Float32, Int32 };
const char* dtype_name(DType t);
DType parse_dtype(const std::string& text);  // throws UserError
constexpr const char* kDTypes = "float, int32";

// Reduction operators (nccl-tests -o; Klenk §IV-D: sum, min, max).
enum class RedOp { Sum, Min, Max };
const char* redop_name(RedOp op);
RedOp parse_redop(const std::string& text);  // throws UserError
constexpr const char* kRedOps = "sum, min, max";
template <class T>
T reduce(RedOp op, T a, T b) {
  return op == RedOp::Sum ? a + b : op == RedOp::Min ? (b < a ? b : a) : (b > a ? b : a);
}

// The ALU of a reduction table or endpoint: acc[i] = op(acc[i], in[i]) over
// `bytes` of 4-byte elements of type t.
void reduce_bytes(DType t, RedOp op, uint8_t* acc, const uint8_t* in, uint32_t bytes);

class DataPattern {
 public:
  DataPattern(uint64_t seed, int ranks);
  int32_t value(int rank, uint64_t i) const {
    const uint64_t h = mix(seed_ ^ i);
    return a_[rank] * s(h) + b(h);
  }
  // Writes rank's elements [first, first + n) as type t (4 bytes each).
  void fill(DType t, int rank, uint64_t first, uint64_t n, uint8_t* out) const;
  // out[i] = op(out[i], rank's element first + i): a rank adding its own data.
  void reduce_own(DType t, RedOp op, int rank, uint64_t first, uint64_t n, uint8_t* out) const;
  // How many of the n elements at bytes (type t, global indices from first)
  // differ from the reference: the reduction under op or, for owner >= 0,
  // rank owner's input. A float that is not a whole number never matches.
  uint64_t mismatches(DType t, RedOp op, const uint8_t* bytes, uint64_t first, uint64_t n, int owner) const;
  // The reduction of element i over all ranks.
  int32_t reduced(RedOp op, uint64_t i) const {
    const uint64_t h = mix(seed_ ^ i);
    switch (op) {
      case RedOp::Min: return a_min_ * s(h) + b(h);
      case RedOp::Max: return a_max_ * s(h) + b(h);
      default: return a_sum_ * s(h) + static_cast<int32_t>(a_.size()) * b(h);
    }
  }

 private:
  static uint64_t mix(uint64_t x) { return splitmix64(x); }
  // s and b of an element from its hash.
  static int32_t s(uint64_t h) { return 1 + static_cast<int32_t>(h % 3); }
  static int32_t b(uint64_t h) { return static_cast<int32_t>((h >> 8) % 101) - 50; }
  uint64_t seed_;
  std::vector<int32_t> a_;
  int32_t a_sum_ = 0, a_min_ = 0, a_max_ = 0;
};

}  // namespace incsim::collectives
