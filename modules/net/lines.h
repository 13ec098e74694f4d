#pragma once
// NCCL's line formats, which a packet's writes may carry (net::Packet::lines)
// and the collectives' protocols are made of; plain C++, no SystemC.
#include <cstdint>

namespace incsim::net {

// How a write's data sits in the receiver's buffer: plain, or in NCCL's LL
// lines (st.volatile.v4.u32 {data, flag, data, flag}: 8 data bytes of 16) or
// LL128 lines (15 data words and a flag word: 120 of 128; src/include/device.h,
// prims_ll.h, prims_ll128.h). A packet's payload_bytes counts the data; the
// wire carries the lines' flags too.
enum class Lines : uint8_t { Plain, Ll, Ll128 };
constexpr uint32_t kLlLine = 16, kLlData = 8;
constexpr uint32_t kLl128Line = 128, kLl128Data = 120;
// The data bytes a payload of `max_payload` wire bytes holds in whole
// lines, and the wire payload `data` bytes take (the last line padded).
inline uint32_t lines_data_bytes(Lines l, uint32_t max_payload) {
  switch (l) {
    case Lines::Ll: return max_payload / kLlLine * kLlData;
    case Lines::Ll128: return max_payload / kLl128Line * kLl128Data;
    default: return max_payload;
  }
}
inline uint32_t lines_wire_payload(Lines l, uint32_t data) {
  switch (l) {
    case Lines::Ll: return (data + kLlData - 1) / kLlData * kLlLine;
    case Lines::Ll128: return (data + kLl128Data - 1) / kLl128Data * kLl128Line;
    default: return data;
  }
}

}  // namespace incsim::net
