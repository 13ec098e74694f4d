#include "collectives/copy_plan.h"

#include "collectives/layout.h"

namespace incsim::collectives {

CopyPlan::CopyPlan(const Program& p, int r, uint64_t blocks)
    : p_(&p), r_(r), ops_(static_cast<size_t>(p.op_count(r))), dependents_(p, r), left_(p.op_count(r)) {
  const uint64_t chunks = message_chunks(p);
  for (int i = 0; i < size(); ++i) {
    Op& x = ops_[static_cast<size_t>(i)];
    const Operation& o = p.op(r, i);
    x.issues = copy_issues(o);
    const ChunkRef moved = x.issues && !o.src.empty() ? o.src : !o.dst.empty() ? o.dst : o.src;
    if (!moved.empty()) {
      const auto m = static_cast<uint64_t>(message_chunk(p, r, moved));
      x.lo = chunk_start(m, blocks, chunks);
      x.hi = chunk_start(m + moved.count, blocks, chunks);
    }
    x.deps_left = static_cast<int>(o.dep_count);
  }
  for (int i = 0; i < size(); ++i) {
    const Operation& o = p.op(r, i);
    if (o.kind != OpKind::MulticastWrite || !ops_[static_cast<size_t>(i)].issues || o.src.buf != Buffer::Output) continue;
    ops_[static_cast<size_t>(i)].streamed = true;
    ops_[p.deps_of(o)[0]].stream_to = i;
  }
}

int CopyPlan::finish(int i) {
  Op& x = ops_[static_cast<size_t>(i)];
  x.done = true;
  --left_;
  for (int d : dependents_.of(i))
    if (!ops_[static_cast<size_t>(d)].streamed) --ops_[static_cast<size_t>(d)].deps_left;
  return x.stream_to >= 0 && !ops_[static_cast<size_t>(x.stream_to)].done ? x.stream_to : -1;
}

}  // namespace incsim::collectives
