#include "collectives/layout.h"

#include <algorithm>
#include <map>

#include "collectives/program_synthesis.h"

namespace incsim::collectives {

uint32_t message_chunks(const Program& p) {
  const Buffers& b = p.buffers[0];
  if (p.collective == Collective::AllToAll) return b.input * static_cast<uint32_t>(p.ranks);
  return buffer_shape(p.collective) == Collective::AllGather ? b.output : b.input;
}

uint64_t message_elems(const Program& p, uint64_t elems) {
  return p.collective == Collective::AllToAll ? elems * static_cast<uint64_t>(p.ranks) : elems;
}

int64_t message_chunk(const Program& p, int rank, Buffer& buf, uint32_t& index) {
  const Buffers& b = p.buffers[rank];
  const uint32_t r = static_cast<uint32_t>(rank);
  int64_t message = -1;
  switch (buffer_shape(p.collective)) {
    case Collective::AllReduce:
    case Collective::Broadcast:
      if (buf == Buffer::Output && p.in_place) buf = Buffer::Input;
      if (buf != Buffer::Scratch) message = index;
      break;
    case Collective::ReduceScatter:
      if (buf == Buffer::Output && p.in_place) buf = Buffer::Input, index += r * b.output;
      if (buf == Buffer::Input) message = index;
      if (buf == Buffer::Output) message = r * b.output + index;
      break;
    case Collective::AllGather:
      if (buf == Buffer::Input && p.in_place) buf = Buffer::Output, index += r * b.input;
      if (buf == Buffer::Input) message = r * b.input + index;
      if (buf == Buffer::Output) message = index;
      break;
    case Collective::AllToAll: {  // out of place: rank j's output chunk s per + c is rank s's input chunk j per + c
      const uint32_t per = b.input / static_cast<uint32_t>(p.ranks);
      if (buf == Buffer::Input) message = r * b.input + index;
      if (buf == Buffer::Output) message = index / per * b.input + r * per + index % per;
      break;
    }
    default: break;  // buffer_shape gives the unrooted collectives only
  }
  return message;
}

uint64_t cores_kept_bytes(const Program& p, int r, uint64_t elems, uint32_t elem_bytes) {
  enum : uint8_t { kRead = 1, kWritten = 2 };
  std::vector<uint8_t> use[3];  // [canonical buffer][chunk]
  for (int i = 0; i < p.op_count(r); ++i)
    chunk_uses(p.op(r, i), [&](ChunkRef ref, bool write) {
      for (uint32_t k = 0; k < ref.count; ++k) {
        Buffer buf = ref.buf;
        uint32_t index = ref.index + k;
        message_chunk(p, r, buf, index);
        std::vector<uint8_t>& u = use[static_cast<int>(buf)];
        if (index >= u.size()) u.resize(index + 1, 0);
        u[index] |= write ? kWritten : kRead;
      }
    });
  uint64_t kept = 0;
  for (const std::vector<uint8_t>& u : use)
    kept += static_cast<uint64_t>(std::count(u.begin(), u.end(), kRead | kWritten));
  const uint64_t chunks = std::max<uint32_t>(message_chunks(p), 1);
  return kept * ((message_elems(p, elems) + chunks - 1) / chunks) * elem_bytes;
}

int64_t message_chunk(const Program& p, int rank, ChunkRef c) { return message_chunk(p, rank, c.buf, c.index); }

int result_owner(const Program& p, int64_t m) {
  switch (p.collective) {
    case Collective::AllGather:
    case Collective::Gather:
    case Collective::AllToAll: return static_cast<int>(m / p.buffers[0].input);
    case Collective::Broadcast:
    case Collective::Scatter: return p.root;
    default: return -1;
  }
}

PassLayout::PassLayout(int parts_, uint32_t blocks_, uint64_t chunk_elems_, uint64_t elems)
    : parts(parts_), blocks(blocks_), chunk_elems(chunk_elems_) {
  const uint64_t per_pass = chunk_elems * blocks;
  uint64_t at = 0;
  for (int g = 0; g < parts; ++g) {
    const uint64_t n = elems / parts + (static_cast<uint64_t>(g) < elems % parts ? 1 : 0);
    off.push_back(at);
    count.push_back(n);
    passes.push_back(std::max<uint64_t>(1, (n + per_pass - 1) / per_pass));
    at += n;
  }
}

uint64_t PassLayout::largest_chunk() const {
  uint64_t most = 1;
  for (uint64_t n : count) most = std::max(most, std::min(chunk_elems, (n + blocks - 1) / blocks));
  return most;
}

void PassLayout::locate(uint64_t e, uint32_t& m, uint64_t& pass) const {
  int g = parts - 1;
  while (g > 0 && off[g] > e) --g;
  const uint64_t per_pass = chunk_elems * blocks, rel = e - off[g];
  pass = rel / per_pass;
  const uint64_t pass_len = std::min(per_pass, count[g] - pass * per_pass);
  const uint64_t base = pass_len / blocks, rem = pass_len % blocks, x = rel - pass * per_pass;
  const uint64_t b = x < rem * (base + 1) ? x / (base + 1) : rem + (x - rem * (base + 1)) / base;
  m = static_cast<uint32_t>(b * static_cast<uint64_t>(parts) + static_cast<uint64_t>(g));
}

void PassLayout::range(uint64_t pass, uint32_t m, uint64_t& first, uint64_t& len) const {
  const int g = static_cast<int>(m % parts);
  const uint64_t b = m / parts, per_pass = chunk_elems * blocks, pass_off = pass * per_pass;
  const uint64_t pass_len = count[g] > pass_off ? std::min(per_pass, count[g] - pass_off) : 0;
  const uint64_t base = pass_len / blocks, rem = pass_len % blocks;
  len = base + (b < rem ? 1 : 0);
  first = off[g] + pass_off + b * base + std::min(b, rem);
}

ChannelParts channel_parts(const Program& p) {
  ChannelParts cp;
  const uint32_t message = message_chunks(p);
  // The channels split the message when each touches only its own chunks
  // (a relay channel, its data channel's).
  for (const Operation& o : p.ops) cp.channels = std::max(cp.channels, o.channel + 1);
  if (p.data_channels) cp.channels = p.data_channels;
  cp.parts = message % static_cast<uint32_t>(cp.channels) == 0 ? cp.channels : 1;
  for (int r = 0; r < p.ranks; ++r) {
    std::map<int, int> queue_channel;  // queue: its data channel
    for (int i = 0; i < p.op_count(r); ++i) {
      const Operation& o = p.op(r, i);
      const int data_channel = o.channel % cp.channels;
      if (queue_channel.emplace(o.queue, data_channel).first->second != data_channel) cp.parts = 1;
      for (ChunkRef ref : {o.src, o.dst})
        for (uint32_t k = 0; k < ref.count; ++k) {
          Buffer buf = ref.buf;
          uint32_t index = ref.index + k;
          const int64_t m = message_chunk(p, r, buf, index);
          if (m >= 0 && m % cp.parts != o.channel % static_cast<uint32_t>(cp.parts)) cp.parts = 1;
        }
    }
  }
  return cp;
}

uint64_t nccl_slice_bytes(uint64_t step_bytes, uint64_t simple) {
  constexpr uint64_t kSlicePerChunk = 2, kStepPerSlice = 2, kAlign = 16;
  const uint64_t half = (step_bytes + kSlicePerChunk * kAlign - 1) / (kSlicePerChunk * kAlign) * kAlign;
  return std::max(half, simple * kStepPerSlice / 32);
}

uint64_t cores_chunk_bytes(const Program& p, Protocol proto, uint64_t bytes, uint64_t step, uint64_t simple,
                           bool nccl_slices) {
  const uint32_t message = message_chunks(p);
  if (p.tree_nodes)
    return p.groups.empty() ? tree_chunk_bytes(proto, bytes, static_cast<int>(message), p.ranks, p.tree_nodes, step)
                            : nvls_tree_chunk_bytes(bytes, message, step, p.tree_nodes);
  const bool nvls_only = !p.groups.empty() && std::none_of(p.ops.begin(), p.ops.end(), [](const Operation& o) {
    return sends(o.kind) || receives(o.kind);
  });
  if (nvls_only) return nvls_chunk_bytes(bytes, message, simple);
  const bool sliced = p.collective == Collective::AllReduce || p.collective == Collective::AllGather ||
                      p.collective == Collective::ReduceScatter;
  if (nccl_slices && proto == Protocol::Simple && p.name == "ring" && sliced && message > 0)
    return std::min(step, nccl_slice_bytes((bytes + message - 1) / message, simple));
  return step;
}

}  // namespace incsim::collectives
