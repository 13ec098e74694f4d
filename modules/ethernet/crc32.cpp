#include "crc32.h"

#include <zlib.h>
#if defined(__x86_64__)
#include <immintrin.h>
#define INCSIM_PCLMUL 1
#endif

namespace incsim::eth {

#ifdef INCSIM_PCLMUL
namespace {
// Carry-less multiplication folding (Gopal et al., "Fast CRC Computation for
// Generic Polynomials Using PCLMULQDQ Instruction", Intel, 2009): four 16-byte
// lanes are folded forward 64 bytes at a time, then into one, then reduced
// to 32 bits by Barrett's method. The constants are x^k mod P for the
// reflected polynomial: k = 4*128+32 and 4*128-32 (64-byte fold), 128+32 and
// 128-32 (16-byte fold), 64 (the last 64 bits), and P with its Barrett
// quotient floor(x^64 / P). zlib's table-driven crc32 takes about 4
// instructions a byte; this takes about 0.3. The NetReduce path computes an
// ICRC four times per frame (the sender seals it, the FPGA checks, reseals
// the sum, the receiver checks), a quarter of its run's instructions before.
__attribute__((target("pclmul"))) inline __m128i fold16(__m128i x, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}
inline __m128i load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// The CRC register (not inverted) after `len` bytes, len >= 64 and a multiple of 16.
__attribute__((target("pclmul,sse4.1"))) uint32_t fold(uint32_t reg, const uint8_t* p, size_t len) {
  const __m128i k64 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
  const __m128i k16 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
  const __m128i k_last = _mm_set_epi64x(0, 0x163cd6124);
  const __m128i barrett = _mm_set_epi64x(0x1f7011641, 0x1db710641);
  const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
  __m128i x1 = _mm_xor_si128(load16(p), _mm_cvtsi32_si128(static_cast<int>(reg)));
  __m128i x2 = load16(p + 16), x3 = load16(p + 32), x4 = load16(p + 48);
  for (p += 64, len -= 64; len >= 64; p += 64, len -= 64) {
    x1 = _mm_xor_si128(fold16(x1, k64), load16(p));
    x2 = _mm_xor_si128(fold16(x2, k64), load16(p + 16));
    x3 = _mm_xor_si128(fold16(x3, k64), load16(p + 32));
    x4 = _mm_xor_si128(fold16(x4, k64), load16(p + 48));
  }
  x1 = _mm_xor_si128(fold16(x1, k16), x2);
  x1 = _mm_xor_si128(fold16(x1, k16), x3);
  x1 = _mm_xor_si128(fold16(x1, k16), x4);
  for (; len >= 16; p += 16, len -= 16) x1 = _mm_xor_si128(fold16(x1, k16), load16(p));
  x1 = _mm_xor_si128(_mm_clmulepi64_si128(k16, x1, 0x01), _mm_srli_si128(x1, 8));  // 128 -> 64 bits
  x1 = _mm_xor_si128(_mm_srli_si128(x1, 4), _mm_clmulepi64_si128(_mm_and_si128(x1, low32), k_last, 0x00));
  __m128i t = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, low32), barrett, 0x10), low32);
  x1 = _mm_xor_si128(x1, _mm_clmulepi64_si128(t, barrett, 0x00));
  return static_cast<uint32_t>(_mm_extract_epi32(x1, 1));
}

bool has_pclmul() {
  static const bool yes = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  return yes;
}
}  // namespace
#endif

uint32_t crc32(uint32_t crc, const uint8_t* bytes, size_t len) {
#ifdef INCSIM_PCLMUL
  if (len >= 64 && has_pclmul()) {
    const size_t bulk = len & ~size_t{15};
    crc = ~fold(~crc, bytes, bulk);
    bytes += bulk;
    len -= bulk;
  }
#endif
  return static_cast<uint32_t>(::crc32(crc, bytes, static_cast<uInt>(len)));
}

}  // namespace incsim::eth
