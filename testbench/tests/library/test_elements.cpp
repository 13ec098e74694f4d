// The 16-bit element types (elements.h): conversions against known bit
// patterns (IEEE 754-2008 binary16; bfloat16, the upper half of a float32)
// with ties to even, subnormals, infinities and NaNs; the ALU's reduction of
// each operator on them, rounded back; the data pattern's exactness bound;
// and a fault in a 16-bit ALU counted exactly, up to the largest rank count.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "elements/alu.h"
#include "elements/data_pattern.h"
#include "core/error.h"

using namespace incsim::elements;

namespace {
const float kInf = std::numeric_limits<float>::infinity();
float pow2(int e) { return std::ldexp(1.0f, e); }

std::vector<uint8_t> as_bytes(DType t, const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = t == DType::Float16 ? float_to_half(v[i]) : float_to_bf16(v[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}
std::vector<float> as_floats(DType t, const std::vector<uint8_t>& b) {
  std::vector<float> out(b.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, b.data() + 2 * i, 2);
    out[i] = t == DType::Float16 ? half_to_float(h) : bf16_to_float(h);
  }
  return out;
}
std::vector<float> reduced(DType t, RedOp op, const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<uint8_t> acc = as_bytes(t, a);
  const std::vector<uint8_t> in = as_bytes(t, b);
  reduce_bytes(t, op, acc.data(), in.data(), static_cast<uint32_t>(acc.size()));
  return as_floats(t, acc);
}
}  // namespace

TEST_CASE("half: float32 to binary16 bit patterns, rounding to nearest even", "[elements]") {
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(-2.0f) == 0xC000);
  CHECK(float_to_half(0.0f) == 0x0000);
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(float_to_half(0.1f) == 0x2E66);
  CHECK(float_to_half(1.0f / 3) == 0x3555);
  CHECK(float_to_half(65504.0f) == 0x7BFF);  // the largest finite
  CHECK(float_to_half(2048.0f) == 0x6800);
  CHECK(float_to_half(2050.0f) == 0x6801);
  // Ties go to the even significand; anything past a tie rounds up.
  CHECK(float_to_half(2049.0f) == 0x6800);
  CHECK(float_to_half(2051.0f) == 0x6802);
  CHECK(float_to_half(1 + pow2(-11)) == 0x3C00);
  CHECK(float_to_half(1 + 3 * pow2(-11)) == 0x3C02);
  CHECK(float_to_half(std::nextafter(1 + pow2(-11), 2.0f)) == 0x3C01);
  CHECK(float_to_half(std::nextafter(1 + pow2(-11), 0.0f)) == 0x3C00);
  // Overflow: 65520 (half-way to 2^16) and beyond round to infinity.
  CHECK(float_to_half(std::nextafter(65520.0f, 0.0f)) == 0x7BFF);
  CHECK(float_to_half(65520.0f) == 0x7C00);
  CHECK(float_to_half(1e10f) == 0x7C00);
  CHECK(float_to_half(kInf) == 0x7C00);
  CHECK(float_to_half(-kInf) == 0xFC00);
  // Subnormals: multiples of 2^-24 below 2^-14, ties to even.
  CHECK(float_to_half(pow2(-14)) == 0x0400);  // the smallest normal
  CHECK(float_to_half(1023 * pow2(-24)) == 0x03FF);
  CHECK(float_to_half(pow2(-24)) == 0x0001);
  CHECK(float_to_half(-pow2(-24)) == 0x8001);
  CHECK(float_to_half(pow2(-25)) == 0x0000);                         // a tie: to 0, even
  CHECK(float_to_half(std::nextafter(pow2(-25), 1.0f)) == 0x0001);  // past it: up
  CHECK(float_to_half(3 * pow2(-25)) == 0x0002);                     // 1.5 ulp: to 2, even
  CHECK(float_to_half(5 * pow2(-25)) == 0x0002);                     // 2.5 ulp: to 2, even
  CHECK(float_to_half(2047 * pow2(-25)) == 0x0400);                  // rounds up into the normals
  CHECK(float_to_half(pow2(-30)) == 0x0000);
  CHECK(float_to_half(1e-40f) == 0x0000);  // a float32 subnormal
  // A NaN stays a NaN, quiet, whatever its payload.
  const uint16_t qnan = float_to_half(std::numeric_limits<float>::quiet_NaN());
  CHECK((qnan & 0x7C00) == 0x7C00);
  CHECK((qnan & 0x0200) != 0);
  CHECK(float_to_half(bits_float(0x7F800001)) == 0x7E00);  // a signalling NaN whose payload truncates away
  CHECK(float_to_half(bits_float(0xFF802000)) == 0xFE01);
}

TEST_CASE("half: binary16 to float32, and every pattern round-trips", "[elements]") {
  CHECK(half_to_float(0x3C00) == 1.0f);
  CHECK(half_to_float(0xC000) == -2.0f);
  CHECK(half_to_float(0x7BFF) == 65504.0f);
  CHECK(half_to_float(0x0001) == pow2(-24));
  CHECK(half_to_float(0x03FF) == 1023 * pow2(-24));
  CHECK(half_to_float(0x0400) == pow2(-14));
  CHECK(half_to_float(0x8000) == 0.0f);
  CHECK(std::signbit(half_to_float(0x8000)));
  CHECK(half_to_float(0x7C00) == kInf);
  CHECK(half_to_float(0xFC00) == -kInf);
  CHECK(std::isnan(half_to_float(0x7E00)));
  CHECK(std::isnan(half_to_float(0x7C01)));
  uint32_t differ = 0;
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const uint16_t back = float_to_half(half_to_float(static_cast<uint16_t>(h)));
    const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
    differ += nan ? (back & 0x7E00) != 0x7E00 || (back & 0x8000) != (h & 0x8000) || (back & 0x1FF) != (h & 0x1FF)
                  : back != h;
  }
  CHECK(differ == 0);
}

TEST_CASE("bfloat16: float32 to bfloat16 bit patterns, rounding to nearest even", "[elements]") {
  CHECK(float_to_bf16(1.0f) == 0x3F80);
  CHECK(float_to_bf16(-2.0f) == 0xC000);
  CHECK(float_to_bf16(3.0f) == 0x4040);
  CHECK(float_to_bf16(-0.0f) == 0x8000);
  CHECK(float_to_bf16(256.0f) == 0x4380);
  CHECK(float_to_bf16(258.0f) == 0x4381);
  CHECK(float_to_bf16(257.0f) == 0x4380);  // a tie: even
  CHECK(float_to_bf16(259.0f) == 0x4382);  // a tie: even, up
  CHECK(float_to_bf16(1 + pow2(-8)) == 0x3F80);
  CHECK(float_to_bf16(1 + 3 * pow2(-8)) == 0x3F82);
  CHECK(float_to_bf16(std::nextafter(1 + pow2(-8), 2.0f)) == 0x3F81);
  CHECK(float_to_bf16(0.1f) == 0x3DCD);
  CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7F80);  // rounds to infinity
  CHECK(float_to_bf16(bits_float(0x7F7F7FFF)) == 0x7F7F);              // the largest finite, just
  CHECK(float_to_bf16(kInf) == 0x7F80);
  CHECK(float_to_bf16(-kInf) == 0xFF80);
  CHECK(float_to_bf16(bits_float(0x00040000)) == 0x0004);  // a subnormal, kept
  CHECK(float_to_bf16(bits_float(0x00008000)) == 0x0000);  // a subnormal tie: even
  CHECK(float_to_bf16(bits_float(0x00018000)) == 0x0002);
  CHECK(float_to_bf16(std::numeric_limits<float>::quiet_NaN()) == 0x7FC0);
  CHECK(float_to_bf16(bits_float(0x7F800001)) == 0x7FC0);  // not infinity: truncating would make it one
  CHECK(float_to_bf16(bits_float(0xFF810000)) == 0xFFC1);
}

TEST_CASE("bfloat16: to float32, and every pattern round-trips", "[elements]") {
  CHECK(bf16_to_float(0x3F80) == 1.0f);
  CHECK(bf16_to_float(0x4380) == 256.0f);
  CHECK(bf16_to_float(0x7F80) == kInf);
  CHECK(bf16_to_float(0x0001) == bits_float(0x00010000));
  CHECK(std::isnan(bf16_to_float(0x7FC0)));
  uint32_t differ = 0;
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const uint16_t back = float_to_bf16(bf16_to_float(static_cast<uint16_t>(h)));
    const bool nan = (h & 0x7F80) == 0x7F80 && (h & 0x7F);
    differ += nan ? back != (h | 0x40) : back != h;
  }
  CHECK(differ == 0);
}

TEST_CASE("names and sizes of the element types", "[elements]") {
  CHECK(parse_dtype("half") == DType::Float16);
  CHECK(parse_dtype("float16") == DType::Float16);
  CHECK(parse_dtype("fp16") == DType::Float16);
  CHECK(parse_dtype("bfloat16") == DType::BFloat16);
  CHECK(parse_dtype("bf16") == DType::BFloat16);
  CHECK(dtype_name(DType::Float16) == std::string("half"));
  CHECK(dtype_name(DType::BFloat16) == std::string("bfloat16"));
  CHECK(dtype_bytes(DType::Float16) == 2);
  CHECK(dtype_bytes(DType::BFloat16) == 2);
  CHECK(dtype_bytes(DType::Float32) == 4);
  CHECK(dtype_bytes(DType::Int32) == 4);
  CHECK_THROWS_AS(parse_dtype("fp8"), incsim::UserError);
}

TEST_CASE("reduce_bytes on half: each operator in float32, rounded back to nearest even", "[elements]") {
  const DType t = DType::Float16;
  CHECK(reduced(t, RedOp::Sum, {1, 2048, 2048, -3, 65504, 0.5f, 0.1f}, {2, 1, 3, 1.5f, 32, 0.25f, 0.2f}) ==
        std::vector<float>{3, 2048, 2052, -1.5f, kInf, 0.75f, half_to_float(0x34CC)});
  CHECK(reduced(t, RedOp::Min, {1, -2, kInf, pow2(-24)}, {2, -3, 5, 0}) == std::vector<float>{1, -3, 5, 0});
  CHECK(reduced(t, RedOp::Max, {1, -2, kInf, pow2(-24)}, {2, -3, 5, 0}) ==
        std::vector<float>{2, -2, kInf, pow2(-24)});
}

TEST_CASE("reduce_bytes on bfloat16: each operator in float32, rounded back to nearest even", "[elements]") {
  const DType t = DType::BFloat16;
  CHECK(reduced(t, RedOp::Sum, {1, 256, 256, 1, -3, 1e38f}, {2, 1, 3, pow2(-8), 1.5f, 3e38f}) ==
        std::vector<float>{3, 256, 260, 1, -1.5f, kInf});
  CHECK(reduced(t, RedOp::Min, {1, -2, -kInf, 258}, {2, -3, 5, 256}) == std::vector<float>{1, -3, -kInf, 256});
  CHECK(reduced(t, RedOp::Max, {1, -2, -kInf, 258}, {2, -3, 5, 256}) == std::vector<float>{2, -2, 5, 258});
}

TEST_CASE("the data pattern for 16-bit types: every partial sum exact, the rank bound refused beyond", "[elements]") {
  for (DType t : {DType::Float16, DType::BFloat16}) {
    const int32_t exact = t == DType::Float16 ? 2048 : 256;
    for (int ranks : {2, 5, 16, 64, 100, exact - 1}) {
      INFO(dtype_name(t) << " on " << ranks << " ranks");
      const DataPattern d(3, ranks, t);
      // The largest sum of magnitudes bounds every partial sum in any order;
      // one more (a fault) must stay exact too.
      int32_t worst = 0;
      for (uint64_t i = 0; i < 2000; ++i) {
        int32_t sum = 0;
        for (int r = 0; r < ranks; ++r) sum += std::abs(d.value(r, i));
        worst = std::max(worst, sum);
      }
      CHECK(worst < exact);
      CHECK(worst > 0);
    }
    CHECK_THROWS_AS(DataPattern(3, exact, t), incsim::UserError);
    // Min and max add nothing: any rank count, float32's values.
    const DataPattern most(3, exact, t, RedOp::Max);
    CHECK(most.value(exact - 1, 7) == DataPattern(3, exact).value(exact - 1, 7));
  }
  // float32 and int32 keep their values whatever the rank count.
  const DataPattern f(3, 4);
  CHECK(f.value(0, 7) == DataPattern(3, 4, DType::Int32).value(0, 7));
  CHECK(DataPattern(3, 5000).value(1, 9) != 0);
}

TEST_CASE("mismatches on 16-bit types: the ALU's sum is right, a value that is not whole never matches",
          "[elements][wrong]") {
  constexpr int kRanks = 16;
  constexpr uint64_t kFirst = 77, kCount = 300;
  for (DType t : {DType::Float16, DType::BFloat16})
    for (RedOp op : {RedOp::Sum, RedOp::Min, RedOp::Max}) {
      INFO(dtype_name(t) << " " << redop_name(op));
      const DataPattern d(9, kRanks, t, op);
      std::vector<uint8_t> acc(kCount * 2), in(kCount * 2);
      d.fill(t, kRanks - 1, kFirst, kCount, acc.data());  // from the last rank down: another order
      for (int r = kRanks - 1; r-- > 0;) {
        d.fill(t, r, kFirst, kCount, in.data());
        reduce_bytes(t, op, acc.data(), in.data(), static_cast<uint32_t>(acc.size()));
      }
      CHECK(d.mismatches(t, op, acc.data(), kFirst, kCount, -1) == 0);
      CHECK(d.mismatches(t, op, acc.data(), kFirst + 1, kCount, -1) > kCount / 2);
      const uint16_t half_unit = t == DType::Float16 ? 0x3800 : 0x3F00;  // 0.5
      std::memcpy(acc.data() + 2 * 5, &half_unit, 2);
      CHECK(d.mismatches(t, op, acc.data(), kFirst, kCount, -1) == 1);
    }
}

TEST_CASE("a fault in a 16-bit ALU adds 1 in the element's type and is counted exactly, up to the largest rank count",
          "[elements][wrong]") {
  constexpr uint64_t kCount = 200, kFaults = 37;
  for (DType t : {DType::Float16, DType::BFloat16})
    for (int ranks : {16, t == DType::Float16 ? 2047 : 255}) {
      INFO(dtype_name(t) << " on " << ranks << " ranks");
      const DataPattern d(5, ranks, t);
      Alu::inject("sw0.port3", kFaults);
      Alu alu("sw0.port3");
      Alu::check_matched();
      std::vector<uint8_t> acc(kCount * 2), in(kCount * 2);
      d.fill(t, 0, 0, kCount, acc.data());
      for (int r = 1; r + 1 < ranks; ++r) {
        d.fill(t, r, 0, kCount, in.data());
        reduce_bytes(t, RedOp::Sum, acc.data(), in.data(), static_cast<uint32_t>(acc.size()));
      }
      d.fill(t, ranks - 1, 0, kCount, in.data());
      alu.reduce(t, RedOp::Sum, acc.data(), in.data(), static_cast<uint32_t>(acc.size()));  // the last add
      CHECK(d.mismatches(t, RedOp::Sum, acc.data(), 0, kCount, -1) == kFaults);
      Alu::inject("", 0);
    }
}
