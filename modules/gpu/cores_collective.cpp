#include "cores_collective.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "collectives/bounds.h"
#include "collectives/layout.h"
#include "collectives/program_synthesis.h"
#include "core/error.h"
#include "gpu/cores_rank.h"
#include "gpu/group_window.h"

namespace incsim::gpu {

using collectives::Buffer;
using collectives::ChunkRef;
using Kind = collectives::Collective;
using collectives::OpKind;
using collectives::Operation;

CoresCollective::CoresCollective(collectives::Program program, std::vector<Gpu*> gpus,
                                 std::vector<std::vector<std::vector<int>>> ports, elements::DType dtype,
                                 elements::RedOp redop, uint64_t seed, CoresParams params,
                                 topo::MulticastFabric* fabric)
    : fabric_(fabric),
      program_(std::move(program)),
      gpus_(std::move(gpus)),
      ports_(std::move(ports)),
      dtype_(dtype),
      elem_(elements::dtype_bytes(dtype)),
      redop_(redop),
      data_(seed, program_.ranks, dtype, redop),
      copies_are_results_(!collectives::reduces(program_.collective)),
      params_(params) {
  proto_ = program_.ops.empty() ? collectives::Protocol::Simple : program_.ops.front().proto;
  for (const Operation& o : program_.ops)
    if (o.proto != proto_)
      throw UserError("program " + program_.name + " mixes the " + collectives::protocol_name(proto_) + " and " +
                      collectives::protocol_name(o.proto) + " protocols; the GPUs' cores run one per program");
  // By size: every protocol it may pick must fit a packet, checked now.
  if (program_.protocol_by_size && params_.by_size.ll128_max_bytes > params_.by_size.ll_max_bytes)
    use_protocol(collectives::Protocol::LL128);
  use_protocol(proto_);
  message_chunks_ = collectives::message_chunks(program_);
  const collectives::ChannelParts cp = collectives::channel_parts(program_);
  channels_ = cp.channels;
  parts_ = cp.parts;
  for (int r = 0; r < program_.ranks; ++r) {
    std::vector<std::pair<int, int>> in, out;
    for (int i = 0; i < program_.op_count(r); ++i) {
      const Operation& o = program_.op(r, i);
      const auto add = [](std::vector<std::pair<int, int>>& v, int channel, int peer) {
        if (std::find(v.begin(), v.end(), std::make_pair(channel, peer)) == v.end()) v.emplace_back(channel, peer);
      };
      if (collectives::sends(o.kind)) add(out, o.channel, o.send_peer);
      if (collectives::receives(o.kind)) add(in, o.channel, o.recv_peer);
    }
    max_conns_ = std::max(max_conns_, std::max(in.size(), out.size()));
  }
  check_in_network();
  if (!program_.groups.empty())
    GroupWindow::claim(*fabric_, program_.groups, [this](int r) { return gpus_[r]->index(); }, groups_);
  for (const Operation& o : program_.ops) {
    if (o.kind == OpKind::ReduceRead) groups_[o.group].reads = true;
    if (o.kind == OpKind::MulticastWrite) groups_[o.group].writes = true;
    if (o.kind == OpKind::ReduceWrite) groups_[o.group].pushes = true;
  }
  for (size_t g = 0; g < groups_.size(); ++g)
    if (groups_[g].pushes && groups_[g].writes)
      throw UserError("program " + program_.name + ": group " + std::to_string(g) + " both pushes and multicasts; a "
                      "push's sum comes back to its writers, a multicast does not, so they need groups of their own");
}

// The cores run NVLS's in-network operations over message chunks that every
// member addresses alike: a block's address is its place in the message.
void CoresCollective::check_in_network() const {
  if (program_.groups.empty()) return;
  const std::string name = "program " + program_.name + ": ";
  if (!fabric_) throw UserError(name + "its in-network operations need switches with multicast regions");
  if (program_.in_place) throw UserError(name + "the GPUs' cores run in-network operations only out of place");
  // (group, channel, position): the writer's first message chunk and its count.
  std::map<std::tuple<int, int, int>, std::pair<int64_t, uint16_t>> written;
  for (int r = 0; r < program_.ranks; ++r) {
    std::map<std::pair<int, int>, int> position;  // (group, channel): in-network operations so far
    for (int i = 0; i < program_.op_count(r); ++i) {
      const Operation& o = program_.op(r, i);
      if (!collectives::in_network(o.kind)) continue;
      const std::string what = name + "rank " + std::to_string(r) + "'s operation " + std::to_string(i) + " (" +
                               collectives::op_name(o.kind) + ")";
      if (o.kind == OpKind::Barrier)
        throw UserError(what + ": the GPUs' cores issue NVLS's reducing reads (multimem.ld_reduce), multicast "
                               "writes (multimem.st) and reducing writes; barriers are the copy engines'");
      if (o.kind == OpKind::ReduceWrite && params_.push_credits == 0)
        throw UserError(what + ": the GPUs' cores push only to switches that hold a contribution until its "
                               "block is complete (SHARP's aggregation tables on a cluster's network, ib.sharp.*); "
                               "this platform's tables evict partial sums to a home GPU, which the copy engines' "
                               "push takes");
      const auto message = [&](ChunkRef ref) { return collectives::message_chunk(program_, r, ref); };
      if (o.kind == OpKind::ReduceRead && !o.src.empty() && o.src.buf != Buffer::Input)
        throw UserError(what + " reads no input chunk; the switches read the members' inputs");
      const int pos = position[{o.group, o.channel}]++;
      if (o.kind == OpKind::ReduceWrite) {
        if (o.src.empty() || !(o.src == o.dst) || message(o.src) < 0)
          throw UserError(what + " must push a chunk of the message and take its sum in the same chunk: its "
                                 "blocks are addressed by their place in the message");
        continue;
      }
      if (o.kind != OpKind::MulticastWrite) continue;
      const ChunkRef ref = o.src.empty() ? o.dst : o.src;
      const std::pair<int64_t, uint16_t> m{message(ref), ref.count};
      if (m.first < 0)
        throw UserError(what + " multicasts a scratch chunk; a multicast lands at its place in the message");
      const auto at = written.try_emplace({o.group, o.channel, pos}, m).first;
      if (at->second != m)
        throw UserError(what + " takes message chunk " + std::to_string(m.first) + " where its writer stores chunk " +
                        std::to_string(at->second.first) + "; a multicast lands where it was stored");
    }
  }
}

CoresCollective::~CoresCollective() {
  ranks_.clear();
  remove_regions();
  for (const Group& g : groups_) fabric_->release_window(g.window);
}

void CoresCollective::remove_regions() {
  for (Group& g : groups_)
    for (int* r : {&g.in, &g.out})
      if (*r >= 0) fabric_->remove_region(std::exchange(*r, -1));
}

sc_core::sc_time CoresCollective::proxied(int a, int b, bool head) const {
  if (!params_.net.across(gpus_[a]->index(), gpus_[b]->index())) return sc_core::SC_ZERO_TIME;
  return sc_core::sc_time(1e3 * (head ? params_.net.head_us() : params_.net.step_us(proto_)), sc_core::SC_NS);
}

void CoresCollective::use_protocol(collectives::Protocol p) {
  proto_ = p;
  slot_params_ = p == collectives::Protocol::LL ? params_.ll : p == collectives::Protocol::LL128 ? params_.ll128 : params_.simple;
  const uint32_t max_payload = gpus_.front()->pool().format().max_payload_bytes;
  packet_data_ = collectives::protocol_data_bytes(p, max_payload) / elem_ * elem_;
  if (packet_data_ == 0)
    throw UserError(std::string("the ") + collectives::protocol_name(p) + " protocol's lines (" +
                    std::to_string(p == collectives::Protocol::LL ? net::kLlLine : net::kLl128Line) +
                    " B) do not fit a packet of net.max_payload_bytes = " + std::to_string(max_payload));
}

void CoresCollective::start(uint64_t bytes, std::function<void()> on_done) {
  on_done_ = std::move(on_done);
  ranks_.clear();
  if (program_.protocol_by_size) use_protocol(collectives::message_protocol(program_, params_.by_size, bytes));
  const SlotParams& step = proto_ == collectives::Protocol::LL      ? params_.ll
                           : proto_ == collectives::Protocol::LL128 ? params_.ll128
                                                                    : params_.simple;
  slot_params_.chunk_bytes =
      collectives::cores_chunk_bytes(program_, proto_, bytes, step.chunk_bytes, params_.simple.chunk_bytes,
                                     params_.nccl_slices);
  layout_ = std::make_unique<collectives::PassLayout>(parts_, message_chunks_ / static_cast<uint32_t>(parts_),
                                     slot_params_.chunk_bytes / elem_, collectives::message_elems(program_, bytes / elem_));
  // The fabric manager registers this size's regions (Klenk Fig. 2); under
  // multimem the switches read and write each member's own copy too.
  remove_regions();
  for (Group& g : groups_) {
    std::vector<int> gpus;
    for (int r : g.members) gpus.push_back(gpus_[r]->index());
    if (g.reads) g.in = fabric_->add_region(g.base + GroupWindow::kIn, bytes, gpus, !program_.multimem);
    // A push's sum comes back to every member, its writers too.
    if (g.writes || g.pushes)
      g.out = fabric_->add_region(g.base + GroupWindow::kOut, bytes, gpus, !g.pushes && !program_.multimem);
  }
  for (int r = 0; r < program_.ranks; ++r) ranks_.push_back(std::make_unique<CoresRank>(*this, r));
  for (auto& r : ranks_) r->link(ranks_);
  running_ = static_cast<int>(ranks_.size());
  for (auto& r : ranks_) r->start();
}

uint64_t CoresCollective::group_out(int g) const { return groups_[static_cast<size_t>(g)].base + GroupWindow::kOut; }

void CoresCollective::rank_done() {
  if (--running_ == 0 && on_done_) on_done_();
}

uint64_t CoresCollective::wrong() const { return collectives::wrong(ranks_); }

double CoresCollective::done_fraction() const { return collectives::done_fraction(ranks_); }

std::string CoresCollective::redop() const {
  return copies_are_results_
             ? "none"
             : elements::redop_name(redop_);
}

}  // namespace incsim::gpu
