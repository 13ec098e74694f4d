// An architect's own blocks, against the installed library, registered by
// name before a platform is built and chosen like built-in ones:
//
// - an eviction policy for the switches' reduction tables that, when a push
//   write misses a full table, evicts the entry that holds the most
//   contributions (its partial saves the home GPU the most work) instead of
//   the least recently used one (Klenk §IV-C), chosen with
//   switch.reduction_table.eviction. `custom_block fullest` (or `lru`, the
//   built-in) runs push all-reduce on DGX-2 with it in every switch port,
//   small tables forcing evictions, and #wrong checks that the partials
//   still add up;
// - a node kind, `retimer`: a 2-port block with its own ports that re-drives
//   every packet from one port out of the other after a fixed delay, as a
//   retimer on a long NVLink cable does. `custom_block retimer` runs the
//   ring all-reduce on retimed_pair.yaml, two switches joined through one.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <ostream>
#include <string>

#include "core/error.h"
#include "core/process.h"
#include "core/report.h"
#include "experiment.h"
#include "net/block.h"
#include "net/port.h"
#include "nvswitch/eviction.h"
#include "platforms/gpu_fabric.h"
#include "platforms/machine.h"

static const int kQuietBanner = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);

namespace {
using namespace incsim;

class FullestFirst : public nvswitch::EvictionPolicy {
 public:
  // job >= 0: one of that job's entries (it holds its share of the table).
  int victim(const nvswitch::ReductionTable& t, int job) override {
    int best = -1;
    for (int e = t.lru(); e >= 0; e = t.entry(e).next)  // every entry in use, least recently used first
      if (t.entry(e).owner == kPushOwner && (job < 0 || t.entry(e).job == job) &&
          (best < 0 || t.entry(e).count > t.entry(best).count))
        best = e;
    return best;
  }
};

// Cut-through: a packet may leave `delay` after its first flit came in, once
// the wire is free and the next hop has room (the link's credits); its input
// buffer space is freed as it leaves. One queue per VC, so responses never
// wait behind requests (Klenk §IV-E2).
class Retimer : public sc_core::sc_module, public net::PacketSink, public net::Block {
 public:
  Retimer(sc_core::sc_module_name name, sc_core::sc_time delay) : sc_core::sc_module(name), delay_(delay) {
    for (int s = 0; s < 2; ++s) {
      Side& side = sides_[s];
      spawn_method((std::string(basename()) + "_out" + std::to_string(s)).c_str(), [this, s] { serve(s); },
                   side.wake);
    }
  }

  int num_ports() const override { return 2; }
  net::InPort& in(int port) override { return sides_[port].in; }
  net::OutPort& out(int port) override { return sides_[port].out; }
  void configure_port(int port, double bw_GBps, sc_core::sc_time latency, uint32_t peer_buffer_bytes) override {
    sides_[port].out.configure(bw_GBps, latency, peer_buffer_bytes, &sides_[port].wake);
  }
  uint32_t buffer_bytes(int) const override { return kBufferBytes; }
  uint64_t progress() const override { return forwarded_; }

  void receive(int port, net::Packet* p) override {
    Side& out = sides_[1 - port];
    out.queue[p->vc].push(p);
    ++out.held;
    out.wake.at(p->t_head + delay_);
  }

  void trace(sc_core::sc_trace_file* tf) const override {
    for (int s = 0; s < 2; ++s)
      sc_core::sc_trace(tf, sides_[s].held, std::string(name()) + ".port" + std::to_string(s) + ".queue");
  }
  uint64_t report_held(std::ostream& os) const override {
    uint64_t n = 0;
    for (int s = 0; s < 2; ++s) {
      if (sides_[s].held) os << "  " << name() << " port " << s << ": " << sides_[s].held << " packets queued\n";
      n += static_cast<uint64_t>(sides_[s].held);
    }
    return n;
  }
  uint64_t forwarded() const { return forwarded_; }

 private:
  // 16 KiB per VC covers the credit loop of a 25 GB/s link of a few hundred ns.
  static constexpr uint32_t kBufferBytes = 16 * 1024;
  struct Side {
    Side(Retimer* owner, int s)
        : in(("port" + std::to_string(s) + "_in").c_str(), owner, s), out(("port" + std::to_string(s) + "_out").c_str()) {}
    net::InPort in;
    net::OutPort out;
    Wakeup wake;
    net::PacketFifo queue[net::kNumVcs];
    int held = 0;
  };

  // Sends at most one packet out of side s, the first eligible VC's with credit.
  void serve(int s) {
    Side& side = sides_[s];
    side.wake.fired();
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    side.out.absorb_credits(now);
    if (!side.out.link_free(now)) {
      side.wake.at(side.out.busy_until());
      return;
    }
    bool blocked = false;
    for (auto& q : side.queue) {
      if (q.empty()) continue;
      net::Packet* p = q.front();
      if (p->t_head + delay_ > now) {
        side.wake.at(p->t_head + delay_);
        continue;
      }
      if (!side.out.has_credit(p->vc, p->wire_bytes)) {
        blocked = true;
        continue;
      }
      q.pop();
      --side.held;
      ++forwarded_;
      sides_[1 - s].in.release(p, sc_core::SC_ZERO_TIME);
      side.out.send(p, now, p->t_tail + delay_);
      side.wake.at(side.out.busy_until());
      return;
    }
    if (blocked) side.out.wait_for_credit(now);
  }

  sc_core::sc_time delay_;
  Side sides_[2] = {Side(this, 0), Side(this, 1)};
  uint64_t forwarded_ = 0;
};
}  // namespace

int sc_main(int argc, char* argv[]) {
  using namespace incsim;
  nvswitch::register_eviction_policy("fullest", [] { return std::make_unique<FullestFirst>(); });
  // A node of kind retimer in a platform file is this block, on the GPU
  // fabric's links (the NVLink packet format and credits).
  platforms::register_node_kind(
      "retimer", platforms::GpuFabric::kName, topo::NodeKind::Switch,
      [](const topo::Topology& t, int node, platforms::Fabric&, net::PacketPool&) -> std::unique_ptr<net::Block> {
        const auto& n = t.node(node);
        if (n.ports != 2)
          throw UserError("node " + n.name + " is a retimer, which has 2 ports, not " + std::to_string(n.ports));
        // An assumption: a few ns to recover the clock and re-drive the lanes.
        return std::make_unique<Retimer>(n.name.c_str(), sc_core::sc_time(5, sc_core::SC_NS));
      });
  const std::string choice = argc > 1 ? argv[1] : "fullest";
  tb::Options o;
  o.sizes = "64K,1M";
  o.quiet = true;
  if (choice == "retimer") {
    o.platform = RETIMED_PAIR_YAML;
  } else {
    o.platform = "dgx2";
    o.algorithm = "push";
    o.params = {{"switch.reduction_table.eviction", choice, "custom_block"},
                // Tables of 4 entries and no wave limit on the copy engines: full tables, many evictions.
                {"switch.reduction_table.bytes", "512", "custom_block"},
                {"gpu.copy_engine.waves", "0", "custom_block"}};
  }
  try {
    install_report_handler(false);
    tb::Experiment e(o);
    e.print_header(std::cout);
    uint64_t wrong = 0;
    for (const auto& row : e.run(&std::cout)) wrong += row.wrong();
    for (const Retimer* r : e.machine().blocks_of<Retimer>())
      std::cout << "# " << r->name() << " forwarded " << r->forwarded() << " packets\n";
    std::cout << "# " << wrong << " wrong elements\n";
    return wrong == 0 ? 0 : 1;
  } catch (const UserError& err) {
    std::cerr << "custom_block: error: " << err.what() << "\n";
    return 2;
  }
}
