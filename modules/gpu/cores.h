#pragma once
// The GPU's cores (its SMs) as the engine of collective programs: the block
// gpu3.cores, beside gpu3.copy_engine and gpu3.compute. Each rank of a
// program on the cores runs here as a CoresRank (cores_rank.h), as NCCL's
// kernels run one thread block per channel; what the ranks on one GPU share
// is this module's: the ALU that adds the data (fault.alu.block names it),
// and the waveform of the step and pass its first rank's first queue is
// sending.
#include <cstdint>
#include <string>
#include <systemc>

#include "elements/alu.h"
#include "collectives/nccl.h"
#include "core/config.h"
#include "core/param.h"
#include "core/trace.h"

namespace incsim::gpu {

// The cores' parameters: the mailbox of each NCCL protocol, its chunk
// (one slot) and the slots per connection (the pipelining depth).
// NCCL's LL buffer: NCCL_LL_LINES_PER_THREAD (8) x NCCL_LL_MAX_NTHREADS
// (512) lines of 16 B per step, half of it data; NCCL_STEPS (8) steps.
inline const Param<uint64_t> kLlChunk{"cores.ll.chunk_bytes", 32 * 1024, Range::at_least(8).at_most(1ull << 30),
                                      "data bytes per LL slot (NCCL: 8 x 512 lines of 16 B per step, 8 B of "
                                      "each data)"};
// NCCL's LL128 buffer: NCCL_LL128_ELEMS_PER_THREAD (120) x
// NCCL_LL128_MAX_NTHREADS (640) 8-byte words per step, 15 of 16 data.
inline const Param<uint64_t> kLl128Chunk{"cores.ll128.chunk_bytes", 576000, Range::at_least(120).at_most(1ull << 30),
                                         "data bytes per LL128 slot (NCCL: 120 x 640 words of 8 B per step, 15 of "
                                         "every 16 data)"};
// LL, LL128 and the tree's Simple (one step per chunk) use every one of
// NCCL_STEPS (8) as a slot.
constexpr int kNcclSteps = 8;
inline const Param<uint64_t> kCoresChunk{
    "cores.chunk_bytes", 128 * 1024, Range::at_least(4).at_most(1ull << 30),
    "bytes per chunk of a pass of a program on the GPU's cores, one mailbox slot between flags (NCCL 2.4 uses "
    "1 MiB slices; smaller keeps simulated mailboxes small, docs/validation.md; hgx-h100 and nvl72: 512 KiB, NCCL's "
    "Simple step)"};
// One slot deadlocks a ring: a rank frees its slot only by forwarding into
// the next rank's single slot, around the whole ring (NCCL needs 2 steps too).
inline const Param<int> kCoresSlots{"cores.slots", 4, Range::at_least(2).at_most(64),
                                    "mailbox slots per connection (NCCL 2.4: NCCL_STEPS / slice steps = 4)"};
// Their names before the cores were a block of their own.
inline const RenamedParam kRingChunk{"ring.chunk_bytes", kCoresChunk}, kRingSlots{"ring.slots", kCoresSlots},
    kRingLlChunk{"ring.ll.chunk_bytes", kLlChunk}, kRingLl128Chunk{"ring.ll128.chunk_bytes", kLl128Chunk};

struct SlotParams {
  uint64_t chunk_bytes;
  int slots;
};
struct CoresParams {
  SlotParams simple;  // cores.chunk_bytes, cores.slots
  SlotParams ll, ll128;
  // A program whose protocol is picked by size (Program::protocol_by_size,
  // ring.protocol=auto) runs the one these thresholds pick.
  collectives::ProtocolBySize by_size;
  // A ring's Simple steps move in NCCL's two slices (collectives::
  // nccl_slice_bytes), as on today's machines (platforms::PlatformDefaults).
  bool nccl_slices = false;
  // Reducing writes (push) a queue may have in flight, each a block whose
  // result has not come back: the host's credits for the switches'
  // aggregation buffers (SHARP's outstanding transactions). 0: the
  // platform's switches evict rather than hold, and the cores do not push.
  int push_credits = 0;
  // NCCL's proxies on a step between nodes (collectives::NetSteps).
  collectives::NetSteps net;
};
// The cores' parameters for a program (tree: NCCL's tree, one step per
// chunk, every one of its 8 steps a slot) on a platform whose family takes
// Simple chunks of family_chunk bytes (0: cores.chunk_bytes' default) and
// moves a ring's Simple steps in NCCL's slices or not; UserError for a chunk
// that is not a multiple of 4.
CoresParams cores_params(Config& cfg, uint64_t family_chunk, bool nccl_slices, bool tree);

class Cores : public sc_core::sc_module, public Traceable {
 public:
  // name: "cores", a child of the GPU named gpu_name.
  Cores(sc_core::sc_module_name name, const std::string& gpu_name);
  elements::Alu& alu() { return alu_; }
  // gpu3.cores.step and .chunk: the running transfer's place in its queue
  // (its sends and in-network operations so far) and its pass, -1 before
  // the first.
  void trace(sc_core::sc_trace_file* tf) const override;
  void show(int step, int pass) {
    step_ = step;
    pass_ = pass;
  }

 private:
  elements::Alu alu_;
  int step_ = -1, pass_ = -1;
};

}  // namespace incsim::gpu
