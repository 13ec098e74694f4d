#pragma once
// The software ring collectives that NCCL runs and Klenk uses as the baseline
// (Klenk §III, §V): all-reduce is a reduce-scatter then an all-gather around
// a ring; each step a chunk is written by the GPU's cores into the next GPU's
// mailbox with data-fence-flag semantics — stores, wait for every write ack
// (the fence), then store the flag; the receiver polls the flag, reduces the
// chunk with its own data or copies it, forwards it, and tells the sender
// the mailbox slot is free.
//
// As in NCCL, the message is split over channels (each a ring on its own
// port, so all of a GPU's links are used) and each channel loops over
// iterations of nranks x chunk elements, doing the ring's steps per
// iteration: 2(n-1) for all-reduce, n-1 for reduce-scatter and all-gather.
#include <memory>
#include <string>
#include <vector>

#include "collectives/alu.h"
#include "collectives/data_pattern.h"
#include "gpu/collective.h"
#include "gpu/gpu.h"
#include "core/param.h"

namespace incsim::gpu {

struct RingParams {
  int channels;          // rings run in parallel, spread over the GPU's ports
  uint64_t chunk_bytes;  // per-rank piece of one iteration = one mailbox slot
  int slots;             // mailbox slots per channel (pipelining depth)
};
inline const Param<int> kRingChannels{
    "ring.channels", 12, Range::at_least(1).at_most(256),
    "parallel rings, spread over a GPU's ports (NCCL runs several per link; 2 per DGX-2 link; hgx-h100: 18, "
    "one per link)"};
inline const Param<uint64_t> kRingChunk{
    "ring.chunk_bytes", 128 * 1024, Range::at_least(4).at_most(1ull << 30),
    "bytes per rank per ring iteration, one mailbox slot between flags (NCCL 2.4 uses 1 MiB slices; "
    "smaller keeps simulated mailboxes small, docs/validation.md; hgx-h100: 512 KiB, NCCL's Simple step)"};
// One slot deadlocks: a rank frees its slot only by forwarding into the
// next rank's single slot, around the whole ring (NCCL needs 2 steps too).
inline const Param<int> kRingSlots{"ring.slots", 4, Range::at_least(2).at_most(64),
                                   "mailbox slots per channel (NCCL 2.4: NCCL_STEPS / slice steps = 4)"};

enum class RingKind { AllReduce, ReduceScatter, AllGather };

class RingCollective : public Collective {
 public:
  // Which ports of rank r lead to rank r+1 (data and tail flags) and to
  // rank r-1 (head flags); channels take them in turn.
  struct RankPorts {
    std::vector<int> to_next, to_prev;
  };
  // gpus in ring order; endpoint_GBps is one GPU's payload bandwidth. The
  // message size is nccl-tests': the whole buffer, of which each rank owns
  // 1/n in reduce-scatter (output) and all-gather (input).
  RingCollective(RingKind kind, std::vector<Gpu*> gpus, std::vector<RankPorts> ports, collectives::DType dtype,
                 collectives::RedOp redop, uint64_t seed, RingParams params, double endpoint_GBps);
  ~RingCollective() override;
  void start(uint64_t bytes, std::function<void()> on_done) override;
  uint64_t wrong() const override;
  double bound_us(uint64_t bytes) const override;
  double busbw_factor() const override;
  double done_fraction() const override;  // transfers sent of all channels' transfers
  std::string redop() const override {
    return kind_ == RingKind::AllGather ? "none" : collectives::redop_name(redop_);
  }

  class Rank;

 private:
  void rank_done();
  RingKind kind_;
  std::vector<Gpu*> gpus_;
  std::vector<RankPorts> ports_;
  collectives::DType dtype_;
  collectives::RedOp redop_;
  collectives::DataPattern data_;
  // Each GPU's cores, which add its data (gpu3.cores); kept across sizes.
  std::vector<collectives::Alu> cores_;
  RingParams params_;
  double endpoint_GBps_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::function<void()> on_done_;
  int running_ = 0;
};

}  // namespace incsim::gpu
