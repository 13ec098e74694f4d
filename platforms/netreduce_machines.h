#pragma once
// NetReduce's Ethernet machines, as topology graphs that the one builder
// (machine.h) elaborates with the Ethernet fabric. The single rack (§5.1 Testbed 1, Fig.
// 10B): P hosts, each one GPU behind a 100 GbE RoCE NIC, on one Ethernet
// switch; with NetReduce, an FPGA accelerator on P more switch ports (one per
// host: "both sides spare six ports", §4) and one ACL rule per worker
// redirecting its ring connection to its FPGA port. Spine-leaf (§3.3, Fig.
// 5): R such racks (leaves) under one spine switch with its own FPGA, which
// aggregates the leaves' partials (hierarchical aggregation with the CTT).
// The hosts form one ring, rack after rack: host i has an RC connection to
// host (i + 1) mod P; on a single rack the ring may instead visit any of
// the hosts in any order (`--ring`), the others idle. The job's queue
// pairs, ACL rules and aggregation hierarchy are its workload's
// (netreduce_job.h).
#include <algorithm>
#include <string>

#include "core/config.h"
#include "topology/topology.h"

namespace incsim::platforms {

// What NetReduce's machines are made of, as much as the graph says: the
// layout, its size, and the link rates (GB/s) and wire latency (ns). The
// forwarding tables, ACL rules, FPGA hierarchy and RC connections follow
// from it (NetReduceJob).
struct NetReduceShape {
  // Rack: one switch (racks == 1). SpineLeaf: racks leaves under a spine,
  // an FPGA on each. MultiGpu (§3.4, Testbed 2): each "rack" is one machine
  // of hosts_per_rack GPUs whose switch stands for the intra-machine fabric
  // (GPU links at intra.bw_GBps) and whose uplink is the machine's one
  // 100 GbE NIC; the machines hang off one Ethernet switch with the FPGA.
  enum class Layout { Rack, SpineLeaf, MultiGpu };
  Layout layout = Layout::Rack;
  int racks = 1, hosts_per_rack = 2;
  bool with_fpga = false;
  // From a file whose links differ: the slowest of each kind, the longest wire.
  double line_GBps = 0;    // Ethernet line rate: FPGA ports, and hosts except on MultiGpu
  double host_GBps = 0;    // a host's (MultiGpu: a GPU's intra-machine) link
  double uplink_GBps = 0;  // a leaf's (MultiGpu: a machine's NIC) link up; 0 on a Rack
  double wire_ns = 0;
  int hosts() const { return racks * hosts_per_rack; }
  // The rate that paces a ring across the machines: every host link (on
  // MultiGpu, every NIC), FPGA link and uplink carries one stream of its
  // data each way, so the slowest of them (NetReduce's bound; B_inter of the
  // appendix's models on MultiGpu).
  double ring_GBps() const {
    double r = line_GBps;
    if (layout != Layout::MultiGpu) r = std::min(r, host_GBps);
    if (racks > 1) r = std::min(r, uplink_GBps);
    return r;
  }
  // A leaf's FPGA has one port per host and, under a spine, one more for its
  // partials up and the spine's results down (a host's port carries that
  // host's gradients in and its connection's results out at line rate); it
  // faces the leaf's ports hosts_per_rack and up. 0: no leaf FPGAs.
  int leaf_fpga_ports() const {
    return with_fpga && layout != Layout::MultiGpu ? hosts_per_rack + (racks > 1 ? 1 : 0) : 0;
  }
  int uplink_port() const { return hosts_per_rack + leaf_fpga_ports(); }  // a leaf's port to the spine
};
// The built-in shape, its rates and latency from cfg (link.bw_GBps,
// intra.bw_GBps, leaf.uplink_bw_GBps, link.latency_ns).
NetReduceShape netreduce_shape(NetReduceShape::Layout layout, int racks, int hosts_per_rack, bool with_fpga,
                               Config& cfg);
// Its graph: switches (leaves, then the spine), hosts, FPGAs (the leaves',
// then the spine's), and their links, each switch side first; names rack,
// spineleaf or multigpu; family netreduce (multigpu: netreduce-multigpu).
topo::Topology netreduce_topology(const NetReduceShape& shape);
// The shape of a graph (a platform file, `source` in messages) that is one
// of these machines with its nodes and links in any order and any names;
// UserError naming the first thing that differs if it is not.
NetReduceShape netreduce_shape(const topo::Topology& graph, const std::string& source);

}  // namespace incsim::platforms
