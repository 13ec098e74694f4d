#pragma once
// An in-network group's share of the multicast address space (Klenk Fig. 2).
// Each group of a collective in flight holds a window of it
// (MulticastFabric::claim_window), so collectives sharing the machine never
// share an address (a switch's reduction table entry is keyed by it). In a
// window lie the region reads are served from (the members' inputs), the one
// results land in, and a barrier's flag.
#include <cstdint>
#include <vector>

#include "net/packet.h"
#include "topology/multicast.h"

namespace incsim::gpu {

struct GroupWindow {
  static constexpr uint64_t kBytes = net::kMulticastWindowBytes;
  static constexpr uint64_t kIn = 0, kOut = 1ull << 44, kFlag = 2ull << 44;
  static uint64_t base(int window) { return net::kMulticastBase + kBytes * static_cast<uint64_t>(window); }

  // A window for each group of ranks (`groups`, a program's) from the
  // fabric manager, appended to `out` (a collective's groups: window, base
  // and members); `endpoint_of(r)` is rank r's endpoint index. A window
  // refused (the switches' multicast groups, MulticastFabric::GroupLimit)
  // releases those claimed before it and rethrows: a collective that cannot
  // be built holds none.
  template <class Group, class EndpointOf>
  static void claim(topo::MulticastFabric& fabric, const std::vector<std::vector<int>>& groups, EndpointOf endpoint_of,
                    std::vector<Group>& out) {
    try {
      for (const std::vector<int>& members : groups) {
        std::vector<int> endpoints;
        for (int r : members) endpoints.push_back(endpoint_of(r));
        Group g;
        g.window = fabric.claim_window(endpoints);
        g.base = base(g.window);
        g.members = members;
        out.push_back(std::move(g));
      }
    } catch (...) {
      for (const Group& g : out) fabric.release_window(g.window);
      out.clear();
      throw;
    }
  }
};

}  // namespace incsim::gpu
