#pragma once
// The element types a reduction ALU adds (nccl-tests' names: float, int32,
// half, bfloat16), their sizes, and how an ALU loads, computes and stores each.
//
// The two 16-bit floating-point types convert to and from float32 in plain
// C++ (no compiler _Float16):
// binary16 (IEEE 754-2008 §3.6: 1 sign, 5 exponent bits of bias 15, 10
// fraction bits; subnormals below 2^-14, exponent 31 for infinities and NaNs)
// and bfloat16 (the upper half of a float32: 1 sign, 8 exponent bits, 7
// fraction bits; Google, "bfloat16: the secret to high performance on Cloud
// TPUs", 2019, and Intel, "BFLOAT16 - Hardware Numerics Definition",
// 338302-001US, 2018). A 16-bit ALU (an NVSwitch's reduction, SHARP, a
// tensor-core epilogue) widens both operands to float32, which is exact,
// operates, and rounds back to nearest, ties to even (IEEE 754-2008 §4.3.1's
// default, and the rounding of Intel's BF16 conversion). A NaN stays a NaN
// (made quiet, sign and leading payload bits kept); a finite value beyond the
// largest finite one rounds to infinity. bfloat16 keeps subnormals, as CUDA's
// __float2bfloat16_rn does (Intel's BF16 instructions flush them); the data
// pattern's whole numbers never come near them.
#include <cstdint>
#include <cstring>
#include <string>

namespace incsim::elements {

// The order is the packets' dtype field: append only.
enum class DType { Float32, Int32, Float16, BFloat16 };
const char* dtype_name(DType t);
DType parse_dtype(const std::string& text);  // throws UserError
constexpr const char* kDTypes = "float, int32, half, bfloat16";  // also float32, int, float16, fp16, bf16
constexpr uint32_t dtype_bytes(DType t) { return t == DType::Float32 || t == DType::Int32 ? 4 : 2; }

inline uint32_t float_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}
inline float bits_float(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// binary16 to float32 computed (half_to_float, below, reads it from a table).
inline float half_to_float_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F, frac = h & 0x3FF;
  if (exp - 1 < 30) return bits_float(sign | (exp + 112) << 23 | frac << 13);  // normal: rebias 15 -> 127
  if (exp == 0x1F) return bits_float(sign | 0x7F800000 | frac << 13);         // infinity, NaN
  if (frac == 0) return bits_float(sign);
  // Subnormal: frac x 2^-24, normalised.
  uint32_t e = 113, m = frac;
  while (!(m & 0x400)) m <<= 1, --e;
  return bits_float(sign | e << 23 | (m & 0x3FF) << 13);
}

// The same from a table of all 65536 (256 KiB, built at start-up): the ALU's
// hot loop widens two elements per result, and a data pattern's few values
// keep their entries in cache.
struct HalfTable {
  float f[65536];
  HalfTable() {
    for (uint32_t h = 0; h < 65536; ++h) f[h] = half_to_float_bits(static_cast<uint16_t>(h));
  }
};
inline const HalfTable kHalfTable;
inline float half_to_float(uint16_t h) { return kHalfTable.f[h]; }

inline uint16_t float_to_half(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>(x >> 16 & 0x8000);
  const uint32_t ax = x & 0x7FFFFFFF;
  if (ax - 0x38800000 < 0x477FF000 - 0x38800000) {  // a normal binary16: [2^-14, 65520)
    // Rebias the exponent, add just under half a unit of the last place and
    // the last kept bit (so a tie rounds to even), truncate; a carry out of
    // the fraction correctly bumps the exponent.
    return sign | static_cast<uint16_t>((ax - 0x38000000 + 0xFFF + (ax >> 13 & 1)) >> 13);
  }
  if (ax > 0x7F800000) return sign | 0x7E00 | (ax >> 13 & 0x3FF);  // NaN, made quiet
  if (ax >= 0x477FF000) return sign | 0x7C00;  // 65520 and beyond (and infinity) round to infinity
  // Subnormal or zero: |f| / 2^-24 = m / 2^s with the implicit bit in m.
  const int s = 126 - static_cast<int>(ax >> 23);
  if (s > 24) return sign;  // below 2^-25 (and float subnormals): to zero
  const uint32_t m = (ax & 0x7FFFFF) | 0x800000;
  const uint32_t q = m >> s, rem = m & ((1u << s) - 1), halfway = 1u << (s - 1);
  return sign | static_cast<uint16_t>(q + (rem > halfway || (rem == halfway && (q & 1))));
}

inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

inline uint16_t float_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>(x >> 16 | 0x40);  // NaN, made quiet
  return static_cast<uint16_t>((x + 0x7FFF + (x >> 16 & 1)) >> 16);
}

// The whole number an element holds, or INT32_MIN if it holds none (the
// data pattern's values are whole numbers).
inline int32_t whole_number(int32_t v) { return v; }
inline int32_t whole_number(float f) {
  if (!(f > -2147483648.f && f < 2147483648.f)) return INT32_MIN;  // also NaN
  const int32_t v = static_cast<int32_t>(f);
  return static_cast<float>(v) == f ? v : INT32_MIN;
}

// How an ALU handles elements of each type: load widens an element to the
// type it computes in (T), store narrows a result back (rounding, for the
// 16-bit types).
template <class V>
struct Word32Elem {  // float32 and int32, computed as they are
  using T = V;
  static constexpr uint32_t kBytes = 4;
  static V load(const uint8_t* p) {
    V v;
    std::memcpy(&v, p, 4);
    return v;
  }
  static void store(uint8_t* p, V v) { std::memcpy(p, &v, 4); }
};
using Float32Elem = Word32Elem<float>;
using Int32Elem = Word32Elem<int32_t>;
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
struct Float16Elem {
  using T = float;
  static constexpr uint32_t kBytes = 2;
  static float load(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return Widen(h);
  }
  static void store(uint8_t* p, float f) {
    const uint16_t h = Narrow(f);
    std::memcpy(p, &h, 2);
  }
};
using HalfElem = Float16Elem<half_to_float, float_to_half>;
using BFloat16Elem = Float16Elem<bf16_to_float, float_to_bf16>;

// f(Elem{}) with the traits of type t: the switch on the type outside a
// caller's element loop.
template <class F>
decltype(auto) with_elements(DType t, F&& f) {
  switch (t) {
    case DType::Int32: return f(Int32Elem{});
    case DType::Float16: return f(HalfElem{});
    case DType::BFloat16: return f(BFloat16Elem{});
    default: return f(Float32Elem{});
  }
}

}  // namespace incsim::elements
