#include "bounds.h"

#include <algorithm>
#include <vector>

namespace incsim::collectives {

double payload_bandwidth_GBps(double link_bw_GBps, uint32_t max_payload, uint32_t header_bytes,
                              uint32_t ack_bytes) {
  return link_bw_GBps * max_payload / (max_payload + header_bytes + ack_bytes);
}

double allreduce_busbw_factor(int n) { return 2.0 * (n - 1) / n; }

double gather_busbw_factor(int n) { return static_cast<double>(n - 1) / n; }

double bandwidth_bound_us(uint64_t bytes, double busbw_factor, double endpoint_GBps) {
  return busbw_factor * static_cast<double>(bytes) / endpoint_GBps / 1e3;
}

double pull_table_bytes(double b_in_GBps, int p, int d_max, double l_hop_ns, double l_gpu_ns) {
  return b_in_GBps / (p - 1) * (2.0 * d_max * l_hop_ns + l_gpu_ns);
}

double push_table_bytes(double b_in_GBps, int d_max, double l_hop_ns) { return b_in_GBps * d_max * l_hop_ns; }

double busbw_factor(Collective c, int n) {
  switch (c) {
    case Collective::AllReduce: return allreduce_busbw_factor(n);
    case Collective::Broadcast:
    case Collective::Reduce: return 1.0;
    // reduce-scatter, all-gather, all-to-all, gather, scatter (nccl-tests' factor (n-1)/n for each)
    default: return gather_busbw_factor(n);
  }
}

double cut_crossing(Collective c, int n, int from, int to, bool root_from) {
  if (from == 0 || to == 0) return 0;
  const double share_from = static_cast<double>(from) / n, share_to = static_cast<double>(to) / n;
  switch (c) {
    case Collective::AllReduce: return 1;
    case Collective::ReduceScatter: return share_to;  // the receiving side's blocks
    case Collective::AllGather: return share_from;    // the sending side's blocks
    case Collective::AllToAll: return from * share_to;  // each sender's block for each receiver
    case Collective::Broadcast: return root_from ? 1 : 0;
    case Collective::Reduce: return root_from ? 0 : 1;
    case Collective::Gather: return root_from ? 0 : share_from;
    case Collective::Scatter: return root_from ? share_to : 0;
  }
  return 0;
}

bool bound_charges_acks(const Program& p) {
  if (!p.groups.empty()) return false;
  switch (p.collective) {
    case Collective::Gather:
    case Collective::Scatter: return false;
    case Collective::Broadcast:
    case Collective::Reduce: return p.ranks > 2;
    default: return true;
  }
}

void sent_chunks(const Program& p, int r, const std::function<bool(int)>& near, double& inside, double& across) {
  for (int i = 0; i < p.op_count(r); ++i) {
    const Operation& o = p.op(r, i);
    if (o.kind == OpKind::ReduceWrite) {  // to its group's home switch, through the adapter if the group is far
      const auto& g = p.groups[o.group];
      const bool far = std::any_of(g.begin(), g.end(), [&](int m) { return m != r && !near(m); });
      (far ? across : inside) += o.src.count;
      continue;
    }
    if (in_network(o.kind)) {
      const bool out = o.kind == OpKind::MulticastWrite
                           ? !o.src.empty()
                           : o.kind == OpKind::ReduceRead && (p.multimem || o.dst.empty());
      if (out) inside += o.src.count;
      continue;
    }
    if (o.send_peer == kNone) continue;
    (near(o.send_peer) ? inside : across) += o.src.empty() ? o.dst.count : o.src.count;
  }
}

double busiest_moved(const Program& program) {
  std::vector<bool> reads(program.groups.size(), false);
  for (const Operation& o : program.ops)
    if (o.kind == OpKind::ReduceRead) reads[static_cast<size_t>(o.group)] = true;
  const Buffers& b = program.buffers[0];
  const double message = buffer_shape(program.collective) == Collective::AllGather ? b.output : b.input;
  double most = 0;
  for (int r = 0; r < program.ranks; ++r) {
    double sent = 0, across = 0, got = 0;
    sent_chunks(program, r, [](int) { return true; }, sent, across);
    for (int i = 0; i < program.op_count(r); ++i) {
      const Operation& o = program.op(r, i);
      // Under multimem the cores' stores (multimem.st) reach every member,
      // the writer too; the copy engines' multicast comes back only with the
      // results of a read the switches took its own copy for.
      const bool own_back = program.multimem && o.kind == OpKind::MulticastWrite && !o.src.empty() &&
                            (o.engine == Engine::Cores || reads[static_cast<size_t>(o.group)]);
      if (in_network(o.kind)) got += own_back ? o.src.count : o.dst.count;
    }
    most = std::max(most, std::max(sent, got) / message);
  }
  return most;
}

double moved_per_byte(const Program& p) {
  for (const Operation& o : p.ops)
    if (in_network(o.kind)) return busiest_moved(p);
  return busbw_factor(p.collective, p.ranks);
}

}  // namespace incsim::collectives
