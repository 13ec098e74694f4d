#pragma once
// CRC-32 as Ethernet, InfiniBand and RoCEv2's ICRC use it (polynomial
// 0x04C11DB7, reflected, initial and final value inverted; IEEE 802.3
// §3.2.9, IBA Annex A17), with zlib's crc32() interface: crc32(0, ...) is the
// CRC of the bytes, and crc32(crc32(0, a), b) that of a followed by b.
#include <cstddef>
#include <cstdint>

namespace incsim::eth {

uint32_t crc32(uint32_t crc, const uint8_t* bytes, size_t len);

}  // namespace incsim::eth
