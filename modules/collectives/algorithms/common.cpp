#include "collectives/algorithms/common.h"

#include "collectives/blink_synthesis.h"
#include "collectives/program_check.h"
#include "collectives/program_synthesis.h"
#include "core/error.h"
#include "topology/dgx1.h"

namespace incsim::collectives::builtin {

namespace {
const Param<double> kBlinkEps{"blink.eps", 0.05, Range::above(0).below(1),
                              "MWU packing approximation: the packed rate is at least (1 - eps) of the optimum (Blink "
                              "§3.2 gives none; 0.05 matches its 5% threshold)"};
const Param<double> kBlinkThreshold{
    "blink.threshold", 0.05, Range::at_least(0).below(1),
    "tree minimisation stops relaxing once the rate is within this fraction of the packed rate (Blink §3.2: 5%)"};
const Param<int> kBlinkChunks{
    "blink.chunks", 32, Range::at_least(1).at_most(1024),
    "chunks each tree's share is cut into; a node forwards a chunk once it holds it all (Blink §4.1, §4.2.1: its "
    "MIAD search settles near 1-16 MB chunks, about 1/32 of a tree's share at the sizes of Fig. 14); on a switch "
    "fabric 1, its one-hop trees (Blink §3.4: one hop, so nothing to pipeline along a tree; on DGX-2 more chunks "
    "only add per-message latency, measured)"};
const Param<int> kRingPieces{
    "ring.pieces", 32, Range::at_least(1).at_most(1024),
    "pieces each ring segment (broadcast: each ring's share) is cut into and pipelined around the ring, as NCCL "
    "pipelines its slices (NCCL 2.4: 8 slots per channel); 32 gives the rings the pipelining blink.chunks gives "
    "the trees"};
const Param<bool> kBlinkHybrid{
    "blink.hybrid", false, Range::none(),
    "broadcast over NVLink trees and a PCIe chain at once, the data split so both finish together (Blink A.3, Eq. "
    "8, with T_dpa = 0: no driver call to switch links here)"};
}  // namespace

Synthesis table_program(const std::string& algorithm, Program p) {
  const ProgramCheck v = check_program(p);
  if (!v.ok())
    throw UserError("the " + algorithm + " schedule for " + std::to_string(p.ranks) + " nodes is not an all-reduce:\n" +
                    v.report());
  Synthesis out;
  out.program = std::move(p);
  return out;
}

Synthesis tree_program(const Site& s, bool rings, int chunks_override) {
  const topo::Topology& t = s.graph;
  const int n = s.ranks();
  TreeSynthesisOptions so;
  so.rings = rings;
  so.allreduce = s.collective == Collective::AllReduce;
  so.platform = s.platform;
  so.max_payload_bytes = s.packet_payload;
  so.header_bytes = s.packet_header;
  if (s.dgx1()) {
    so.blink.eps = s.cfg.get(kBlinkEps);
    so.blink.minimize.threshold = s.cfg.get(kBlinkThreshold);
    so.chunks = s.cfg.get(rings ? kRingPieces : kBlinkChunks);
    // Blink A.3's hybrid is a broadcast within one server.
    if (!rings && topo::dgx1_servers(t).size() == 1) so.hybrid = s.cfg.get(kBlinkHybrid);
    if (chunks_override > 0) so.chunks = chunks_override;
  } else {
    so.chunks = s.cfg.get(kBlinkChunks, 1);
  }
  TreeSynthesis ts = synthesize_trees(t, n, so);
  const ProgramCheck v = check_program(ts.program);
  if (!v.ok())
    throw UserError(std::string("the ") + (rings ? "ring" : "blink") + " schedule is not a correct " +
                    collective_name(s.collective) + ":\n" + v.report());
  Synthesis out;
  out.program = std::move(ts.program);
  out.largest_share = ts.largest_share;
  out.algbw_bound_GBps = ts.algbw_bound_GBps;
  out.bound_note = std::move(ts.bound_note);
  out.trees_text = std::move(ts.text);
  return out;
}

int nccl_channels(const Site& s) {
  return s.cfg.get(kRingChannels, s.channels_default ? s.channels_default : kRingChannels.default_value());
}

std::string gpu_numbered_refusal(const Site& s, const Algorithm& a, const std::string& what) {
  if (!s.share || !a.gpu_numbered(s.graph) || s.gpu_numbered()) return {};
  return "algorithm '" + std::string(a.name()) + "' builds its " + what +
         " over GPUs 0 to n-1 of the platform; a job running it must have those GPUs, in order";
}

std::string switch_tables_refusal(const Site& s, const std::string& algorithm) {
  if (s.dgx1())
    return "algorithm '" + algorithm + "' needs NVSwitch reduction or multicast tables, which a DGX-1 lacks; use "
           "blink or ring";
  // Klenk §IV-E2 keeps multicast free of routing deadlock by making its
  // paths conform to unicast routes. Our multicast trees run the routes
  // toward their root backwards: routes on a fabric that goes up, then
  // down, but not under dimension order (X then Y backwards is Y then X)
  // nor on BiGraph (ties broken by destination: the way back differs), and
  // there runs stall (measured: push on a 4x4 torus and mesh at 64 KiB,
  // pull and multicast on BiGraph 4x8 at 1 MiB).
  if (s.graph.vc_policy != topo::VcPolicy::None)
    return "algorithm '" + algorithm + "' reduces or multicasts in the switches, which only works on fabrics whose "
           "routes go up then down (dgx2, fattree2l, star, fattree, hgx-a100, hgx-h100, hgx-b200, nvl72 and YAML platforms of NVSwitches "
           "built so); on " + s.platform + " use ring";
  if (s.plain_switch >= 0)
    return "algorithm '" + algorithm + "' reduces or multicasts in the switches, and " +
           s.graph.node(s.plain_switch).name + " (a " + s.graph.node(s.plain_switch).block +
           ") has no multicast or reduction tables";
  return {};
}

std::string dgx1_refusal(const Site& s, const std::string& algorithm) {
  if (!s.dgx1()) return {};
  return "on " + s.platform + " the algorithms are blink and ring (NCCL-style), not " + algorithm;
}

std::string cluster_refusal(const Site& s, const std::string& algorithm, bool in_switches) {
  if (!s.cluster()) return {};
  if (in_switches && s.share && s.one_node()) return {};  // a job's GPUs, all in one node
  // The algorithms that run on all of a cluster's GPUs.
  std::string across;
  for (const Algorithm* a : algorithms()) {
    const std::string runs_on = std::string(", ") + a->info().runs_on;
    if (a->info().family == Family::GpuFabric && a->crosses_nodes() && runs_on.find(", cluster") != std::string::npos)
      across += std::string(a->name()) + ", ";
  }
  return "on a cluster, GPUs in different nodes reach each other through their network adapters, which carry the "
         "cores' writes: run " + across.substr(0, across.size() - 2) + " or a program for the GPUs' cores; " +
         algorithm + " runs on the GPUs of one node only (a job's, or --tp's groups with -c train.dp_algorithm=ring)";
}

}  // namespace incsim::collectives::builtin
