#pragma once
// Where a program's chunks lie in the message (docs/programs.md, "Chunks
// and buffers"): which chunk of the buffer nccl-tests counts a rank's chunk
// is, and how the engines that run a program pass by pass (the GPUs' cores,
// as NCCL does) cut the message into passes. Every engine and the bound
// read these; plain C++, no SystemC.
#include <cstdint>
#include <vector>

#include "collectives/program.h"

namespace incsim::collectives {

// Where chunk c of `chunks` starts in a buffer of `units` (elements, or the
// copy engines' 128-byte blocks): c x units / chunks, the buffer split as
// evenly as whole units allow, as NCCL splits it. Every engine of both
// fidelities cuts its chunks here.
inline uint64_t chunk_start(uint64_t c, uint64_t units, uint64_t chunks) { return c * units / chunks; }

// The chunks of the message per pass: the buffer nccl-tests counts (all-
// reduce's, reduce-scatter's input, all-gather's output), or for an
// all-to-all every rank's input, each block met by its destination's
// output chunk, n times the size.
uint32_t message_chunks(const Program& p);
// The elements of the message for a size of `elems` elements per rank.
uint64_t message_elems(const Program& p, uint64_t elems);

// The buffer that holds rank r's chunk `index` of buffer `buf` (in place,
// the output and the input overlap: both are turned into the canonical
// one), and the chunk of the message it is, or -1 for scratch.
int64_t message_chunk(const Program& p, int rank, Buffer& buf, uint32_t& index);
// The same for a chunk reference's first chunk, leaving it as it is.
int64_t message_chunk(const Program& p, int rank, ChunkRef c);

// At most how many bytes of a message of `elems` elements per rank, of
// `elem_bytes` each, rank r's cores keep at once: the chunks one operation
// writes and another reads back, which gpu::CoresRank keeps until their
// last reader, counted whole (every pass's at once). The rest of the
// message is made and checked as it moves, and held by no one.
uint64_t cores_kept_bytes(const Program& p, int r, uint64_t elems, uint32_t elem_bytes);

// What a rank's result chunk must hold: the rank whose input message chunk
// m is (an all-gather's block's, an all-to-all's sender, whose input is
// message chunks r x input on, a broadcast's root), or -1 for the reduction
// of every rank's (all-reduce, reduce-scatter, reduce). Every engine checks
// its results against this.
int result_owner(const Program& p, int64_t m);

// The message cut into passes: it is `blocks x parts` chunks per pass. A
// program whose channel c touches only chunks c mod parts (the ring's
// channels) gets a part of the message per channel, each cut into its own
// passes, as NCCL splits a message over channels; any other program one
// part. A chunk holds chunk_elems elements of a pass at most.
// How the engines that run a program pass by pass split its message: its
// channels (the data channels, where PXN's relays add others) and its
// parts, one per channel where each channel's queues touch only its own
// message chunks (c mod channels), else one.
struct ChannelParts {
  int channels = 1, parts = 1;
};
ChannelParts channel_parts(const Program& p);
// The chunk, in data bytes, the GPUs' cores move a size's message in: a
// tree's (NCCL's rule for its depth), NVLS's where the program runs
// in-network operations only, else `step`, the protocol's step; `simple`
// is the Simple protocol's step (NVLS's rule cuts that). nccl_slices: a
// ring's Simple step moves as NCCL's kernel moves it, in two slices
// (nccl_slice_bytes).
uint64_t cores_chunk_bytes(const Program& p, Protocol proto, uint64_t bytes, uint64_t step, uint64_t simple,
                           bool nccl_slices = false);
// NCCL's ring all-reduce, all-gather and reduce-scatter under Simple move
// each ring step's chunk (a channel's share of the message over the ranks,
// at most 4 buffer steps) as SlicePerChunk = 2 slices of StepPerSlice = 2
// steps (src/device/all_reduce.h: ProtoSimple<ALLREDUCE_CHUNKSTEPS /
// ALLREDUCE_SLICESTEPS, ALLREDUCE_SLICESTEPS>), each its own wait, fence
// and flag: sliceSize = max(divUp(nelem, 16 x 2) x 16, stepSize x 2 / 32)
// (src/device/prims_simple.h, genericOp). `step_bytes`: a ring step's
// bytes; `simple`: NCCL's Simple buffer step. In data bytes.
uint64_t nccl_slice_bytes(uint64_t step_bytes, uint64_t simple);

struct PassLayout {
  int parts = 1;
  uint32_t blocks = 1;
  uint64_t chunk_elems = 1;
  std::vector<uint64_t> off, count, passes;  // [part]

  PassLayout(int parts, uint32_t blocks, uint64_t chunk_elems, uint64_t elems);
  // The most elements a chunk holds in any pass: chunk_elems, or fewer where
  // a part of the message is smaller than a pass.
  uint64_t largest_chunk() const;
  // The message chunk and the pass element e lies in: the inverse of range.
  void locate(uint64_t e, uint32_t& m, uint64_t& pass) const;
  // Elements [first, first + len) of message chunk m in pass `pass`.
  void range(uint64_t pass, uint32_t m, uint64_t& first, uint64_t& len) const;
};

}  // namespace incsim::collectives
