#pragma once
// SplitMix64 (Steele, Lea, Flood, OOPSLA 2014): a fast, well-mixed 64-bit
// hash of a counter, for the deterministic pseudo-random choices of the
// models (data patterns, issue orders, home ports, frame faults).
#include <cstdint>

namespace incsim {

constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

inline uint64_t splitmix64(uint64_t x) {
  x += kGoldenGamma;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace incsim
