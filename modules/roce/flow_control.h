#pragma once
// Host software above the RoCE NIC: the NetReduce flow-control module
// (§3.1, §3.2) and, as the baseline, ring all-reduce over the same RC
// connections (NCCL's ring, §5.1). Both keep real data and count the
// elements of their result that differ from the reference.
#include <cstdint>
#include <functional>
#include <vector>

#include "collectives/data_pattern.h"
#include "roce/roce_nic.h"

namespace incsim::roce {

struct HostConfig {
  uint32_t mtu_payload;  // bytes of tensor per packet
  uint32_t msg_len;      // packets per message (MsgLen)
  uint32_t window;       // messages in flight (N); NetReduce only
  uint16_t ring_id;
};

// Each worker sends its tensor to its ring successor over one RC connection
// and receives the aggregation result from its predecessor over another
// (§3.1): the tensor is chunked into messages of MsgLen packets, each with an
// INA header (RingID, MsgID, Rank, MsgLen) in front; N messages are in
// flight and the window advances by one each time a whole result message has
// arrived.
class NetReduceHost : public NicClient {
 public:
  NetReduceHost(RoceNic* nic, int rank, int send_qp, int recv_qp, const HostConfig& cfg,
                const collectives::DataPattern* pattern, collectives::DType dtype, collectives::RedOp op);
  void start(uint64_t bytes, std::function<void()> done);
  void fill(int qp, const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) override;
  void deliver(int qp, uint64_t va, const uint8_t* payload, uint32_t bytes) override;
  bool finished() const { return results_ == messages_; }
  uint64_t wrong() const;
  const int& window_ref() const { return trace_window_; }  // oldest message without its result

 private:
  void post(uint32_t k);
  RoceNic* nic_;
  int rank_, send_qp_, recv_qp_;
  HostConfig cfg_;
  const collectives::DataPattern* pattern_;
  collectives::DType dtype_;
  collectives::RedOp op_;
  uint64_t bytes_ = 0, packets_ = 0, received_ = 0, wrong_ = 0;
  uint32_t messages_ = 0, posted_ = 0, results_ = 0;
  uint32_t msg_base_ = 0;  // MsgIDs continue across collectives: the aggregator array remembers them
  int trace_window_ = 0;
  std::function<void()> done_;
};

// Ring all-reduce (reduce-scatter then all-gather, 2(P-1) steps) over RC
// RDMA writes: step s sends chunk (rank - s) mod P, message by message, each
// message as soon as the one it depends on (the same message of step s - 1)
// has arrived.
class RingHost : public NicClient {
 public:
  RingHost(RoceNic* nic, int rank, int ranks, int send_qp, int recv_qp, const HostConfig& cfg,
           const collectives::DataPattern* pattern, collectives::DType dtype, collectives::RedOp op);
  void start(uint64_t bytes, std::function<void()> done);
  void fill(int qp, const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) override;
  void deliver(int qp, uint64_t va, const uint8_t* payload, uint32_t bytes) override;
  bool finished() const { return finished_; }
  uint64_t wrong() const { return wrong_; }
  const int& window_ref() const { return trace_step_; }

 private:
  static constexpr int kStepShift = 40;
  uint64_t chunk_begin(int c) const { return (static_cast<uint64_t>(c) * elements_ / ranks_) * 4; }
  uint64_t chunk_bytes(int c) const { return chunk_begin(c + 1) - chunk_begin(c); }
  uint32_t messages_in(int c) const;
  void post(int step, uint32_t j);
  void finish();
  RoceNic* nic_;
  int rank_, ranks_, send_qp_, recv_qp_;
  HostConfig cfg_;
  const collectives::DataPattern* pattern_;
  collectives::DType dtype_;
  collectives::RedOp op_;
  uint64_t elements_ = 0, wrong_ = 0;
  std::vector<uint8_t> buf_;
  uint64_t expected_ = 0, received_ = 0;  // packets this host receives over all steps
  bool finished_ = true;
  int trace_step_ = 0;
  std::function<void()> done_;
};

}  // namespace incsim::roce
