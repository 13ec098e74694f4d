// The in-network operations of the GPUs' cores as flows (docs/flow.md): NVLS's
// multimem loads and stores (gpu/cores_rank_innet.cpp) and SHARP's reducing
// writes, each one flow of its shape (flow/innet.h).
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "flow/cores_flows.h"
#include "flow/cores_run.h"
#include "topology/multicast.h"

namespace incsim::flow {

namespace {

constexpr double kBlock = topo::MulticastFabric::kBlockBytes;  // an in-network packet's most data

}  // namespace

void CoresFlows::Run::start_innet(Queue& q, int i, uint64_t pass) {
  Rank& k = *q.rank;
  const Operation& o = op(k.r, i);
  const uint64_t len = elements(k, o.src, pass);
  q.sending = true;
  transfers_ += stands_for(k.r, i);
  if (o.kind == OpKind::ReduceWrite) {
    join_reduce_write(q, i, pass, len);
    return;
  }
  if (len == 0) {
    if (o.kind == OpKind::ReduceRead) wrote(k, o.dst, pass, 0);
    issued_innet(q, i, pass, true);
    return;
  }
  if (o.kind == OpKind::ReduceRead) start_reduce_read(q, i, pass, len);
  else start_multicast(q, i, pass, len);
}

// The queue has issued operation i's pass (and, but for a reducing write,
// which is done as its sum lands, finished it).
void CoresFlows::Run::issued_innet(Queue& q, int i, uint64_t pass, bool done) {
  q.sending = false;
  ++q.sent;
  if (done) op_done(*q.rank, i, pass);
  progress(q);
}

// A reader's requests leave at once, spread over its ports a block at a
// time, each port taking its reads' blocks in turn, and the members answer
// each port's requests in order (gpu/cores_rank_innet.cpp, gpu/gpu.cpp). So
// the reads of a reader's channels share its rate until their last round of
// blocks (at most one on each port: all of a read with fewer blocks than
// ports), and those last rounds are answered one read after another: the
// first channel's sum is back while the last one's are still on the way,
// and its stores go out meanwhile. A flow shared fairly to the end would
// hold every channel's stores back until all reads were done.
void CoresFlows::Run::start_reduce_read(Queue& q, int i, uint64_t pass, uint64_t len) {
  const InNetwork::Shape& shape = f_.innet_.shape_of(q.rank->r, op(q.rank->r, i));
  const double bytes = static_cast<double>(len * f_.elem_);
  const double blocks = std::ceil(bytes / kBlock);
  const double last = bytes - std::floor((blocks - 1) / shape.ports) * shape.ports * kBlock;
  const double began = net_->now(), rtt = shape.latency;
  int table = -1;
  if (shape.table_rate > 0) {
    Rank& k = *q.rank;
    int& link = shared_ ? f_.shared_->table_links.try_emplace(f_.endpoints_[static_cast<size_t>(k.r)], -1).first->second
                        : k.table_link;
    if (link < 0) link = net_->add_link(shape.table_rate);
    table = link;
  }
  // Made as each flow starts: a read waiting for its last round holds no copy.
  const auto uses = [this, &shape, &q, i, table] {
    std::vector<Network::Use> u = classed(shape.uses, q.rank->r, i);
    if (table >= 0) u.push_back({table, 1.0});
    return u;
  };
  LastRounds& rounds = last_rounds_[&shape];
  auto read_last = [this, &q, i, pass, len, rtt, blocks, began, last, uses, &rounds] {
    flow(uses(), last, 0, [this, &q, i, pass, len, rtt, blocks, began, &rounds] {
      // The last request has left; its answers come back a round trip and
      // a member's memory access later.
      after(rtt + last_mem(net_->now() - began, static_cast<uint64_t>(blocks), 1), [this, &q, i, pass, len] {
        wrote(*q.rank, op(q.rank->r, i).dst, pass, len);
        issued_innet(q, i, pass, true);
      });
      read_done(rounds);
    });
  };
  if (bytes > last) flow(uses(), bytes - last, 0, [this, &rounds, read_last] { last_round(rounds, read_last); });
  else last_round(rounds, std::move(read_last));
}

// The front's read runs moved out of the queue (what it starts may queue
// more), its emptied place the front until read_done.
void CoresFlows::Run::last_round(LastRounds& l, Network::Callback read) {
  l.push_back(std::move(read));
  if (l.size() == 1) Network::Callback(std::move(l.front()))();
}

void CoresFlows::Run::read_done(LastRounds& l) {
  l.pop_front();
  if (!l.empty()) Network::Callback(std::move(l.front()))();
}

// Posted, so the queue goes on once the last store has left.
void CoresFlows::Run::start_multicast(Queue& q, int i, uint64_t pass, uint64_t len) {
  const InNetwork::Shape& shape = f_.innet_.shape_of(q.rank->r, op(q.rank->r, i));
  const double bytes = static_cast<double>(len * f_.elem_);
  after(access(), [this, &q, i, pass, &shape, bytes] {  // the cores read the data first
    const double start = net_->now();
    flow(classed(shape.uses, q.rank->r, i), bytes, 0, [this, &q, i, pass, &shape, bytes, start] {
      const int r = q.rank->r;
      const std::vector<int>& members = p_.groups[static_cast<size_t>(op(r, i).group)];
      const double last = last_mem(net_->now() - start, static_cast<uint64_t>(std::ceil(bytes / kBlock)), 1);
      for (size_t j = 0, e; j < members.size(); j = e) {  // members that land at once, in one event
        for (e = j + 1; e < members.size() && shape.to_member[e] == shape.to_member[j]; ++e) {
        }
        land_after(shape.to_member[j] + last, {r, i, pass, static_cast<uint32_t>(j), static_cast<uint32_t>(e)});
      }
      issued_innet(q, i, pass, true);
    });
  });
}

// The flow starts once the last member has issued its pass (the switches can
// sum nothing before); each member's credits cap it by Little's law.
void CoresFlows::Run::join_reduce_write(Queue& q, int i, uint64_t pass, uint64_t len) {
  Rank& k = *q.rank;
  const Operation& o = op(k.r, i);
  const std::vector<int>& members = p_.groups[static_cast<size_t>(o.group)];
  const auto key = std::make_tuple(o.group, collectives::message_chunk(p_, k.r, o.src), pass);
  auto& joined = joins_[key];
  joined.emplace_back(&q, i);
  if (joined.size() < members.size()) return;
  const std::vector<std::pair<Queue*, int>> all = std::move(joined);
  joins_.erase(key);
  const InNetwork::Shape& shape = f_.innet_.shape_of(k.r, op(k.r, i));
  std::vector<Network::Use> uses = classed(shape.uses, k.r, i);
  // A block's credit is back when its sum has landed: credits x 128 B per round trip.
  const double rtt = shape.latency + mem();
  for (const auto& [queue, op_index] : all) {
    if (queue->credits_link < 0)
      queue->credits_link = net_->add_link(f_.costs_.push_credits * kBlock / rtt);
    uses.push_back({queue->credits_link, 1.0});
  }
  // A queue has issued its pass when its last block has left, its credits'
  // worth still on the way: the flow's last window goes on as a flow of its
  // own while the queues go on.
  const double bytes = static_cast<double>(len * f_.elem_);
  const double window = std::min(bytes, f_.costs_.push_credits * kBlock);
  // Sums from across nodes reach the cores through NCCL's proxies, as a
  // step between nodes does (CoresCosts::net; SHARP runs Simple).
  const auto endpoint = [&](int r) { return f_.endpoints_[static_cast<size_t>(r)]; };
  const bool spans = std::any_of(members.begin(), members.end(),
                                 [&](int r) { return f_.costs_.net.across(endpoint(r), endpoint(members.front())); });
  const double latency = shape.latency + (spans ? 1e3 * f_.costs_.net.step_us(Protocol::Simple) : 0);
  after(access(), [this, all, uses = std::move(uses), bytes, window, latency, pass] {
    const double start = net_->now();
    flow(uses, bytes - window, 0, [this, all, uses, bytes, window, latency, pass, start] {
      for (const auto& [queue, op_index] : all) issued_innet(*queue, op_index, pass, false);
      flow(uses, window, 0, [this, all, bytes, latency, pass, start] {
        const double last = last_mem(net_->now() - start, static_cast<uint64_t>(std::ceil(bytes / kBlock)), 1);
        const int r = all.front().first->rank->r, i = all.front().second;
        after(latency + last, [this, r, i, pass, all] {  // at every member at once, in the order they joined
          for (const auto& member : all) land(r, i, pass, member.first->rank->r);
        });
      });
    });
  });
}

void CoresFlows::Run::land_after(double delay, const Landing& l) {
  const int k = free_slot(landings_, free_landings_);
  landings_[static_cast<size_t>(k)] = l;
  after(delay, [this, k] {
    const Landing x = landings_[static_cast<size_t>(k)];
    free_landings_.push_back(k);
    const std::vector<int>& members = p_.groups[static_cast<size_t>(op(x.from, x.i).group)];
    for (uint32_t j = x.begin; j < x.end; ++j)
      if (members[j] != x.from) land(x.from, x.i, x.pass, members[j]);
  });
}

// Rank `from`'s operation i's pass lands at `member`: each of its chunks at
// the member's operation that receives it.
void CoresFlows::Run::land(int from, int i, uint64_t pass, int member) {
  const Operation& o = op(from, i);
  Rank& k = *ranks_[static_cast<size_t>(member)];
  const ChunkRef ref = o.kind == OpKind::ReduceWrite ? o.dst : o.src;
  // In order, each once (land runs from events only, so the scratch is its own).
  std::vector<int>& receivers = receivers_;
  receivers.clear();
  for (uint32_t j = 0; j < ref.count; ++j) {
    const ChunkRef c{ref.index + j, 1, ref.buf};
    const int64_t m = collectives::message_chunk(p_, from, c);
    const auto taker = k.receiver.find(received(o.group, m));
    if (taker == k.receiver.end()) continue;  // its own store back (multimem), or nothing here takes it
    const int at = taker->second;
    uint64_t first, n;
    layout_->range(pass, static_cast<uint32_t>(m), first, n);
    const uint64_t key = static_cast<uint64_t>(at) << 32 | pass;
    const auto it = landed_at(k, key);
    if (it == k.landed.end()) k.landed.emplace_back(key, n);
    else it->second += n;
    receivers.push_back(at);
  }
  std::sort(receivers.begin(), receivers.end());
  receivers.erase(std::unique(receivers.begin(), receivers.end()), receivers.end());
  for (int at : receivers) land_passes(k, at);
}

void CoresFlows::Run::land_passes(Rank& k, int i) {
  const Operation& o = op(k.r, i);
  uint64_t& done = k.ops[static_cast<size_t>(i)].done_passes;
  const uint64_t passes = passes_of(o);
  while (done < passes) {
    const uint64_t pass = done;
    const auto it = landed_at(k, static_cast<uint64_t>(i) << 32 | pass);
    const uint64_t need = elements(k, o.dst, pass);
    if ((it == k.landed.end() ? 0 : it->second) < need) return;
    if (it != k.landed.end()) {
      *it = k.landed.back();
      k.landed.pop_back();
    }
    op_done(k, i, pass);
    if (done == passes) part_done(k);
  }
}

}  // namespace incsim::flow
