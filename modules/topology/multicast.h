#pragma once
// The fabric manager of Klenk §IV-A (Fig. 2): GPUs register multicast regions
// (MCRs) at start-up and it fills every switch's MCR table. Plain C++, read
// by the switches (replication, reduction table counts, home ports) and by
// the GPUs (which port a home is reached through).
//
// Trees. Multicast paths conform to unicast routes (BRCP, Klenk §IV-E2): the
// tree of a block is the in-tree of the unicast routes toward a pivot GPU,
// restricted to switches. A switch forwards a multicast on every tree edge
// but the one it came in on, and delivers to the targets it is designated
// for. The tree is the same whatever switch the multicast enters at, so one
// entry per region and pivot serves every source (Klenk: "one entry per MCR").
// A pull request's pivot is its requester: the responses, routed unicast
// toward it, climb exactly the tree the request went down, so intermediate
// reduction tables see every response of their subtree. A write's pivot is
// the block's home GPU, which spreads blocks over trees (and, in a fat tree,
// over spine switches).
//
// Several fabrics. On a cluster the GPUs' adapters (bridges, routed as
// 2-port switches) join each node's NVSwitches to the network's switches. A
// group of one GPU per node (a rail's SHARP group) is reached only through
// the network: of a pivot's tree, the parts that cannot deliver to every
// target (a node's NVSwitches) are left out, and a bridge is never a home.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "topology.h"

namespace incsim::topo {

struct McRegion {
  uint64_t start = 0, size = 0;  // in the global (network) address space
  std::vector<int> targets;      // endpoint indices, in the order given
  bool exclude_source = true;    // a GPU's own multicast does not come back to it
};

// How blocks are spread over home ports (Klenk §IV-C: "determined through
// hashing"): interleaved by block address over switches, then ports, as
// address-sliced caches do, or by a mixing hash of the block address.
enum class HomeMapping { Interleave, Hash };

// Where a group's traffic meets: from each member's distances to some
// switches (dist[m][s]; 0 or less: not reached), whether switch s lies on a
// shortest path between two members. Members at the same distances from
// every switch all of them reach (a rail's GPUs under one leaf) are one
// class, and the pairs of classes (a class with itself where it holds two
// members) decide what the pairs of members would: a SHARP group of 2,048
// GPUs has a few classes. The switches some member does not reach (each
// node's NVSwitches, which only its own GPUs reach) are few per member and
// kept apart, so that they do not make every member a class of its own.
// The one rule of packet level's home ports and the flows' homes.
std::vector<bool> on_shortest_paths(const std::vector<std::vector<int>>& dist);
// [switch number]: whether it lies on a shortest path between two of the
// endpoints `targets` (on_shortest_paths of their distances to every switch).
std::vector<bool> switches_between(const Topology& t, const std::vector<int>& targets);
// The switches (numbers) that may hold a group's home ports: each that all
// `targets` reach, on a shortest path between two of them, and that
// can_reduce accepts (empty: any). MulticastFabric keeps those that deliver
// to a target on some tree; the bound (platforms/bounds.h) takes them all.
std::vector<int> home_switches(const Topology& t, const std::vector<int>& targets,
                               const std::function<bool(int node)>& can_reduce);

class MulticastFabric {
 public:
  static constexpr uint32_t kBlockBytes = 128;  // reduction alignment (Klenk §IV-D: 128 B packets)

  // can_reduce: whether a switch node may hold home ports (one with reduction
  // tables, not a bridge); empty: every switch. deadlock_checks: false for
  // a fabric read for its trees alone (flows'), which no packet crosses.
  explicit MulticastFabric(const Topology& t, HomeMapping homes = HomeMapping::Interleave,
                           std::function<bool(int node)> can_reduce = {}, bool deadlock_checks = true);

  // Registers a region and fills the tables; throws UserError if it overlaps
  // another, names a GPU the platform lacks, has fewer than two targets, or
  // the topology cannot deliver to every target on some tree.
  int add_region(uint64_t start, uint64_t size, std::vector<int> targets, bool exclude_source);
  // Throws what add_region would for a group of these targets, registering
  // nothing: so that a run refuses a platform before it starts.
  void check_group(std::vector<int> targets) const;
  // Removes region r (its collective ended); the others keep their numbers.
  void remove_region(int r);
  // Each collective in flight holds a window of the multicast address space
  // for each of its in-network groups (`members`: their endpoint indices),
  // so collectives sharing the machine never share an address (a switch's
  // reduction table entry is keyed by it). The lowest free window first: a
  // collective alone always gets window 0. Under a GroupLimit a window that
  // would take one group more than a switch or the job may hold is refused
  // with a ShareShortfall, nothing claimed.
  int claim_window(const std::vector<int>& members = {});
  void release_window(int w);
  // Multicast groups (a switch's MCR entries; NVLS's multicast objects, of
  // which NCCL creates one per communicator, src/transport/nvls.cc): a
  // window holds one, from its claim to its release, at every switch that
  // `counts` and that lies on a shortest path between two of its members
  // (a rail's group, one GPU on each node, meets on no NVSwitch). A switch
  // holds at most `capacity` (0: any number), job j at most limit(j) of a
  // switch's, share(j) naming that share in a refusal.
  struct GroupLimit {
    uint32_t capacity = 0;
    std::function<bool(int node)> counts;
    std::function<uint32_t(int job)> limit;
    std::function<std::string(int job)> share;
    std::string resource, key;  // "the NVSwitches' multicast groups", the capacity's key
  };
  void limit_groups(GroupLimit l) { limit_ = std::move(l); }
  // Groups switch number sw holds now: every job's, or job j's.
  static constexpr int kAnyJob = -2;
  uint32_t groups_held(int sw, int job = kAnyJob) const;
  // Which job holds each window (the switches' table sharing policy reads
  // it): collectives claim their windows as they are built, and a jobs run
  // builds job j's collective after set_tenant(j). -1: no job (a run without
  // jobs, or a window no one holds).
  void set_tenant(int job) { tenant_ = job; }
  int tenant() const { return tenant_; }  // the job whose collectives claim windows now, -1: none
  int window_tenant(int w) const { return w >= 0 && w < static_cast<int>(tenants_.size()) ? tenants_[w] : -1; }
  int find(uint64_t addr) const;  // region holding addr, or -1
  const McRegion& region(int r) const { return regions_[r].def; }

  struct Fanout {
    int16_t port;      // output port of the switch
    int32_t endpoint;  // endpoint delivered to, or -1 for a tree edge toward a switch
  };
  // The ports a multicast of region r on pivot h's tree leaves switch number
  // sw by (before excluding the port it came in on).
  const Fanout* fanout_begin(int r, int sw, int pivot) const;
  const Fanout* fanout_end(int r, int sw, int pivot) const;
  // Targets (other than the pivot, unless the region keeps the source) in the subtree below switch sw on pivot's
  // tree: the responses a pull request's table entry there waits for.
  int subtree_targets(int r, int sw, int pivot) const;

  uint64_t block(int r, uint64_t addr) const { return (addr - regions_[r].def.start) / kBlockBytes; }
  // The GPU that collects a block's evicted partials (Klenk §IV-C), blocks
  // interleaved over the targets; it is also the pivot of the block's writes.
  int home_gpu(int r, uint64_t addr) const;
  // The switch port whose reduction table reduces a block (Klenk §IV-C:
  // "every address has a home port"), over every port of every switch that
  // all targets reach, by the fabric's HomeMapping.
  struct HomePort {
    int sw;    // switch number (index into Topology::switches())
    int port;
  };
  HomePort home_port(int r, uint64_t addr) const;
  // The pivot of the result a home port multicasts: a target whose tree has
  // targets below the home switch, so that the result only descends from it
  // (a tree climbing back up would break the up-then-down order of unicast
  // paths that keeps multicast deadlock-free, Klenk §IV-E2).
  int result_pivot(int r, uint64_t addr) const;
  // Every pivot a home at switch number sw takes in turn.
  const std::vector<int>& result_pivots(int r, int sw) const { return regions_[r].result_pivots[sw]; }
  uint64_t home_ports(int r) const { return regions_[r].homes.size(); }
  HomeMapping home_mapping() const { return homes_; }
  // SHARP's aggregation tree (Graham et al. 2016): the contributions
  // of a block that meet at switch sw on their way to its home switch, to
  // be reduced there into one partial, or 0 where they do not meet (sw
  // forwards what enters it by one port, and the home itself counts the
  // whole group). The way up is the one switches with holding tables take
  // (nvswitch::TableConfig::holds): of the equal-cost links toward the home,
  // the home port picks one, at every switch. A group whose members reach
  // the home from several of their switches has no merge points.
  int merge_count(int r, uint64_t addr, int sw) const;
  // Regions added from now on get their aggregation trees (merge_count);
  // a fabric whose switches reduce on the way (SHARP's) asks for them, and
  // Klenk's tables, which reduce at the home alone, are spared the cost.
  void aggregate_on_the_way() { aggregation_trees_ = true; }

 private:
  struct Region {
    McRegion def;
    std::vector<int> target_pos;         // endpoint -> position in targets, or -1
    std::vector<uint32_t> offsets;       // [(sw * T + pivot position)] into fanout
    std::vector<Fanout> fanout;
    std::vector<uint16_t> subtree;       // [(sw * T + pivot position)]
    std::vector<HomePort> homes;
    std::vector<std::vector<int>> result_pivots;  // [sw]: pivots whose tree has targets below sw
    struct Merge {
      int32_t sw;
      uint16_t count;
    };
    std::vector<uint32_t> merge_first;  // [home index] into merges, one past the last home
    std::vector<Merge> merges;
  };
  size_t slot(const Region& g, int sw, int pivot) const {
    return static_cast<size_t>(sw) * g.def.targets.size() + static_cast<size_t>(g.target_pos[pivot]);
  }
  // A region of def with its trees and homes, checked as add_region says.
  Region make_region(McRegion def) const;
  void build(Region& g) const;
  void build_merges(Region& g) const;
  // A block's home: home_key (its number, or its hash) mod the homes.
  uint64_t home_key(const Region& g, uint64_t addr) const;
  size_t home_index(const Region& g, uint64_t addr) const;
  // Channels are directed switch-to-switch links, 2 x link (+1 from its b end).
  int channel(int node, int port) const;
  // Throws UserError if the region's trees, with the unicast and home routes
  // on the same virtual channel, can wait on each other in a cycle: Klenk
  // §IV-E2 avoids deadlock by keeping multicast paths to unicast ones.
  void check_deadlock_free(const Region& g) const;

  const Topology& topo_;
  HomeMapping homes_;
  bool aggregation_trees_ = false;
  std::function<bool(int node)> can_reduce_;
  bool deadlock_checks_;
  std::vector<std::vector<int>> unicast_deps_;  // [channel] -> channels a packet holding it may wait for
  std::vector<Region> regions_;  // removed ones have size 0 and are reused
  std::vector<bool> windows_;    // [window]: claimed
  std::vector<int> tenants_;     // [window]: the job that claimed it, -1 if none
  int tenant_ = -1;              // the job whose collectives claim windows now
  GroupLimit limit_;
  std::vector<std::vector<int>> window_switches_;  // [window]: the switches it holds a group at
};

}  // namespace incsim::topo
