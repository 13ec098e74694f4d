// The ICRC's CRC-32 (ethernet/crc32.h) against a bit-at-a-time reference of
// the same polynomial: the standard check value, and random buffers of
// every length on both sides of the folded path's 64 bytes, at unaligned
// starts and continued from a previous CRC, as invariant_crc chains them.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "core/hash.h"
#include "ethernet/crc32.h"

namespace {
uint32_t bitwise_crc32(uint32_t crc, const uint8_t* p, size_t len) {
  crc = ~crc;
  for (size_t i = 0; i < len; ++i) {
    crc ^= p[i];
    for (int b = 0; b < 8; ++b) crc = crc >> 1 ^ (0xEDB88320u & (0u - (crc & 1)));
  }
  return ~crc;
}
}  // namespace

TEST_CASE("CRC-32: the check value of '123456789', and every length and start against the bitwise reference",
          "[ethernet][crc]") {
  const char* check = "123456789";
  CHECK(incsim::eth::crc32(0, reinterpret_cast<const uint8_t*>(check), std::strlen(check)) == 0xCBF43926u);
  std::vector<uint8_t> buf(4200);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(incsim::splitmix64(i));
  for (size_t len = 0; len <= 4096; len += len < 300 ? 1 : 61)
    for (size_t start : {size_t{0}, size_t{3}, size_t{17}}) {
      const uint32_t prior = static_cast<uint32_t>(incsim::splitmix64(len + start));
      if (incsim::eth::crc32(prior, buf.data() + start, len) != bitwise_crc32(prior, buf.data() + start, len))
        FAIL("length " << len << " from byte " << start);
    }
}
