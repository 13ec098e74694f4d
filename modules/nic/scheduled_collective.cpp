#include "scheduled_collective.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

#include "collectives/bounds.h"
#include "core/error.h"

namespace incsim::nic {

namespace {
// A grid node's interfaces, each a network link's bandwidth, in its link to
// its router (nic.interfaces); off a grid, one of that link's.
void interfaces_of(const topo::Topology& t, uint32_t endpoint, NicJob& job) {
  if (endpoint >= t.endpoints().size()) return;
  const int node = t.endpoints()[endpoint];
  const double own = t.links()[t.link_at({node, 0})].bw_GBps;
  const int router = t.peer({node, 0}).node;
  double net = 0;
  for (int p = 0; p < t.node(router).ports; ++p) {
    const topo::Link& l = t.links()[t.link_at({router, p})];
    if (l.dim >= 0) net = net == 0 ? l.bw_GBps : std::min(net, l.bw_GBps);
  }
  job.interfaces = net > 0 ? std::max(1, static_cast<int>(std::lround(own / net))) : 1;
  job.interface_GBps = own / job.interfaces;
}
}  // namespace

ScheduledCollective::ScheduledCollective(const collectives::Program& program, std::vector<Nic*> nics,
                                         const topo::Topology& t, elements::DType dtype, elements::RedOp redop,
                                         uint64_t seed, FlowControl flow_control, collectives::StepEstimate estimate,
                                         int tenant, Interfaces interfaces)
    : schedule_(collectives::schedule_of(program)),
      nics_(std::move(nics)),
      dtype_(dtype),
      redop_(redop),
      data_(seed, static_cast<int>(nics_.size()), dtype, redop),
      flow_control_(flow_control),
      estimate_(estimate),
      interfaces_(interfaces),
      dataflow_(program.dataflow) {
  const int n = static_cast<int>(nics_.size());
  assert(schedule_.nodes == n);
  const net::PacketFormat& f = nics_[0]->endpoint().pool().format();
  framing_ = {f.header_bytes, f.flit_bytes, f.max_payload_bytes, flow_control == FlowControl::Message};
  std::vector<uint32_t> endpoint_of(n);
  // Each rank's table on its NIC, named in the header of the messages to it:
  // table 0 everywhere unless other collectives hold tables there.
  std::vector<uint16_t> table_of(n);
  for (int r = 0; r < n; ++r) {
    endpoint_of[r] = static_cast<uint32_t>(nics_[r]->endpoint().index());
    table_of[r] = nics_[r]->free_table();
  }
  collectives::MessagePorts ports = collectives::message_ports(
      program, t, endpoint_of, [this](int r) { return nics_[r]->endpoint().num_ports(); },
      [this](int r) { return std::string(nics_[r]->endpoint().name()); });
  for (int r = 0; r < n; ++r) {
    // The schedule table and where rank r's messages go (MultiTree §IV-A: the
    // table is initialized before the all-reduce).
    NicJob job;
    job.rank = r;
    job.schedule = &schedule_;
    job.endpoint_of = endpoint_of;
    job.table_of = table_of;
    job.ports_to = std::move(ports.to[r]);
    job.tree_ports = std::move(ports.tree[r]);
    job.data = &data_;
    job.dtype = dtype_;
    job.redop = redop_;
    job.params = params_for(4);
    job.tenant = tenant;
    interfaces_of(t, endpoint_of[r], job);
    tables_.push_back(&nics_[r]->load(std::move(job)));
  }
}

ScheduledCollective::~ScheduledCollective() {
  for (size_t r = 0; r < tables_.size(); ++r) nics_[r]->unload(*tables_[r]);
}

NicParams ScheduledCollective::params_for(uint64_t bytes) const {
  const double ns = collectives::lockstep_ns(schedule_, bytes, elements::dtype_bytes(dtype_), framing_, estimate_);
  NicParams p;
  p.flow_control = flow_control_;
  p.step_time = sc_core::sc_time(ns, sc_core::SC_NS);
  p.step_cycles = static_cast<uint32_t>(ns * estimate_.clock_ghz + 0.5);
  p.dataflow = dataflow_;
  p.interfaces = interfaces_;
  return p;
}

void ScheduledCollective::start(uint64_t bytes, std::function<void()> on_done) {
  on_done_ = std::move(on_done);
  layout_ = {};
  const uint32_t elem = elements::dtype_bytes(dtype_);
  for (const auto& c : schedule_.flows)
    layout_.flows.push_back(collectives::slice_bytes(bytes, elem, schedule_.slices, c.start, c.size));
  std::vector<int> order(schedule_.flows.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return layout_.flows[a].offset < layout_.flows[b].offset; });
  for (int f : order) {
    if (layout_.flows[f].length == 0) continue;
    layout_.starts.push_back(layout_.flows[f].offset);
    layout_.starts_flow.push_back(f);
  }
  const NicParams params = params_for(bytes);
  running_ = static_cast<int>(nics_.size());
  for (Table* table : tables_)
    table->start(layout_, params, [this] {
      if (--running_ == 0 && on_done_) on_done_();
    });
}

uint64_t ScheduledCollective::wrong() const { return collectives::wrong(tables_); }

double ScheduledCollective::done_fraction() const { return collectives::done_fraction(tables_); }

void ScheduledCollective::trace(sc_core::sc_trace_file* tf) const {
  for (const Table* t : tables_) t->trace(tf);
}

}  // namespace incsim::nic
