// NCCL's ring (Klenk §III's software baseline), wherever the GPU fabrics run
// it: on the GPUs' cores (on a cluster, NCCL's rings across its nodes), as
// a schedule table on MultiTree's NICs (§V-A runs every baseline there), and
// on a DGX-1 as NCCL's NVLink rings, which Blink compares with (§5).
#include "collectives/algorithms/common.h"
#include "collectives/baselines.h"
#include "collectives/nccl.h"
#include "collectives/program_synthesis.h"
#include "core/error.h"

namespace incsim::collectives::builtin {

namespace {

const Param<std::string> kRingEngine{
    "ring.engine", "software", Range::none(),
    "software: the GPUs' data-fence-flag ring (Klenk §III; default on dgx2, fattree2l, star and YAML files); "
    "nic: the ring's schedule table on the NIC, as MultiTree runs every baseline (§V-A; default on torus, mesh, "
    "fattree, bigraph, for an all-reduce; other collectives' rings run on the cores)"};

class Ring : public Algorithm {
 public:
  Ring()
      : Algorithm({"ring", "allreduce, reducescatter, allgather, broadcast, reduce",
                   "allreduce, reducescatter, allgather, reduce",
                   Family::GpuFabric,
                   "dgx2, dgx1v, dgx1p, fattree2l, star, torus, mesh, fattree, bigraph, hgx-a100, hgx-h100, hgx-b200, nvl72, cluster",
                   "the GPUs' cores, or the NICs' schedule tables (ring.engine=nic, an all-reduce's ring, and on dgx1v, "
                   "dgx1p)",
                   "reduce-scatter then all-gather around a ring, NCCL's channels (Klenk §III; on DGX-1 NCCL's NVLink "
                   "rings, Blink §5)",
                   10}) {}
  bool crosses_nodes() const override { return true; }
  // A DGX-1's rings are packed over its NVLinks, GPU by GPU.
  bool gpu_numbered(const topo::Topology& t) const override { return t.family == "dgx1v" || t.family == "dgx1p"; }
  std::string cannot_run(const Site& s) const override {
    // Blink's packing gives NVLink rings for an all-reduce and a broadcast.
    if (s.dgx1() && s.collective == Collective::Reduce)
      return "a ring reduce on " + s.platform + " would need NCCL's NVLink rings for a reduce, which incsim packs "
             "only for an all-reduce and a broadcast: run it on a switch fabric";
    return gpu_numbered_refusal(s, *this, "trees");
  }

  Synthesis synthesize(const Site& s) const override {
    if (s.dgx1()) return tree_program(s, true);
    // The NICs' ring table is an all-reduce's; the other collectives' rings run on the cores.
    const bool allreduce = s.collective == Collective::AllReduce;
    const std::string engine = s.cfg.get(kRingEngine, s.multitree_platform() && allreduce ? "nic" : "software");
    if (engine != "software" && engine != "nic")
      throw UserError("ring.engine must be software or nic, not '" + engine + "'");
    if (!allreduce && engine == "nic")
      throw UserError(std::string("a ring ") + collective_name(s.collective) + " runs on the GPUs' cores "
                      "(ring.engine=software); the NICs' ring table is an all-reduce's");
    if (s.cluster() && engine == "nic")
      throw UserError("on a cluster the ring runs on the GPUs' cores (ring.engine=software): the InfiniBand adapters "
                      "carry the cores' writes, not the NICs' schedule-table messages");
    if (engine == "nic") {
      s.cfg.get(kNicLockstep);  // read as for every schedule table; a ring's steps all send
      return table_program("ring", nic_ring_program(s.ranks()));
    }
    const int channels = nccl_channels(s);
    // On whole nodes (a cluster, or a job's whole nodes in order) NCCL's
    // rings leave each node by a different GPU's rail per channel.
    const int nodes = s.whole_nodes();
    Synthesis out;
    out.program = nodes ? cluster_ring_program(s.collective, nodes, static_cast<int>(s.nodes[0].size()), channels)
                        : ring_program(s.collective, s.ranks(), channels);
    apply_protocol(out.program, name(), s.cfg.get(kRingProtocol, s.protocol_default), false);
    return out;
  }
};

// NCCL's point-to-point collectives: nccl-tests' alltoall, gather and scatter.
class P2p : public Algorithm {
 public:
  P2p()
      : Algorithm({"p2p", "alltoall, gather, scatter", "alltoall, gather, scatter", Family::GpuFabric,
                   "dgx2, fattree2l, star, torus, mesh, fattree, bigraph, hgx-a100, hgx-h100, hgx-b200, nvl72, cluster", "the GPUs' cores",
                   "NCCL's grouped sends and receives: all-to-all (each GPU sends every peer its block directly and "
                   "receives the peer's), gather and scatter (every GPU to or from the root), spread over the "
                   "channels, a GPU's own block a local copy (nccl-tests' alltoall, gather, scatter)",
                   210}) {}
  bool crosses_nodes() const override { return true; }
  std::string cannot_run(const Site& s) const override {
    if (s.dgx1())
      return "NCCL's " + std::string(s.collective == Collective::AllToAll ? "all-to-all" : collective_name(s.collective)) +
             " on " + s.platform + " sends between GPUs that no NVLink joins (over PCIe), which "
             "incsim does not model: run it on a switch fabric";
    return {};
  }
  Synthesis synthesize(const Site& s) const override {
    Synthesis out;
    out.program = s.collective == Collective::AllToAll
                      ? alltoall_program(s.ranks(), nccl_channels(s))
                      : gather_scatter_program(s.collective, s.ranks(), nccl_channels(s), 0);
    apply_protocol(out.program, name(), s.cfg.get(kRingProtocol, s.protocol_default), false);
    return out;
  }
};

}  // namespace

INCSIM_ALGORITHMS(ring) {
  r.add(std::make_unique<Ring>());
  r.add(std::make_unique<P2p>());
}

}  // namespace incsim::collectives::builtin
