#include "scheduled_collective.h"

#include <algorithm>
#include <cassert>
#include <numeric>

#include "collectives/bounds.h"
#include "core/error.h"

namespace incsim::nic {

ScheduledCollective::ScheduledCollective(const collectives::Program& program, std::vector<Nic*> nics,
                                         const topo::Topology& t, elements::DType dtype, elements::RedOp redop,
                                         uint64_t seed, FlowControl flow_control, StepEstimate estimate, int tenant)
    : schedule_(collectives::schedule_of(program)),
      nics_(std::move(nics)),
      dtype_(dtype),
      redop_(redop),
      data_(seed, static_cast<int>(nics_.size()), dtype, redop),
      flow_control_(flow_control),
      estimate_(estimate),
      dataflow_(program.dataflow) {
  const int n = static_cast<int>(nics_.size());
  assert(schedule_.nodes == n);
  const net::PacketFormat& f = nics_[0]->endpoint().pool().format();
  header_bytes_ = f.header_bytes;
  flit_bytes_ = f.flit_bytes;
  max_payload_ = f.max_payload_bytes;
  std::vector<uint32_t> endpoint_of(n);
  // Each rank's table on its NIC, named in the header of the messages to it:
  // table 0 everywhere unless other collectives hold tables there.
  std::vector<uint16_t> table_of(n);
  for (int r = 0; r < n; ++r) {
    endpoint_of[r] = static_cast<uint32_t>(nics_[r]->endpoint().index());
    table_of[r] = nics_[r]->free_table();
  }
  // A message to rank d is split over the ports that lead to d: those the
  // program's hint names (on the message's channel, the flow's tree, or on
  // every channel), else every port whose routes reach d.
  std::vector<std::vector<std::vector<int>>> ports_to(n, std::vector<std::vector<int>>(n));
  std::vector<std::vector<std::vector<std::vector<int>>>> tree_ports(n);
  for (const collectives::LinkHint& h : program.links) {
    if (h.rank < 0 || h.rank >= n || h.peer < 0 || h.peer >= n || h.rank == h.peer)
      throw UserError("a link hint leads rank " + std::to_string(h.rank) + " to rank " + std::to_string(h.peer) +
                      " of " + std::to_string(n));
    // A NIC tested alone, its endpoint in no topology, trusts its hints.
    const gpu::Gpu& from = nics_[h.rank]->endpoint();
    const bool placed = endpoint_of[h.rank] < t.endpoints().size();
    for (int p : h.ports)
      if (p >= from.num_ports() ||
          (placed && !t.port_reaches({t.endpoints()[endpoint_of[h.rank]], p}, static_cast<int>(endpoint_of[h.peer]))))
        throw UserError("rank " + std::to_string(h.rank) + "'s link hint to rank " + std::to_string(h.peer) +
                        " names port " + std::to_string(p) + " of " + from.name() + ", which does not lead there");
    if (h.channel == collectives::kNone) {
      ports_to[h.rank][h.peer] = h.ports;
      continue;
    }
    auto& trees = tree_ports[h.rank];
    if (static_cast<int>(trees.size()) <= h.channel) trees.resize(h.channel + 1, std::vector<std::vector<int>>(n));
    trees[h.channel][h.peer] = h.ports;
  }
  for (int r = 0; r < n; ++r)
    for (int d = 0; d < n; ++d) {
      if (d == r || !ports_to[r][d].empty()) continue;
      const int node = t.endpoints()[endpoint_of[r]];
      for (int p = 0; p < t.node(node).ports; ++p)
        if (t.port_reaches({node, p}, static_cast<int>(endpoint_of[d]))) ports_to[r][d].push_back(p);
    }
  for (int r = 0; r < n; ++r) {
    // The schedule table and where rank r's messages go (MultiTree §IV-A: the
    // table is initialized before the all-reduce).
    NicJob job;
    job.rank = r;
    job.schedule = &schedule_;
    job.endpoint_of = endpoint_of;
    job.table_of = table_of;
    job.ports_to = std::move(ports_to[r]);
    job.tree_ports = std::move(tree_ports[r]);
    job.data = &data_;
    job.dtype = dtype_;
    job.redop = redop_;
    job.params = params_for(4);
    job.tenant = tenant;
    tables_.push_back(&nics_[r]->load(std::move(job)));
  }
}

ScheduledCollective::~ScheduledCollective() {
  for (size_t r = 0; r < tables_.size(); ++r) nics_[r]->unload(*tables_[r]);
}

NicParams ScheduledCollective::params_for(uint64_t bytes) const {
  // The largest flow is the step's message.
  const uint32_t elem = elements::dtype_bytes(dtype_);
  uint64_t len = 0;
  for (const auto& c : schedule_.flows)
    len = std::max(len, collectives::slice_bytes(bytes, elem, schedule_.slices, c.start, c.size).length);
  const uint64_t packets = (len + max_payload_ - 1) / max_payload_;
  const uint64_t payload_flits = (len + flit_bytes_ - 1) / flit_bytes_;
  const uint64_t head_flits = flow_control_ == FlowControl::Message ? 1 : packets;
  const uint64_t head_flit_count = head_flits * ((header_bytes_ + flit_bytes_ - 1) / flit_bytes_);
  const uint64_t flits = payload_flits + head_flit_count;
  const uint64_t counted = flits <= estimate_.buffer_flits ? flits : flits - estimate_.buffer_flits;
  NicParams p;
  p.flow_control = flow_control_;
  const double ns = static_cast<double>(counted) * flit_bytes_ / estimate_.link_GBps;
  p.step_time = sc_core::sc_time(ns, sc_core::SC_NS);
  p.step_cycles = static_cast<uint32_t>(ns * estimate_.clock_ghz + 0.5);
  p.dataflow = dataflow_;
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
