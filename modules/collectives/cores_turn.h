#pragma once
// A queue's turn on the GPUs' cores (Engine::Cores), as both executors
// take it, gpu::CoresRank at packet level and flow::CoresFlows as flows: a
// queue is NCCL's thread block, running its operations pass by pass. It
// completes its trailing receives whose data is in, in order, then starts
// its next operations until one must wait: for a dependency's pass, for a
// receive of the same pass, for its data to land, or for a free slot in
// the receiver's mailbox (NCCL_STEPS slots per connection). The executors
// move the data and keep the counters this reads. Plain C++, no SystemC.
#include <cstdint>

#include "collectives/program.h"

namespace incsim::collectives {

// A receive waiting on its queue for its data: operation op's pass, the
// connection's transfer idx.
struct PendingReceive {
  int op;
  uint64_t pass, idx;
};

// Takes queue q's turn. Queue has ops (the operations in order), next and
// total (its operation-passes started, and all), sending (a send in flight)
// and pending (PendingReceives, oldest first). A connection has claimed
// (transfers started, or receives claimed), done (flags stored, or slots
// freed) and seen (the other side's: slots freed, or transfers landed). The
// executor e gives an operation's connections (conn_in(i), conn_out(i)),
// the passes an operation has completed (done_passes(i)), and does the rest:
// complete_receive(q, pending), start_innet(q, i, pass), run_local(i, pass)
// and start_send(q, i, pass), the last setting q.sending.
template <class Queue, class Executor>
void take_turn(Queue& q, Executor& e, const Program& p, int rank, uint64_t slots) {
  for (;;) {
    while (!q.pending.empty()) {
      const PendingReceive pd = q.pending.front();
      const auto& c = e.conn_in(pd.op);
      if (c.seen <= pd.idx || c.done != pd.idx) break;
      q.pending.pop_front();
      e.complete_receive(q, pd);
    }
    if (q.sending || q.next == q.total) return;
    const int i = q.ops[q.next % q.ops.size()];
    const uint64_t pass = q.next / q.ops.size();
    const Operation& o = p.op(rank, i);
    // Within a pass a receive holds the queue; the next pass may go ahead.
    if (!q.pending.empty() && q.pending.back().pass == pass) return;
    const uint32_t* deps = p.deps_of(o);
    for (uint32_t d = 0; d < o.dep_count; ++d)
      if (e.done_passes(static_cast<int>(deps[d])) <= pass) return;
    if (in_network(o.kind)) {
      ++q.next;
      e.start_innet(q, i, pass);
      continue;
    }
    if (!sends(o.kind) && !receives(o.kind)) {
      ++q.next;
      e.run_local(i, pass);
      continue;
    }
    if (!sends(o.kind)) {
      q.pending.push_back({i, pass, e.conn_in(i).claimed++});
      ++q.next;
      continue;
    }
    if (receives(o.kind)) {
      const auto& in = e.conn_in(i);
      if (in.seen <= in.claimed) return;  // its data has not landed
    }
    const auto& out = e.conn_out(i);
    if (out.claimed >= out.seen + slots) return;  // the receiver's slot is not free
    ++q.next;
    e.start_send(q, i, pass);
  }
}

}  // namespace incsim::collectives
