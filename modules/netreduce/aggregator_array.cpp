#include "aggregator_array.h"

#include <cstring>

#include "core/error.h"
#include "ethernet/roce_frame.h"

namespace incsim::netreduce {

AggregatorArray::AggregatorArray(int ranks, uint32_t window, uint32_t msg_len, uint32_t max_payload,
                                 elements::DType dtype, elements::RedOp op, net::PacketPool* pool,
                                 elements::Alu alu)
    : ranks_(ranks), window_(window), msg_len_(msg_len), max_payload_(max_payload), dtype_(dtype), op_(op),
      alu_(alu), pool_(pool) {
  if (ranks < 1 || ranks > kMaxRanks)
    throw UserError("a NetReduce ring has 1 to " + std::to_string(kMaxRanks) + " ranks, not " + std::to_string(ranks));
  if (window == 0) throw UserError("the NetReduce window N must be at least 1 message");
  if (msg_len == 0) throw UserError("MsgLen must be at least 1 packet");
  const uint64_t n = 2ull * window * msg_len;
  slots_.resize(n);
  held_.assign(n * ranks, nullptr);
  values_.resize(n * max_payload);
}

uint64_t AggregatorArray::aggregator_bytes(int ranks, uint32_t max_payload) {
  const uint64_t r = static_cast<uint64_t>(ranks);
  return r * (eth::kPayloadOffset + max_payload) + max_payload + (r + 7) / 8;
}

uint64_t AggregatorArray::held() const {
  uint64_t n = 0;
  for (const net::Packet* p : held_) n += p != nullptr;
  return n;
}

void AggregatorArray::release(uint64_t s) {
  Slot& sl = slots_[s];
  if (sl.arrived && sl.result != sl.msg) {
    --busy_;
    bits_ -= static_cast<int>(sl.arrived);
  }
  for (int r = 0; r < ranks_; ++r)
    if (net::Packet*& p = held(s, r)) {
      pool_->put(p);
      p = nullptr;
    }
  sl.arrived = 0;
  ++deallocations_;
}

AggregatorArray::Outcome AggregatorArray::accept(net::Packet* p, int rank, int64_t msg, uint32_t offset,
                                                 std::vector<net::Packet*>& out) {
  const uint64_t two_n = 2ull * window_;
  // Deallocate the aggregator one window ahead (§3.1): its last user,
  // message msg - N, completed before this packet's sender could send msg.
  const uint64_t ahead = ((msg + window_) % two_n) * msg_len_ + offset;
  if (slots_[ahead].msg < msg + window_) {
    release(ahead);
    slots_[ahead].msg = msg + window_;
  }
  const uint64_t s = (msg % two_n) * msg_len_ + offset;
  Slot& sl = slots_[s];
  if (sl.msg < msg) {  // first use (the first window of a ring)
    release(s);
    sl.msg = msg;
  }
  if (sl.result == msg) {
    // Already aggregated: this packet's result was lost on its way on.
    std::memcpy(eth::payload(p), value(s), sl.result_bytes);
    p->payload_bytes = sl.result_bytes;
    out.push_back(p);
    ++resent_;
    return sl.final ? ResentFinal : Resent;
  }
  if (sl.msg > msg) {  // a message whose aggregator was reused: nobody needs it any more
    pool_->put(p);
    ++dropped_;
    return Dropped;
  }
  net::Packet*& slot = held(s, rank);
  if (slot) {
    pool_->put(slot);  // a retransmission overwrites its rank's payload buffer
    ++overwrites_;
  } else {
    if (!sl.arrived) ++busy_;
    ++bits_;
    ++contributions_;
    ++sl.arrived;
  }
  slot = p;
  if (sl.arrived != static_cast<uint32_t>(ranks_)) return Stored;

  // Every rank is in: aggregate and emit one result per rank, each under
  // that rank's original header.
  const uint32_t bytes = p->payload_bytes;
  uint8_t* v = value(s);
  std::memcpy(v, eth::payload(held(s, 0)), bytes);
  for (int r = 1; r < ranks_; ++r) alu_.reduce(dtype_, op_, v, eth::payload(held(s, r)), bytes);
  sl.result = msg;
  sl.result_bytes = static_cast<uint16_t>(bytes);
  sl.final = false;
  for (int r = 0; r < ranks_; ++r) {
    net::Packet*& q = held(s, r);
    std::memcpy(eth::payload(q), v, bytes);
    out.push_back(q);
    q = nullptr;
  }
  --busy_;
  bits_ -= ranks_;
  ++completions_;
  ++completions_total_;
  return Completed;
}

}  // namespace incsim::netreduce

namespace incsim::netreduce {

bool AggregatorArray::set_final(int64_t msg, uint32_t offset, const uint8_t* data, uint32_t bytes) {
  const uint64_t s = (msg % (2ull * window_)) * msg_len_ + offset;
  Slot& sl = slots_[s];
  if (sl.result != msg || bytes != sl.result_bytes) return false;
  std::memcpy(value(s), data, bytes);
  sl.final = true;
  return true;
}

}  // namespace incsim::netreduce
