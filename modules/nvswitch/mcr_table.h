#pragma once
// A switch's multicast-region (MCR) table (Klenk §IV-A, Fig. 2, markers 5-7):
// for each region the fabric manager registered, the output ports of its
// trees at this switch and the responses a pull entry here waits for.
// The fabric manager (topo::MulticastFabric) computes every switch's entries
// at once and keeps them in one structure; this module is this switch's view
// of it (sw3.mcr_table), an sc_module without processes: the switch's
// methods call it directly. It traces how many multicasts and pull requests
// looked it up; it holds no packets, so it has nothing to tell the stall
// detector. Replication itself is the crossbar's (NvSwitch::crossbar_move).
#include <cstdint>
#include <systemc>

#include "core/param.h"
#include "core/trace.h"
#include "net/packet.h"
#include "topology/multicast.h"

namespace incsim::nvswitch {

// How many multicast groups a switch's MCR table holds
// (topo::MulticastFabric::GroupLimit): a collective's in-network group takes
// one from start to end, as NCCL's NVLS communicator holds one multicast
// object (src/transport/nvls.cc).
inline const Param<uint32_t> kMulticastGroups{
    "switch.multicast.groups", 0, Range::at_least(0).at_most(1u << 20),
    "multicast groups (MCR entries, NVLS multicast objects) a switch holds, each collective's in-network group one at "
    "every switch between its members; 0: any number. Hopper's NVSwitch: 128 (Fabric Manager's log on HGX H200, "
    "NVIDIA/nccl#2077); a GB200 NVL72 rack: 1024 (NVIDIA GB200 NVL partition guide)"};
inline const Param<std::string> kMulticastPolicy{
    "switch.multicast.policy", "shared", Range::none(),
    "how a jobs: list's collectives share switch.multicast.groups: shared (first come, first served), partitioned "
    "(each job at most its weight's share of every switch's), quota (each job at most its quota, a fraction of "
    "every switch's, of what is free); docs/jobs.md"};

class McrTable : public sc_core::sc_module, public Traceable {
 public:
  McrTable(sc_core::sc_module_name name, const topo::MulticastFabric& fabric, int switch_index)
      : sc_module(name), fabric_(fabric), sw_(switch_index) {}

  // The region holding a multicast's address (a lookup, counted), or -1.
  int lookup(uint64_t addr) {
    ++lookups;
    return fabric_.find(addr);
  }
  // The region holding an address, not counted: the home of an evicted block.
  int region_of(uint64_t addr) const { return fabric_.find(addr); }
  const topo::McRegion& region(int r) const { return fabric_.region(r); }
  // The ports a multicast of region r on pivot's tree leaves this switch by.
  const topo::MulticastFabric::Fanout* fanout_begin(int r, int pivot) const { return fabric_.fanout_begin(r, sw_, pivot); }
  const topo::MulticastFabric::Fanout* fanout_end(int r, int pivot) const { return fabric_.fanout_end(r, sw_, pivot); }
  int subtree_targets(int r, int pivot) const { return fabric_.subtree_targets(r, sw_, pivot); }
  int home_gpu(int r, uint64_t addr) const { return fabric_.home_gpu(r, addr); }
  topo::MulticastFabric::HomePort home_port(int r, uint64_t addr) const { return fabric_.home_port(r, addr); }
  int result_pivot(int r, uint64_t addr) const { return fabric_.result_pivot(r, addr); }
  // The job whose collective's window holds addr (TableSharing), -1 if none.
  int tenant(uint64_t addr) const { return fabric_.window_tenant(net::multicast_window(addr)); }
  // Contributions to addr's block that meet here on their way home (SHARP's tree), or 0.
  int merge_count(int r, uint64_t addr) const { return fabric_.merge_count(r, addr, sw_); }

  void trace(sc_core::sc_trace_file* tf) const override {
    sc_core::sc_trace(tf, lookups, std::string(name()) + ".lookups");
  }

  uint32_t lookups = 0;  // multicasts and pull requests that read an entry

 private:
  const topo::MulticastFabric& fabric_;
  int sw_;
};

}  // namespace incsim::nvswitch
