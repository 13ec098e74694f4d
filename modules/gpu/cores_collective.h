#pragma once
// The GPU's cores executing a collective program (docs/programs.md): each
// queue of a rank's Cores operations is a thread block, each (channel, peer)
// pair a connection with a mailbox of slots in the receiver's memory, and
// every transfer NCCL's Simple protocol (Klenk §III, §V): the data's stores,
// a fence that waits for every write ack, then a flag store; the receiver
// polls the flag, reduces or copies the data, forwards it, and frees the
// slot with a flag back to the sender. The software ring is ring_program run
// by this engine.
//
// A program describes one pass over the message; the message is cut into
// passes of the program's chunks, each chunk_bytes at most, and every queue
// runs its operations once per pass. A queue's operations run in order, with
// one exception that pipelines the passes: the next pass may start while a
// trailing receive of the previous one (an operation that only receives)
// waits for its data; receives still complete first in, first out.
#include <memory>
#include <string>
#include <vector>

#include "collectives/alu.h"
#include "collectives/data_pattern.h"
#include "collectives/program.h"
#include "gpu/collective.h"
#include "gpu/gpu.h"
#include "core/param.h"

namespace incsim::gpu {

struct CoresParams {
  uint64_t chunk_bytes;  // a chunk per pass, at most: one mailbox slot between flags
  int slots;             // mailbox slots per connection (pipelining depth)
};
inline const Param<int> kRingChannels{
    "ring.channels", 12, Range::at_least(1).at_most(256),
    "parallel rings, spread over a GPU's ports (NCCL runs several per link; 2 per DGX-2 link; hgx-h100 and "
    "nvl72: 18, one per link)"};
inline const Param<uint64_t> kRingChunk{
    "ring.chunk_bytes", 128 * 1024, Range::at_least(4).at_most(1ull << 30),
    "bytes per chunk of a pass of a program on the GPU's cores, one mailbox slot between flags (NCCL 2.4 uses "
    "1 MiB slices; smaller keeps simulated mailboxes small, docs/validation.md; hgx-h100 and nvl72: 512 KiB, NCCL's Simple "
    "step)"};
// One slot deadlocks a ring: a rank frees its slot only by forwarding into
// the next rank's single slot, around the whole ring (NCCL needs 2 steps too).
inline const Param<int> kRingSlots{"ring.slots", 4, Range::at_least(2).at_most(64),
                                   "mailbox slots per connection (NCCL 2.4: NCCL_STEPS / slice steps = 4)"};

class CoresCollective : public Collective {
 public:
  // gpus[r] runs rank r; ports[r][q] are the ports of rank r's GPU that
  // reach rank q's (connections take them in turn by channel). The message
  // size is nccl-tests': the whole buffer, of which each rank owns 1/n in
  // reduce-scatter (output) and all-gather (input). endpoint_GBps is one
  // GPU's payload bandwidth, for the bound. The program must have passed
  // check_program; its operations must all be the cores'.
  CoresCollective(collectives::Program program, std::vector<Gpu*> gpus, std::vector<std::vector<std::vector<int>>> ports,
                  collectives::DType dtype, collectives::RedOp redop, uint64_t seed, CoresParams params,
                  double endpoint_GBps);
  ~CoresCollective() override;
  void start(uint64_t bytes, std::function<void()> on_done) override;
  uint64_t wrong() const override;
  double bound_us(uint64_t bytes) const override;
  double busbw_factor() const override;
  double done_fraction() const override;  // transfers sent of all queues' transfers
  std::string redop() const override;

  class Rank;
  // Where a pass's chunks lie in the message (the buffer nccl-tests counts).
  struct Layout;

 private:
  void rank_done();
  collectives::Program program_;
  std::vector<Gpu*> gpus_;
  std::vector<std::vector<std::vector<int>>> ports_;
  collectives::DType dtype_;
  uint32_t elem_;  // bytes of an element of dtype_
  collectives::RedOp redop_;
  collectives::DataPattern data_;
  // Each GPU's cores, which add its data (gpu3.cores); kept across sizes.
  std::vector<collectives::Alu> cores_;
  bool copies_are_results_;  // all-gather, broadcast: a fault garbles the cores' copies
  CoresParams params_;
  double endpoint_GBps_;
  uint32_t message_chunks_ = 0;  // chunks of the message per pass
  int parts_ = 1;                // the message's parts, one per channel or one
  size_t max_conns_ = 0;         // connections of one direction on any rank: the flags' records
  std::unique_ptr<Layout> layout_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::function<void()> on_done_;
  int running_ = 0;
};

}  // namespace incsim::gpu
