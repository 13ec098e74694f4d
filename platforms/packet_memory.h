#pragma once
// What a platform costs in memory at packet level, estimated from its graph
// before a module is built, so that a run too large for this machine can be
// refused with the figure (docs/platforms.md, "Limits"). The workload's own
// memory (its buffers, the cores' mailboxes, the program) comes on top.
#include <cstdint>

#include "core/config.h"
#include "machine.h"
#include "topology/topology.h"

namespace incsim::platforms {

struct PacketMemory {
  uint64_t blocks = 0;  // modules: GPUs, switches and their ports, adapters, links
  uint64_t routes = 0;  // the switches' routing tables (credit_switch::SwitchWiring)
  uint64_t tables = 0;  // reduction tables and SHARP aggregation buffers
  uint64_t total() const { return blocks + routes + tables; }
};

// The memory GpuMachine(t, cfg, seed, d) would take (reads the table sizes
// and payload from cfg as the fabrics do). The blocks' costs are fitted to
// what building 26 platforms took (from one star switch of 2,048 ports to
// clusters of 512 GPUs; within 13% of each, docs/platforms.md); the tables'
// are what they allocate once a run takes an entry in each (a SHARP run
// takes nearly all). Routing tables are sampled, 8 destinations per
// switch, so that a cluster of 131,072 GPUs is estimated in a second.
PacketMemory packet_memory(const topo::Topology& t, Config& cfg, const PlatformDefaults& d);

}  // namespace incsim::platforms
