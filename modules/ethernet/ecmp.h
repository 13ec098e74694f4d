#pragma once
// How a RoCE connection is addressed and which of equal-cost ports ECMP
// gives it: the packet-level Ethernet switch forwards by this, and
// --fidelity flow routes each connection by the same (docs/flow.md). Plain
// C++.
#include <cstddef>
#include <cstdint>

#include "core/hash.h"

namespace incsim::eth {

// The IP address of Ethernet endpoint e: 10.0.0.1 for endpoint 0, and so on.
inline uint32_t ip_of(uint32_t endpoint) { return 0x0A000001u + endpoint; }

// Of n equal-cost ports, the one a connection takes (RFC 2992): a hash of
// its source IP, destination IP and destination queue pair, so that its
// packets stay in order for go-back-N.
inline size_t ecmp_pick(uint32_t src_ip, uint32_t dst_ip, uint32_t dst_qp, size_t n) {
  const uint64_t flow = (static_cast<uint64_t>(src_ip) << 32 | dst_ip) ^ static_cast<uint64_t>(dst_qp) << 16;
  return splitmix64(flow) % n;
}

}  // namespace incsim::eth
