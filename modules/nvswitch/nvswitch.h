#pragma once
// An NVSwitch (Klenk §IV): a credit-based switch (credit_switch/) with
// in-network collectives. The MCR table (sw3.mcr_table, this switch's
// entries of the fabric manager's MulticastFabric) gives the outputs a
// multicast is replicated to; a multicast advances to the outputs that can
// take it and takes the rest in later rounds. Each port (sw3.port5) has a
// reduction table at its output (sw3.port5.reduction_table, Fig. 5): push
// writes homed at the port are reduced there and the result multicast back
// into the crossbar through the port's injector; pull responses are reduced
// on their way to the requester. The tables are sc_modules without
// processes: the port's method calls them directly.
//
// An InfiniBand switch with SHARP's aggregation is this switch with tables
// that hold instead of evicting (TableConfig::holds), and that reduce, where
// the fabric manager's aggregation tree makes the switch a merge point
// (MulticastFabric::merge_count), the contributions passing toward a home
// elsewhere into one partial, a reducing write carrying their count.
#include <memory>
#include <ostream>
#include <string>
#include <systemc>

#include "core/log.h"
#include "credit_switch/credit_switch.h"
#include "eviction.h"
#include "nvswitch/mcr_table.h"
#include "nvswitch/reduction_table.h"
#include "nvswitch/table_sharing.h"
#include "topology/multicast.h"

namespace incsim::nvswitch {

// Its ports' reduction tables (Klenk §IV-D).
struct TableConfig {
  uint32_t table_bytes = 0;       // per port; 0: none
  uint32_t entry_bytes = 128;     // one aligned packet payload per entry (Klenk §IV-D)
  sc_core::sc_time table_timeout; // an idle push entry is evicted to its home GPU
  // Whom a push miss on a full table evicts (eviction.h); shared by the platform's switches.
  std::shared_ptr<EvictionPolicy> eviction;
  // How jobs share the tables (table_sharing.h); shared by the platform's switches.
  std::shared_ptr<TableSharing> sharing;
  // SHARP's aggregation tables (an InfiniBand switch): a push that finds its
  // port's table full waits at its input for an entry, entries neither
  // time out nor are evicted, and no partial sum ever leaves; the hosts'
  // credits keep the tables from filling (CoresParams::push_credits).
  bool holds = false;
  // ps a port's table ALU takes per byte it adds; 0: it keeps up with its
  // port and adds no time (Klenk's tables).
  double alu_ps_per_byte = 0;
};

class NvSwitch : public credit_switch::CreditSwitch {
 public:
  // fabric may be null: a platform without multicast regions.
  NvSwitch(sc_core::sc_module_name name, int ports, credit_switch::SwitchWiring wiring,
           const credit_switch::SwitchConfig& cfg,
           const TableConfig& tables, net::PacketPool& pool, const topo::MulticastFabric* fabric);

  // Reductions its ports' tables completed.
  uint64_t progress() const override;
  // A port whose reduction table differs from the switch's (a per-instance parameter).
  void set_table_bytes(int p, uint32_t bytes);
  void trace(sc_core::sc_trace_file* tf) const override;
  const ReductionTable& table(int p) const { return port_of(p).table; }
  // How jobs share its tables: its fabric's policy (TableConfig::sharing), or null.
  const TableSharing* sharing() const { return tables_.sharing.get(); }

 private:
  // A port with its reduction table (sw3.port5.reduction_table) and the
  // table's ALU; what the table emits (results, partials) enters the
  // crossbar through the port's injector.
  struct TablePort : Port {
    TablePort(sc_core::sc_module_name name, CreditSwitch* sw, int index) : Port(name, sw, index), table("reduction_table") {}
    // Output queues, link credits and the table, under this port's scope.
    void trace(sc_core::sc_trace_file* tf) const override;
    // A line per output queue that holds packets, and the table's.
    uint64_t report_held(std::ostream& os) const override;
    const char* injector_name() const override { return table.name(); }
    sc_core::sc_time alu_free;  // its table's ALU is busy until then (TableConfig::alu_ps_per_byte)
    // Holding tables: the writes waiting at an input for an entry here, each
    // counted once as its job's stall (TableSharing::Counters::stalls).
    std::vector<uint64_t> waiting;
    ReductionTable table;
  };
  TablePort& port_of(int o) const { return static_cast<TablePort&>(port(o)); }

  // The MCR table lookup: the multicast head's outputs.
  void replicate(net::Packet* head, int input) override;
  // Holding tables: toward the home by the aggregation tree's link, reduced
  // here at a merge point unless a table here made it.
  int16_t reduce_route(net::Packet* p, int input) override;
  bool can_absorb(int o, const net::Packet* h) override;
  // Push: reduces p into its entry (Klenk §IV-C).
  void absorb(int o, net::Packet* p, const sc_core::sc_time& now) override;
  net::Packet* pass_response(int o, net::Packet* p) override;
  int response_port(const net::Packet* p) override { return pull_port(p->dst, p->addr); }
  // Push entries idle for the timeout go to their home GPU.
  void tick(int o, const sc_core::sc_time& now, sc_core::sc_time& next) override;

  // The port a pull response for requester `src` leaves by, where its
  // request took a table entry: its route, except that over the last hop's
  // trunk the block address picks the link, so that request and responses agree.
  int pull_port(uint32_t src, uint64_t addr) const;
  net::Packet* pull_reduce(int o, net::Packet* p);
  // Port o's table emits entry e: a completed push result (multicast), a
  // completed merge (a partial toward the home port) or an evicted partial
  // for the home GPU.
  void emit(int o, int e, bool complete, const sc_core::sc_time& now, bool retry = true);
  void release_entry(int o, int e, bool retry);
  void retry_stalled(int o);
  // The job of a table address and its contention counters (TableSharing); null counters: no job.
  int tenant(uint64_t addr) const { return mcr_ ? mcr_->tenant(addr) : -1; }
  TableSharing::Counters* counters_of(int job) const {
    return tables_.sharing && tables_.sharing->holds(job) ? &tables_.sharing->counters(job) : nullptr;
  }

  TableConfig tables_;
  log::Logger log_;  // multicast replication
  std::unique_ptr<McrTable> mcr_;  // null on a platform without multicast regions
};

}  // namespace incsim::nvswitch
