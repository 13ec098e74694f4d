#pragma once
// The GPU fabric ("nvlink"): GPUs and credit-based switches exchanging
// flit-sized packets on four VCs with credit flow control (Klenk §V;
// docs/architecture.md, "The packet and its protocol"). One switch per
// switch node, each with that node's links and the family's latency: an
// NvSwitch (multicast and reduction tables) for an NVSwitch and a fat
// tree's router, a CreditSwitch for the other routers and a DGX-1's NVLink
// bridges, PCIe switches, CPU sockets and network switch. One Gpu per
// endpoint, with a schedule-table NIC inside as gpuN.nic. Buffers are sized from each link's
// round trip; routes, VC rules and multicast regions come from the graph.
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <vector>

#include "gpu/gpu.h"
#include "machine.h"
#include "nvswitch/nvswitch.h"
#include "topology/multicast.h"

namespace incsim::platforms {

// The quantities of Klenk's Little's-law table sizing, Eq. (1) and (2),
// for this platform (measured from GPU 0's ports).
struct LittleLaw {
  double b_in_GBps = 0;  // a GPU's injection bandwidth
  int d_max = 0;         // the most switches between two GPUs
  double l_hop_ns = 0;   // a switch, a wire and a packet's serialization
  double l_gpu_ns = 0;   // mean GPU memory response latency
  int switch_ports = 0;  // over every switch: Eq. (2)'s table is the whole network's
  int access_ports = 0;  // GPU 0's: Eq. (1)'s is its first-hop switch ports'
  int gpus = 0;
  // C_min per switch port: Eq. (2) over every port; Eq. (1) for a reduction
  // of p GPUs, over a GPU's access ports.
  double push_per_port() const;
  // How long a push entry may wait for its block's other contributions in
  // tables of `per_port` bytes, ns: Eq. (2) read backwards (the tables of
  // every port over B_in), never below the d_max x L_hop Eq. (2) assumes.
  // A table sized above C_min, as a trunk's queueing needs, keeps its
  // entries that much longer before the timeout sends them home.
  double push_lifetime_ns(uint32_t per_port) const;
  double pull_per_port(int p) const;
};

// The GPUs' clock and memory latency and jitter as the fabric reads them
// (the rest of the config is left at its defaults).
gpu::GpuConfig gpu_memory(Config& cfg, const PlatformDefaults& d);

// Klenk's quantities measured on graph t (GPU 0's NVLink ports), for the
// switches' latency, the largest packet's wire bytes and the GPUs' memory.
LittleLaw little_law_of(const topo::Topology& t, double switch_latency_ns, uint32_t max_packet_bytes,
                        const gpu::GpuConfig& gc);
// The same as flows read it: the switches' latency and the GPUs' memory
// from cfg, the largest packet of the GPU fabric's format `gpu`.
LittleLaw flow_little_law(const topo::Topology& t, Config& cfg, const PlatformDefaults& d, const flow::LinkFormat& gpu);

// The switches' reduction tables as a run sets them: switch.reduction_table.bytes
// (else d's, else C_min by d's rule; auto: C_min), and per port of every
// NVLink switch a switch's or a port's own key over it (sw3.reduction_table.bytes,
// sw3.port5.reduction_table.bytes). All 0 where d reads no tables. Throws
// UserError for a table below one entry.
struct TableBytes {
  uint32_t all = 0;
  std::vector<std::vector<uint32_t>> port;  // [node][port]; empty but at NVLink switches
  uint64_t total = 0;                       // in whole entries, over every port
};
// by_rule: C_min per port in whole entries (table_by_rule), asked for only
// where a size is left to the rule.
TableBytes table_bytes_of(const topo::Topology& t, Config& cfg, const PlatformDefaults& d,
                          const std::function<uint32_t()>& by_rule, uint32_t entry_bytes);
// Wave counters per copy engine by default (Klenk Fig. 7: push 16, pull 4
// on DGX-2; Fig. 8: 64 and 16 on the fat tree); 0 for neither.
int default_waves(const topo::Topology& t, bool push, bool pull);
// The bytes push's waves keep in flight per GPU (gpu.copy_engine.waves x
// wave_bytes, at their defaults where not set).
uint64_t push_window_bytes(Config& cfg, const topo::Topology& t);

// C_min per port by d's rules (the larger where push and pull both run), in
// whole entries of entry_bytes, and for push at least push_window over the
// ports: Klenk §IV-F1 keeps no more in flight than the tables hold, and
// waves beyond them evict (docs/in-network.md); 0 without a rule.
uint32_t table_by_rule(const LittleLaw& ll, const PlatformDefaults& d, uint32_t entry_bytes, uint64_t push_window);

// Klenk's C_min for the tables a reduction of p GPUs uses (Eq. (1) for
// pull, (2) for push), beside the configured size, in one header line (with
// push's waves where they ask more), and a second where the table is
// smaller; returns whether it is.
bool print_table_sizing(std::ostream& os, const LittleLaw& ll, uint32_t table_bytes, bool pull, int p,
                        uint64_t push_window);

// A header line where the platform's real switches cannot do what an
// in-switch algorithm asks of them (hgx-a100's NVSwitch), so the run is a
// what-if; nothing elsewhere.
void print_switches_what_if(std::ostream& os, const topo::Topology& t, const std::string& algorithm);

class GpuFabric : public Fabric {
 public:
  static constexpr const char* kName = "nvlink";
  // Reads every switch, GPU and packet parameter, per switch and per port
  // where an instance key overrides the type's; throws UserError for any bad
  // value before the first module is built.
  GpuFabric(const topo::Topology& t, Config& cfg, uint64_t seed, const PlatformDefaults& d);

  net::PacketFormat packet_format() const override { return fmt_; }
  // The fabric manager's multicast regions, which every switch reads.
  topo::MulticastFabric& multicast() const { return *multicast_; }
  topo::MulticastFabric* multicast_manager() override { return multicast_.get(); }
  const credit_switch::SwitchConfig& switch_config() const { return sw_; }
  const nvswitch::TableConfig& table_config() const { return tables_; }
  // The reduction tables' sharing first, then the multicast groups' and the NICs' schedule tables'.
  std::vector<nvswitch::TableSharing*> table_sharings() const override {
    return {tables_.sharing.get(), groups_sharing_.get(), nic_sharing_.get()};
  }
  // Schedule tables a NIC holds (nic.tables; 0: any number), and how jobs share them.
  uint32_t nic_tables() const { return nic_tables_; }
  const nvswitch::TableSharing& nic_sharing() const { return *nic_sharing_; }
  const gpu::GpuConfig& gpu_config() const { return gc_; }
  const LittleLaw& little_law() const { return little_law_; }
  // The slowest request-response loop: the longest link there and back, a
  // switch, and the largest memory latency.
  sc_core::sc_time longest_round_trip() const { return longest_round_trip_; }
  // Reduction table bytes over every switch port (Klenk §IV-F1: C).
  uint64_t total_table_bytes() const { return table_bytes_total_; }

  std::unique_ptr<net::Block> make_switch(int node, net::PacketPool& pool) const;
  std::unique_ptr<net::Block> make_gpu(int node, net::PacketPool& pool) const;

 private:
  const topo::Topology& t_;
  net::PacketFormat fmt_;
  std::unique_ptr<topo::MulticastFabric> multicast_;
  credit_switch::SwitchConfig sw_;
  nvswitch::TableConfig tables_;
  std::shared_ptr<nvswitch::TableSharing> groups_sharing_;  // switch.multicast.policy
  uint32_t nic_tables_ = 0;
  std::shared_ptr<nvswitch::TableSharing> nic_sharing_;  // nic.tables.policy
  gpu::GpuConfig gc_{};
  LittleLaw little_law_;
  sc_core::sc_time longest_round_trip_;
  uint64_t table_bytes_total_ = 0;
  // [node][port]: input buffer and output queue bytes per VC; a switch's
  // reduction table bytes per port and latency.
  std::vector<std::vector<uint32_t>> in_bytes_, out_bytes_, table_bytes_;
  std::vector<double> latency_ns_;
};

// A switch node's routing tables and what each port faces, from the graph
// (every fabric's switches are routed by the graph's shortest paths).
credit_switch::SwitchWiring switch_wiring(const topo::Topology& t, int node);

// Whether a switch node may hold a group's home ports (where pushes reduce),
// at packet level and as flows: this fabric's in-network switches, and
// another fabric's switches (a cluster's InfiniBand switches, SHARP's),
// never a bridge (a GPU's adapter routes like a switch).
bool holds_homes(const topo::Topology& t, int node);

// A switch node of this fabric built as a plain credit-based switch, without
// multicast or reduction tables (a torus router, a DGX-1's PCIe switch).
bool is_plain_switch(const topo::Topology& t, int node);

// Throws the UserError packet level's multicast fabric throws where the
// multicast paths of these groups (each its GPUs' endpoint indices) can
// deadlock (Klenk §IV-E2): for flows, which build no such fabric.
void check_multicast_paths(const topo::Topology& t, const std::vector<std::vector<int>>& groups);

void register_nvlink_fabric();

}  // namespace incsim::platforms
