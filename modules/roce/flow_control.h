#pragma once
// Host software above the RoCE NIC, on real data in host (GPU) memory: the
// NetReduce flow-control module (§3.1, §3.2), ring reduce-scatter and
// all-gather over RC connections (NCCL's ring, §5.1), and the workers that
// chain them into a whole all-reduce: NetReduce, the ring, and Parallel
// NetReduce on multi-GPU machines (§3.4, Fig. 6B). Every worker checks its
// whole buffer against the reference at the end (#wrong).
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
};

// NetReduce's flow control on one region of memory: the region is chunked
// into messages of MsgLen packets, each with an INA header (RingID, MsgID,
// Rank, MsgLen) in front; N messages are in flight on the connection to the
// ring successor, and the window advances by one each time a whole result
// message has arrived from the predecessor, which the NIC writes over the
// region (the result lands where the gradient came from).
class NetReducePhase {
 public:
  NetReducePhase(RoceNic* nic, int send_qp, uint16_t ring_id, int rank, const HostConfig& cfg);
  void start(uint8_t* region, uint64_t bytes, std::function<void()> done);
  void fill(const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) const;
  void deliver(uint64_t va, const uint8_t* payload, uint32_t bytes);
  bool finished() const { return results_ == messages_; }
  const int& progress_ref() const { return trace_window_; }  // oldest message without its result

 private:
  void post(uint32_t k);
  RoceNic* nic_;
  int send_qp_;
  uint16_t ring_id_;
  int rank_;
  HostConfig cfg_;
  uint8_t* region_ = nullptr;
  uint64_t bytes_ = 0, packets_ = 0, received_ = 0;
  uint32_t messages_ = 0, posted_ = 0, results_ = 0;
  uint32_t msg_base_ = 0;  // MsgIDs continue across collectives: the aggregator array remembers them
  int trace_window_ = 0;
  std::function<void()> done_;
};

// Ring steps over one connection pair on one region: step s < P-1 is
// reduce-scatter (send chunk (rank - s) mod P, add what arrives), step s >=
// P-1 all-gather (forward, copy what arrives); each message is posted as soon
// as the same message of the step before has arrived.
class RingPhase {
 public:
  RingPhase(RoceNic* nic, int send_qp, int rank, int ranks, const HostConfig& cfg, collectives::DType dtype,
            collectives::RedOp op);
  // Runs steps [first, last) of 2(P-1). With a gate, step `gate` is not
  // posted as the step before arrives: `gate_ready` is called once every
  // step before the gate has arrived, and open_gate() posts it (Parallel
  // NetReduce runs its NetReduce ring in between).
  void start(uint8_t* region, uint64_t bytes, int first, int last, std::function<void()> done, int gate = -1,
             std::function<void()> gate_ready = nullptr);
  void open_gate();
  // Before start: data may arrive for a phase that has not started (a
  // Tencent master whose machine finishes its intra-machine all-reduce late
  // still gets the other masters' reduce-scatter). Such data lands in a
  // staging buffer, as NCCL's receive FIFO, and is consumed by start(); this
  // sizes that buffer for a region of `bytes` (not on the packet path).
  void prepare(uint64_t bytes);
  void fill(const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) const;
  void deliver(uint64_t va, const uint8_t* payload, uint32_t bytes);
  bool finished() const { return received_ == expected_; }
  int ranks() const { return ranks_; }
  // After the reduce-scatter, this rank holds chunk (rank + 1) mod P.
  int owned_chunk() const { return (rank_ + 1) % ranks_; }
  uint64_t chunk_begin(int c) const { return (static_cast<uint64_t>(c) * (bytes_ / 4) / ranks_) * 4; }
  uint64_t chunk_bytes(int c) const { return chunk_begin(c + 1) - chunk_begin(c); }
  const int& progress_ref() const { return trace_step_; }  // the latest step posted
  // All 2(P-1) steps: the ring all-reduce.
  void start(uint8_t* region, uint64_t bytes, std::function<void()> done) {
    start(region, bytes, 0, 2 * (ranks_ - 1), std::move(done));
  }

 private:
  static constexpr int kStepShift = 40;
  uint32_t messages_in(int c) const;
  int chunk_of(int step, bool received) const;
  void post(int step, uint32_t j);
  void complete();
  void stage(uint64_t va, const uint8_t* payload, uint32_t bytes);
  struct Early {
    uint64_t va;
    uint64_t at;  // in staged_
    uint32_t bytes;
  };
  RoceNic* nic_;
  int send_qp_, rank_, ranks_;
  HostConfig cfg_;
  collectives::DType dtype_;
  collectives::RedOp op_;
  uint8_t* region_ = nullptr;
  uint64_t bytes_ = 0, expected_ = 0, received_ = 0, before_gate_ = 0;
  int first_ = 0, last_ = 0, gate_ = -1, gated_step_ = -1, trace_step_ = 0;  // gate_: -1 once open
  bool completed_ = false;
  bool running_ = false;          // between start() and complete(); otherwise arrivals are staged
  std::vector<uint8_t> staged_;   // payloads that arrived before start(), back to back
  std::vector<Early> early_;      // their writes, in arrival order (capacity fixed by prepare())
  uint64_t staged_bytes_ = 0;
  std::function<void()> done_, gate_ready_;
};

// A pipelined broadcast down a chain (rank 0 -> 1 -> ... -> P-1) over the
// ring's connections: rank 0 sends the region message by message, every
// other rank forwards each message as it arrives, the last only receives.
class ChainPhase {
 public:
  ChainPhase(RoceNic* nic, int send_qp, int rank, int ranks, const HostConfig& cfg);
  void start(uint8_t* region, uint64_t bytes, std::function<void()> done);
  void fill(const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) const;
  void deliver(uint64_t va, const uint8_t* payload, uint32_t bytes);
  // Its writes are told from the ring's by this tag in the address's top bits.
  static constexpr uint64_t kTag = 0xFFull << 40;
  static bool owns(uint64_t va) { return (va & kTag) == kTag; }

 private:
  void post(uint32_t j);
  RoceNic* nic_;
  int send_qp_, rank_, ranks_;
  HostConfig cfg_;
  uint8_t* region_ = nullptr;
  uint64_t bytes_ = 0, packets_ = 0, received_ = 0;
  bool completed_ = false;
  std::function<void()> done_;
};

// A worker: one endpoint's buffer, its input from the data pattern, the
// phases it runs, and the check of its result.
class Worker : public NicClient {
 public:
  Worker(int global_rank, const collectives::DataPattern* pattern, collectives::DType dtype, collectives::RedOp op)
      : rank_(global_rank), pattern_(pattern), dtype_(dtype), op_(op) {}
  void start(uint64_t bytes, std::function<void()> done);
  bool finished() const { return finished_; }
  uint64_t wrong() const { return wrong_; }
  virtual const int& progress_ref() const = 0;  // for the waveform

 protected:
  virtual void run() = 0;  // starts the first phase on buf_
  void finish();
  std::vector<uint8_t> buf_;
  int rank_;
  const collectives::DataPattern* pattern_;
  collectives::DType dtype_;
  collectives::RedOp op_;

 private:
  bool finished_ = true;
  uint64_t wrong_ = 0;
  std::function<void()> done_;
};

// A worker that runs one phase over its whole buffer: NetReduce all-reduce
// on single-GPU hosts (one NetReduce ring), or the ring all-reduce
// (reduce-scatter then all-gather, 2(P-1) steps).
template <class Phase>
class PhaseWorker : public Worker {
 public:
  PhaseWorker(int rank, const collectives::DataPattern* pattern, collectives::DType dtype, collectives::RedOp op,
              Phase phase)
      : Worker(rank, pattern, dtype, op), phase_(std::move(phase)) {}
  void fill(int, const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) override {
    phase_.fill(wr, index, payload, bytes);
  }
  void deliver(int, uint64_t va, const uint8_t* payload, uint32_t bytes) override {
    phase_.deliver(va, payload, bytes);
  }
  const int& progress_ref() const override { return phase_.progress_ref(); }

 private:
  void run() override {
    phase_.start(buf_.data(), buf_.size(), [this] { finish(); });
  }
  Phase phase_;
};
using NetReduceWorker = PhaseWorker<NetReducePhase>;
using RingWorker = PhaseWorker<RingPhase>;

// Where a GPU of a multi-GPU machine sits, and its connections: the ring
// inside its machine and the ring of its GPU index across the machines.
struct GpuPlace {
  int global_rank, local, gpus_per_machine, machine, machines;
  int intra_send_qp, intra_recv_qp, inter_send_qp, inter_recv_qp;
};

// A hierarchical all-reduce on one GPU: stages one after the other (the
// waveform shows which), inside the machine and across the machines.
class StagedWorker : public Worker {
 public:
  StagedWorker(const GpuPlace& g, const collectives::DataPattern* pattern, collectives::DType dtype,
               collectives::RedOp op)
      : Worker(g.global_rank, pattern, dtype, op), place_(g) {}
  const int& progress_ref() const override { return stage_; }

 protected:
  GpuPlace place_;
  int stage_ = 0;  // 0 idle or done
};

// Parallel NetReduce (§3.4, Fig. 6B): reduce-scatter inside the machine,
// NetReduce ring number `local` (the GPUs of that index on every machine) on
// the chunk this GPU then owns, all-gather inside the machine.
class ParallelNetReduceWorker : public StagedWorker {
 public:
  ParallelNetReduceWorker(RoceNic* nic, const GpuPlace& g, const HostConfig& cfg,
                          const collectives::DataPattern* pattern, collectives::DType dtype, collectives::RedOp op);
  void fill(int qp, const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) override;
  void deliver(int qp, uint64_t va, const uint8_t* payload, uint32_t bytes) override;

 private:
  void run() override;
  void inter_done();
  RingPhase intra_;
  NetReducePhase inter_;
};

// Tencent's hierarchical all-reduce (Fig. 6A): the machine's sum on every GPU
// (ring reduce-scatter and all-gather inside the machine: the master, GPU 0,
// has it too), a ring all-reduce among the masters over the network, and a
// pipelined broadcast from the master down the machine's ring.
class TencentWorker : public StagedWorker {
 public:
  TencentWorker(RoceNic* nic, const GpuPlace& g, const HostConfig& cfg, const collectives::DataPattern* pattern,
                collectives::DType dtype, collectives::RedOp op);
  void fill(int qp, const WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) override;
  void deliver(int qp, uint64_t va, const uint8_t* payload, uint32_t bytes) override;

 private:
  void run() override;
  void broadcast();
  RingPhase intra_, inter_;
  ChainPhase chain_;
};

}  // namespace incsim::roce
