#include "scheduled_collective.h"

#include <algorithm>
#include <cassert>
#include <numeric>

#include "collectives/bounds.h"
#include "collectives/program_synthesis.h"

namespace incsim::nic {

ScheduledCollective::ScheduledCollective(const collectives::Program& program, std::vector<Nic*> nics,
                                         const topo::Topology& t, collectives::DType dtype, collectives::RedOp redop,
                                         uint64_t seed, FlowControl flow_control, StepEstimate estimate,
                                         double endpoint_GBps, Execution execution)
    : schedule_(collectives::schedule_of(program)),
      nics_(std::move(nics)),
      dtype_(dtype),
      redop_(redop),
      data_(seed, static_cast<int>(nics_.size()), dtype, redop),
      flow_control_(flow_control),
      estimate_(estimate),
      endpoint_GBps_(endpoint_GBps),
      execution_(std::move(execution)) {
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
  for (int r = 0; r < n; ++r) {
    // A message to rank d is split over the ports that lead to d.
    std::vector<std::vector<int>> ports_to(n);
    if (!execution_.ports_to.empty()) ports_to = execution_.ports_to[r];
    else
      for (int d = 0, node = t.endpoints()[endpoint_of[r]]; d < n; ++d)
        for (int p = 0; p < t.node(node).ports && d != r; ++p)
          if (t.port_reaches({node, p}, static_cast<int>(endpoint_of[d]))) ports_to[d].push_back(p);
    // The schedule table and where rank r's messages go (MultiTree §IV-A: the
    // table is initialized before the all-reduce).
    NicJob job;
    job.rank = r;
    job.schedule = &schedule_;
    job.endpoint_of = endpoint_of;
    job.table_of = table_of;
    job.ports_to = std::move(ports_to);
    if (!execution_.tree_ports.empty()) job.tree_ports = execution_.tree_ports[r];
    job.data = &data_;
    job.dtype = dtype_;
    job.redop = redop_;
    job.params = params_for(4);
    tables_.push_back(&nics_[r]->load(std::move(job)));
  }
}

ScheduledCollective::~ScheduledCollective() {
  for (size_t r = 0; r < tables_.size(); ++r) nics_[r]->unload(*tables_[r]);
}

NicParams ScheduledCollective::params_for(uint64_t bytes) const {
  // The largest flow is the step's message.
  const uint32_t elem = collectives::dtype_bytes(dtype_);
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
  p.dataflow = execution_.dataflow;
  return p;
}

void ScheduledCollective::start(uint64_t bytes, std::function<void()> on_done) {
  on_done_ = std::move(on_done);
  layout_ = {};
  const uint32_t elem = collectives::dtype_bytes(dtype_);
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

uint64_t ScheduledCollective::wrong() const {
  uint64_t w = 0;
  for (const Table* t : tables_) w += t->wrong();
  return w;
}

double ScheduledCollective::done_fraction() const {
  uint64_t issued = 0, all = 0;
  for (const Table* t : tables_) t->entries(issued, all);
  return all ? static_cast<double>(issued) / static_cast<double>(all) : -1;
}

double ScheduledCollective::bound_us(uint64_t bytes) const {
  if (execution_.algbw_bound_GBps > 0) return static_cast<double>(bytes) / (execution_.algbw_bound_GBps * 1e3);
  return collectives::bandwidth_bound_us(bytes, busbw_factor(), endpoint_GBps_);
}

double ScheduledCollective::busbw_factor() const {
  if (schedule_.broadcast_root != collectives::kNil) return 1.0;  // nccl-tests: broadcast
  return collectives::allreduce_busbw_factor(static_cast<int>(nics_.size()));
}

void ScheduledCollective::trace(sc_core::sc_trace_file* tf) const {
  for (const Table* t : tables_) t->trace(tf);
}

}  // namespace incsim::nic
