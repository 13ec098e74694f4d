#pragma once
// Real input data for collectives, and the reference result.
//
// Element i of rank r holds f(r, i) = a(r) * s(i) + b(i) with a(r) in [1, A],
// s(i) in [1, S] and b(i) in [-B, B], all hashed from the seed. Every rank's
// contribution differs and no index pattern repeats, so a lost, doubled or
// misplaced contribution changes the result; yet the reference has a closed
// form (sum = s(i) * sum_r a(r) + n * b(i); since s(i) > 0, min and max are
// s(i) * min_r a(r) + b(i) and likewise), so checking costs O(1) per element
// and nothing of size message x ranks is stored.
//
// The result must be exact in whatever order the hardware adds, so every
// partial sum must be a whole number the type represents: |f| <= M with
// n * M < 2^p, where a float type of p significant bits holds every whole
// number up to 2^p (float32 2^24, half 2^11 = 2048, bfloat16 2^8 = 256).
// The strict bound keeps a result plus one (an injected fault) exact too.
// float32 and int32 take M = 200 (A = 50, S = 3, B = 50: exact up to 83886
// ranks), and so do min and max in every type (they add nothing). half and
// bfloat16 sums take M = min(200, (2^p - 1) / n), A = max(1, M / 4),
// B = M / 4 and S = min(3, (M - B) / A): M = 127 for half on 16 ranks, 15
// for bfloat16 on 16, 3 for bfloat16 on 64 (a(r) = 1 there: the check still
// sees a lost or doubled contribution, no longer one from the wrong rank). A
// bfloat16 sum over 256 ranks or more, or a half one over 2048 or more,
// cannot be checked exactly and is refused.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/hash.h"
#include "elements.h"

namespace incsim::elements {

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
// `bytes` of elements of type t (dtype_bytes(t) each), a 16-bit float
// computed in float32 and rounded back (elements.h).
void reduce_bytes(DType t, RedOp op, uint8_t* acc, const uint8_t* in, uint32_t bytes);

// For element first + k, k in [0, n): h = splitmix64(seed ^ (first + k)),
// s_index[k] = h % 3 and b_index[k] = (h >> 8) % 101 (DataPattern::s and b).
void pattern_keys(uint64_t seed, uint64_t first, uint32_t n, uint8_t* s_index, uint8_t* b_index);

class DataPattern {
 public:
  // Values for reductions under op of elements of type t (see above; min
  // and max are exact with M = 200 in every type); throws UserError if sums
  // of that many ranks cannot be exact in t.
  DataPattern(uint64_t seed, int ranks, DType t = DType::Float32, RedOp op = RedOp::Sum);
  int32_t value(int rank, uint64_t i) const { return form(a_[rank], 1, mix(seed_ ^ i)); }
  // Writes rank's elements [first, first + n) as type t (dtype_bytes(t) each).
  void fill(DType t, int rank, uint64_t first, uint64_t n, uint8_t* out) const;
  // out[i] = op(out[i], rank's element first + i): a rank adding its own data.
  void reduce_own(DType t, RedOp op, int rank, uint64_t first, uint64_t n, uint8_t* out) const;
  // How many of the n elements at bytes (type t, global indices from first)
  // differ from the reference: the reduction under op or, for owner >= 0,
  // rank owner's input. A float that is not a whole number never matches.
  uint64_t mismatches(DType t, RedOp op, const uint8_t* bytes, uint64_t first, uint64_t n, int owner) const;
  // The reduction of element i over all ranks.
  int32_t reduced(RedOp op, uint64_t i) const {
    const Coefficients c = reference(op, -1);
    return form(c.a, c.nb, mix(seed_ ^ i));
  }

 private:
  static uint64_t mix(uint64_t x) { return splitmix64(x); }
  // s and b of an element from its hash: 3 and 101 values, scaled to the type's bound.
  int32_t s(uint64_t h) const { return s_[h % 3]; }
  int32_t b(uint64_t h) const { return b_[(h >> 8) % 101]; }
  // Every value and reference is a * s(i) + nb * b(i): rank r's input a(r)
  // and 1; the sum's sum_r a(r) and the rank count; min's and max's
  // min_r a(r) or max_r a(r) and 1.
  struct Coefficients {
    int32_t a, nb;
  };
  int32_t form(int32_t a, int32_t nb, uint64_t h) const { return a * s(h) + nb * b(h); }
  // The reduction under op or, for owner >= 0, rank owner's input.
  Coefficients reference(RedOp op, int owner) const;
  // f(k, form(c, element first + k)) for k in [0, n). Generating and
  // checking elements is a large share of a run: the hashes of a block of
  // elements are computed by pattern_keys, in vector registers where the
  // CPU has them.
  template <class F>
  void each(Coefficients c, uint64_t first, uint64_t n, F&& f) const {
    constexpr uint32_t kBlock = 64;
    uint8_t si[kBlock], bi[kBlock];
    for (uint64_t done = 0; done < n; done += kBlock) {
      const uint32_t m = static_cast<uint32_t>(std::min<uint64_t>(kBlock, n - done));
      pattern_keys(seed_, first + done, m, si, bi);
      for (uint32_t k = 0; k < m; ++k) f(done + k, c.a * s_[si[k]] + c.nb * b_[bi[k]]);
    }
  }
  uint64_t seed_;
  int32_t s_[3];
  int32_t b_[101];
  std::vector<int32_t> a_;
  int32_t a_sum_ = 0, a_min_ = 0, a_max_ = 0;
};

}  // namespace incsim::elements
