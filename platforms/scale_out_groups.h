#pragma once
// The owners of a cluster's in-network groups on its scale-out network, one
// per fabric, as on a real cluster: SHARP's aggregation manager admits a
// program's groups to the InfiniBand switches' aggregation buffers, and on
// RoCE NetReduce's controller installs each group's ring on the FPGA beside
// its leaf (aggregator array, CLT entries, the leaf's ACL rules, the
// adapters' queue pairs). Inside a node the fabric manager's multicast
// windows and regions (topo::MulticastFabric) are the GPU fabric's owner.
// docs/modern-machines.md, "Clusters".
#include <cstdint>
#include <functional>
#include <vector>

#include "elements/data_pattern.h"
#include "collectives/program.h"
#include "platform.h"

namespace incsim::platforms {

// The node of a GPU's network adapter (an hca or a roce_bridge), or -1.
int adapter_of(const topo::Topology& t, int gpu);

// SHARP's aggregation manager (the AM of NVIDIA's SHARP, Graham et al.
// 2016): a group's share of every switch's aggregation buffers on its tree.
class SharpManager {
 public:
  explicit SharpManager(GpuMachine& m) : m_(m) {}
  // Admits the groups of p that push (rank r on GPU gpus[r]), each holding
  // `credits` blocks in flight per member; UserError naming the shortfall
  // if a switch port's buffers (ib.sharp.table_bytes) cannot hold them.
  void admit(const collectives::Program& p, const std::vector<int>& gpus, int credits) const;

 private:
  GpuMachine& m_;
};

// NetReduce's controller on a RoCE cluster (NetReduce §3.1, §4): each group
// that pushes across the nodes becomes a ring of its members on the FPGA
// beside their rail's leaf.
class NetReduceRings {
 public:
  explicit NetReduceRings(GpuMachine& m) : m_(m) {}
  // Installs the rings of p's pushing groups (rank r on GPU gpus[r]); a
  // group's sums land at out(g), its window is `window` one-block messages.
  // UserError if a rail spans several leaves or its FPGA's CLT (clt_entries)
  // cannot hold the rings' connections.
  void join(const collectives::Program& p, const std::vector<int>& gpus, const std::function<uint64_t(int)>& out,
            uint32_t window, uint32_t clt_entries, elements::DType dtype, elements::RedOp redop) const;

 private:
  GpuMachine& m_;
};

}  // namespace incsim::platforms
