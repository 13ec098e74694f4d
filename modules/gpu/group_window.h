#pragma once
// An in-network group's share of the multicast address space (Klenk Fig. 2).
// Each group of a collective in flight holds a window of it
// (MulticastFabric::claim_window), so collectives sharing the machine never
// share an address (a switch's reduction table entry is keyed by it). In a
// window lie the region reads are served from (the members' inputs), the one
// results land in, and a barrier's flag.
#include <cstdint>

#include "net/packet.h"

namespace incsim::gpu {

struct GroupWindow {
  static constexpr uint64_t kBytes = net::kMulticastWindowBytes;
  static constexpr uint64_t kIn = 0, kOut = 1ull << 44, kFlag = 2ull << 44;
  static uint64_t base(int window) { return net::kMulticastBase + kBytes * static_cast<uint64_t>(window); }
};

}  // namespace incsim::gpu
