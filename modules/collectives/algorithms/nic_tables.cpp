// The all-reduces MultiTree compares with on its NICs' schedule tables
// (MultiTree §V-A runs every baseline there, for fairness), and MultiTree's
// own trees (§III, §IV).
#include "collectives/algorithms/common.h"
#include "collectives/baselines.h"
#include "collectives/multitree.h"
#include "core/error.h"

namespace incsim::collectives::builtin {

namespace {

const Param<int> kDbtreePieces{
    "dbtree.pieces", 16, Range::at_least(1).at_most(1024),
    "pieces each tree's half of the buffer is cut into and pipelined down the tree, as NCCL pipelines its trees "
    "(a schedule table is made once for every size, MultiTree §V-A, so this is a count, not a size; 1: the "
    "unpipelined trees of MultiTree Fig. 4b)"};

constexpr const char* kNotDgx1 = "dgx2, fattree2l, star, torus, mesh, fattree, bigraph, hgx-a100, hgx-h100, hgx-b200, nvl72";
constexpr const char* kNicTables = "the NICs' schedule tables";

// An all-reduce schedule for the NICs.
class Table : public Algorithm {
 public:
  using Algorithm::Algorithm;
  std::string cannot_run(const Site& s) const override {
    for (const std::string& why : {cluster_refusal(s, name(), false), dgx1_refusal(s, name()),
                                   gpu_numbered_refusal(s, *this, "schedule")})
      if (!why.empty()) return why;
    if (gpu_numbered(s.graph) && !s.whole())
      return std::string(name()) + " builds its schedule from the whole network; run it on all " +
             std::to_string(s.graph.endpoints().size()) + " nodes (leave out --gpus)";
    return where_not(s);
  }
  Synthesis synthesize(const Site& s) const override {
    const bool lockstep = s.cfg.get(kNicLockstep);
    Synthesis out = table_program(name(), schedule(s, lockstep));
    out.message_flow_control = messages_;
    return out;
  }

 protected:
  bool messages_ = false;  // message-based flow control (MultiTree §IV-B)
  // Why the schedule cannot be built for this machine, or "".
  virtual std::string where_not(const Site&) const { return {}; }
  // The program, with NOPs under the lockstep or without.
  virtual Program schedule(const Site& s, bool lockstep) const = 0;
};

class DoubleBinaryTree : public Table {
 public:
  DoubleBinaryTree()
      : Table({"dbtree", "allreduce", "", Family::GpuFabric, kNotDgx1, kNicTables,
               "NCCL's double binary tree, pipelined (Sanders et al. 2009; a MultiTree §V-A baseline)", 60}) {}
  Program schedule(const Site& s, bool lockstep) const override {
    return dbtree_program(s.ranks(), s.cfg.get(kDbtreePieces), lockstep);
  }
};

class HalvingDoubling : public Table {
 public:
  HalvingDoubling()
      : Table({"hd", "allreduce", "", Family::GpuFabric, kNotDgx1, kNicTables,
               "recursive halving-doubling (Rabenseifner; a MultiTree §V-A baseline)", 70}) {}
  Program schedule(const Site& s, bool lockstep) const override { return hd_program(s.ranks(), lockstep); }
};

class Ring2d : public Table {
 public:
  Ring2d(Info info, Program (*program)(int, int, bool)) : Table(info), program_(program) {}
  bool gpu_numbered(const topo::Topology&) const override { return true; }
  std::string where_not(const Site& s) const override {
    if (s.graph.grid.kx > 0) return {};
    return std::string(name()) + " runs along the rows and columns of a torus or mesh, and " + s.platform + " has none";
  }
  Program schedule(const Site& s, bool lockstep) const override {
    return program_(s.graph.grid.kx, s.graph.grid.ky, lockstep);
  }

 private:
  Program (*program_)(int, int, bool);
};

class Hdrm : public Table {
 public:
  Hdrm()
      : Table({"hdrm", "allreduce", "", Family::GpuFabric, "bigraph", kNicTables,
               "halving-doubling with a contention-free rank mapping (EFLOPS; MultiTree §II-C, docs/multitree.md)",
               90}) {}
  bool gpu_numbered(const topo::Topology&) const override { return true; }
  std::string where_not(const Site& s) const override {
    if (is_bigraph(s.graph)) return {};
    return "hdrm maps halving-doubling's ranks onto BiGraph's switches and runs only on a BiGraph (the bigraph "
           "platform, or a file with its nodes and links)";
  }
  Program schedule(const Site& s, bool lockstep) const override {
    const int switches = static_cast<int>(s.graph.switches().size());
    return hdrm_program(static_cast<int>(s.graph.endpoints().size()) / switches, switches, lockstep);
  }
};

class MultiTree : public Table {
 public:
  MultiTree(Info info, bool messages) : Table(info) { messages_ = messages; }
  bool gpu_numbered(const topo::Topology&) const override { return true; }
  Program schedule(const Site& s, bool lockstep) const override {
    MultiTreeOptions mo;
    mo.nops = lockstep;
    return multitree_program(s.graph, mo);
  }
};

}  // namespace

INCSIM_ALGORITHMS(nic_tables) {
  r.add(std::make_unique<DoubleBinaryTree>());
  r.add(std::make_unique<HalvingDoubling>());
  r.add(std::make_unique<Ring2d>(
      Algorithm::Info{"ring2d", "allreduce", "", Family::GpuFabric, "torus, mesh", kNicTables,
                      "rings along the rows and the columns at once, on all four links, then the other way (Ying et al. "
                      "2018; a MultiTree §V-A baseline)",
                      80},
      ring2d_program));
  r.add(std::make_unique<Ring2d>(
      Algorithm::Info{"ring2d-hier", "allreduce", "", Family::GpuFabric, "torus, mesh", kNicTables,
                      "rings along the rows, then the columns, on one link of four at a time", 85},
      ring2d_hier_program));
  r.add(std::make_unique<Hdrm>());
  r.add(std::make_unique<MultiTree>(
      Algorithm::Info{"multitree", "allreduce", "", Family::GpuFabric, kNotDgx1,
                      "the NICs' schedule tables, in lockstep",
                      "topology-aware trees built step by step, over all of the platform's GPUs (MultiTree §III, §IV)",
                      100},
      false));
  r.add(std::make_unique<MultiTree>(
      Algorithm::Info{"multitree-msg", "allreduce", "", Family::GpuFabric, kNotDgx1,
                      "the NICs' schedule tables, one head flit per message",
                      "MultiTree's trees with message-based flow control, over all of the platform's GPUs (MultiTree "
                      "§IV-B)",
                      110},
      true));
}

}  // namespace incsim::collectives::builtin
