#include "collectives/table_program.h"

#include <algorithm>
#include <tuple>

#include "core/error.h"

namespace incsim::collectives {

TableProgramBuilder::TableProgramBuilder(std::string name, int nodes, int flows)
    : name_(std::move(name)), nodes_(nodes), chunks_(flows) {
  for (int f = 0; f < flows; ++f) flows_.push_back({f, 1, f});
}

TableProgramBuilder::TableProgramBuilder(std::string name, int nodes, std::vector<Flow> flows, int chunks)
    : name_(std::move(name)), nodes_(nodes), flows_(std::move(flows)), chunks_(chunks) {}

void TableProgramBuilder::reduce(int flow, int src, int dst, int step) { messages_.push_back({flow, src, dst, step, true}); }
void TableProgramBuilder::gather(int flow, int src, int dst, int step) { messages_.push_back({flow, src, dst, step, false}); }

Program TableProgramBuilder::build(bool nops) const {
  const int flows = static_cast<int>(flows_.size());
  std::vector<Message> m = messages_;
  std::stable_sort(m.begin(), m.end(), [](const Message& a, const Message& b) { return a.step < b.step; });
  int steps = 0;
  for (const Message& x : m) {
    if (x.flow < 0 || x.flow >= flows || x.src < 0 || x.src >= nodes_ || x.dst < 0 || x.dst >= nodes_ || x.step < 1 ||
        x.step > 65535)
      throw UserError(name_ + " sends flow " + std::to_string(x.flow) + " from node " + std::to_string(x.src) +
                      " to node " + std::to_string(x.dst) + " in step " + std::to_string(x.step) + ", outside its " +
                      std::to_string(flows) + " flows, " + std::to_string(nodes_) + " nodes or 65535 steps");
    steps = std::max(steps, x.step);
  }
  // [node]: the messages it sends or receives, in m's order (a pass over
  // all messages per node would cost nodes times messages).
  std::vector<std::vector<uint32_t>> touching(static_cast<size_t>(nodes_));
  for (uint32_t i = 0; i < m.size(); ++i) {
    touching[static_cast<size_t>(m[i].src)].push_back(i);
    if (m[i].dst != m[i].src) touching[static_cast<size_t>(m[i].dst)].push_back(i);
  }
  ProgramBuilder pb(name_, root_ == kNone ? Collective::AllReduce : Collective::Broadcast, nodes_, true);
  pb.program().root = root_ == kNone ? 0 : root_;
  const uint32_t chunks = static_cast<uint32_t>(chunks_);
  for (int u = 0; u < nodes_; ++u) {
    pb.begin_rank(u, Buffers{chunks, chunks, 0});
    // Sends before receives in a step, Reduce before Gather, then by flow.
    struct Event {
      int step, recv, gather, flow;
      Operation o;
    };
    std::vector<Event> events;
    std::vector<bool> busy(steps + 1, false), gathered(flows, false);
    const auto op = [&](OpKind k, const Message& x) {
      Operation o;
      o.kind = k;
      o.engine = Engine::NicTable;
      o.channel = static_cast<uint16_t>(flows_[x.flow].channel);
      o.timestep = static_cast<uint16_t>(x.step);
      const ChunkRef c = chunk(Buffer::Output, static_cast<uint32_t>(flows_[x.flow].start),
                               static_cast<uint16_t>(flows_[x.flow].size));
      if (k == OpKind::Send) {
        o.send_peer = x.dst;
        o.src = c;
      } else {
        o.recv_peer = x.src;
        o.dst = c;
      }
      events.push_back({x.step, k != OpKind::Send, !x.reduce, x.flow, o});
    };
    for (const uint32_t i : touching[static_cast<size_t>(u)]) {
      const Message& x = m[i];
      if (x.src == u) {
        op(OpKind::Send, x);
        busy[x.step] = true;
      }
      if (x.dst == u && x.reduce) op(OpKind::RecvReduceCopy, x);
      if (x.dst == u && !x.reduce && !gathered[x.flow]) {
        op(OpKind::Recv, x);
        gathered[x.flow] = true;
      }
    }
    for (int t = 1; t <= steps && nops; ++t)
      if (!busy[t]) {
        Operation o;
        o.engine = Engine::NicTable;
        o.timestep = static_cast<uint16_t>(t);
        events.push_back({t, 0, 2, kNone, o});
      }
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
      return std::tie(a.step, a.recv, a.gather, a.flow) < std::tie(b.step, b.recv, b.gather, b.flow);
    });
    for (const Event& e : events) pb.add(e.o);
  }
  return pb.build();
}

}  // namespace incsim::collectives
