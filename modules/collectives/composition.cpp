#include "collectives/composition.h"

#include <algorithm>
#include <set>

#include "core/error.h"

namespace incsim::collectives {

void add_groups(ProgramBuilder& b, Placement& pl) {
  pl.group_base = static_cast<int>(b.program().groups.size());
  for (const auto& g : pl.part->groups) {
    std::vector<int> mapped;
    for (int k : g) mapped.push_back(pl.ranks.at(k));
    b.add_group(std::move(mapped));
  }
}

Operation place(const Placement& pl, const Operation& o) {
  Operation w = o;
  if (o.send_peer != kNone) w.send_peer = pl.ranks.at(o.send_peer);
  if (o.recv_peer != kNone) w.recv_peer = pl.ranks.at(o.recv_peer);
  if (o.group != kNone) w.group = pl.group_base + o.group;
  w.channel = static_cast<uint16_t>(pl.channel + o.channel);
  w.queue = static_cast<uint16_t>(pl.queue + o.queue);
  const auto scale = [&pl](ChunkRef& c) {
    if (c.empty()) return;
    if (uint64_t{c.count} * pl.scale > 65535) throw UserError("a placed chunk spans more than 65535 chunks");
    c.index = c.index * pl.scale + pl.offset;
    if (pl.buffer) c.buf = *pl.buffer;
    c.count = static_cast<uint16_t>(c.count * pl.scale);
  };
  scale(w.src);
  scale(w.dst);
  if (pl.engine) w.engine = *pl.engine;
  return w;
}

std::vector<uint32_t> append_part(ProgramBuilder& b, const Placement& pl, int rank, const std::vector<uint32_t>& after) {
  const Program& p = *pl.part;
  const auto it = std::find(pl.ranks.begin(), pl.ranks.end(), rank);
  if (it == pl.ranks.end()) return {};
  const int k = static_cast<int>(it - pl.ranks.begin());
  const uint32_t base = static_cast<uint32_t>(b.program().ops.size() - b.program().rank_begin.back());
  std::vector<uint32_t> added;
  std::set<uint16_t> queues_seen;
  for (int i = 0; i < p.op_count(k); ++i) {
    const Operation& o = p.op(k, i);
    std::vector<uint32_t> deps;
    for (uint16_t d = 0; d < o.dep_count; ++d) deps.push_back(base + p.deps_of(o)[d]);
    if (queues_seen.insert(o.queue).second) deps.insert(deps.end(), after.begin(), after.end());
    added.push_back(static_cast<uint32_t>(b.add(place(pl, o), deps)));
  }
  return added;
}

}  // namespace incsim::collectives
