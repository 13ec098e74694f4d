#pragma once
// A collective as a program (docs/programs.md): for each rank, the operations
// its engines execute, with their dependencies, each naming the chunk of
// which buffer it touches. Plain C++, no SystemC.
//
// The layout is for engines that walk it per step or per packet: one flat
// array of plain operations, grouped by rank (rank r's are
// ops[rank_begin[r] .. rank_begin[r + 1])), dependencies as rank-local
// operation indices in one flat array, peers and groups as indices.
//
// Order. Operations of one rank with the same `queue` (a thread block, a
// copy-engine queue, a queue pair) run in the order listed; `deps` adds
// dependencies on other operations of the same rank. Across ranks, order
// comes only from data: the k-th send from rank a to rank b on channel c
// pairs with the k-th receive of b from a on c; an in-network operation
// pairs with the operations of the other members of its group in the same
// position on the same channel.
#include <cstdint>
#include <string>
#include <vector>

namespace incsim::collectives {

// AllToAll: rank r's input chunk j x k + c (k = input chunks / ranks) goes
// to rank j's output chunk r x k + c, as msccl-tools' AllToAll lays it out
// (msccl/language/collectives.py) and nccl-tests' alltoall moves it (each
// rank sends 1/n of its buffer to each peer); out of place only.
//
// Reduce, Gather and Scatter are rooted (NCCL's ncclReduce, and the gather
// and scatter nccl-tests builds of grouped sends and receives): Reduce
// leaves every rank's sum at the root only, Gather every rank's input at
// the root only (rank r's input is the root's output window r), Scatter
// sends the root's input window r to rank r. Every rank has the same
// buffers, as nccl-tests allocates them; a rank with no result leaves its
// output alone.
enum class Collective : uint8_t { AllReduce, ReduceScatter, AllGather, Broadcast, AllToAll, Reduce, Gather, Scatter };
// The unrooted collective whose buffers and chunk numbering a collective
// shares: Reduce an all-reduce's, Gather an all-gather's, Scatter a
// reduce-scatter's; the others their own.
Collective buffer_shape(Collective c);
// Whether the collective reduces (all-reduce, reduce-scatter, reduce); the
// others copy, and their results are their inputs (nccl-tests' redop none).
bool reduces(Collective c);
// Whether the collective has a root (Program::root): broadcast, reduce, gather, scatter.
bool rooted(Collective c);
const char* collective_name(Collective c);
// The collective of that name; false if none is.
bool collective_of(const std::string& name, Collective& out);

// What executes an operation on its rank.
enum class Engine : uint8_t {
  Cores,       // the GPU's cores: data, fence, flag (NCCL's Simple protocol) or LL/LL128
  CopyEngine,  // the GPU's copy engine, block stores in waves
  NicTable,    // the NIC's schedule table (MultiTree §IV-A)
  RoceNic,     // a RoCE NIC: messages on a queue pair (NetReduce)
};
const char* engine_name(Engine e);

// How the cores move data: NCCL's protocols (gpu/cores_collective.h).
enum class Protocol : uint8_t { Simple, LL, LL128 };
const char* protocol_name(Protocol p);
// "simple", "ll" or "ll128", case aside: false for anything else.
bool protocol_of(const std::string& text, Protocol& out);
// The same, anything else a UserError naming `what`.
Protocol parse_protocol(const std::string& text, const std::string& what);

enum class Buffer : uint8_t { Input, Output, Scratch };
char buffer_letter(Buffer b);  // i, o, s as MSCCL writes them

enum class OpKind : uint8_t {
  Nop,                 // nothing: a carrier of dependencies
  Send,                // src to send_peer
  Recv,                // from recv_peer into dst
  // The receive-reduce kinds add the received chunks to a local operand: src
  // if the operation names one (NCCL's recvReduceCopy(src, dst)), else dst
  // (MSCCL's rrc).
  RecvReduceSend,      // received + operand to send_peer; dst unchanged
  RecvReduceCopy,      // dst = received + operand
  RecvReduceCopySend,  // dst = received + operand, and dst to send_peer
  RecvCopySend,        // dst = received, and dst to send_peer
  Copy,                // dst = src (local)
  Reduce,              // dst = src + dst (local)
  // In-network, among the members of `group`: contributors are the members
  // whose operation has a src; every member whose operation has a dst
  // receives the result.
  MulticastWrite,  // one contributor's src to every member's dst (Klenk's multicast)
  ReduceWrite,     // sum of the srcs, reduced in a switch's table, written to the dsts (push)
  ReduceRead,      // sum of the srcs, read through the switches into the dsts (pull)
  Aggregate,       // sum of the srcs, reduced by an aggregator, back to the dsts (NetReduce)
  Barrier,         // no chunk: every member waits until all have reached it (Klenk §VI-A)
};
const char* op_name(OpKind k);  // the MSCCL step type where there is one (s, r, rrs, ...)
bool sends(OpKind k);
bool receives(OpKind k);
bool in_network(OpKind k);
// Can this engine execute this kind of operation?
bool engine_can(Engine e, OpKind k);

constexpr int32_t kNone = -1;

// Chunks [index, index + count) of a buffer; count 0: no chunk.
struct ChunkRef {
  uint32_t index = 0;
  uint16_t count = 0;
  Buffer buf = Buffer::Input;
  bool empty() const { return count == 0; }
  bool operator==(const ChunkRef& o) const { return index == o.index && count == o.count && buf == o.buf; }
};

struct Operation {
  OpKind kind = OpKind::Nop;
  Engine engine = Engine::Cores;
  Protocol proto = Protocol::Simple;
  uint16_t channel = 0;
  uint16_t queue = 0;
  int32_t send_peer = kNone;  // rank
  int32_t recv_peer = kNone;  // rank
  int32_t group = kNone;      // in-network operations: index into Program::groups
  ChunkRef src, dst;
  uint32_t dep_begin = 0;  // Program::deps[dep_begin .. dep_begin + dep_count)
  uint16_t dep_count = 0;
  // For engines that run in lockstep, the NIC's schedule table: the timestep
  // of the send, NOP or received message (MultiTree §IV-A). 0: none, it runs
  // as soon as it may.
  uint16_t timestep = 0;
  bool operator==(const Operation& o) const;
};

// A (from, to, channel) pair of ranks' point-to-point messages as one
// number, ordered as the triple (ranks below 2^24): a key to sort or hash,
// where a map of triples costs a node and a tree walk per operation.
inline uint64_t pair_key(int from, int to, uint16_t channel) {
  return (static_cast<uint64_t>(from) << 40) | (static_cast<uint64_t>(to) << 16) | channel;
}
inline int pair_from(uint64_t key) { return static_cast<int>(key >> 40); }
inline int pair_to(uint64_t key) { return static_cast<int>((key >> 16) & 0xFFFFFF); }
inline int pair_channel(uint64_t key) { return static_cast<int>(key & 0xFFFF); }

// Chunk counts of one rank's buffers.
struct Buffers {
  uint32_t input = 0, output = 0, scratch = 0;
  bool operator==(const Buffers& o) const {
    return input == o.input && output == o.output && scratch == o.scratch;
  }
};

// Which of a rank's ports its messages to a peer take, a message split
// evenly over them: on one channel, or with channel kNone on every channel
// without a hint of its own. A message with no hint takes every port whose
// routes reach the peer. Only the NICs' tables read hints: Blink names its
// links this way (an NVLink, not the PCIe tree that reaches the same GPU;
// its hybrid broadcast's PCIe chain, a channel of its own, Blink A.3).
struct LinkHint {
  int32_t rank = 0, peer = 0;
  int32_t channel = kNone;
  std::vector<int> ports;  // the rank's port indices
  bool operator==(const LinkHint& o) const {
    return rank == o.rank && peer == o.peer && channel == o.channel && ports == o.ports;
  }
};

struct Program {
  std::string name;
  Collective collective = Collective::AllReduce;
  int ranks = 0;
  int root = 0;  // broadcast, reduce, gather, scatter
  // In place: the output is the input (all-reduce, broadcast), the input is
  // rank r's window output[r * input, ...) (all-gather), or the output is
  // input[r * output, ...) (reduce-scatter).
  bool in_place = false;
  // NCCL's tree over this many nodes (of ranks / tree_nodes GPUs each), for
  // its chunk rules: the GPUs' cores cut the chunks of smaller messages
  // smaller, so that they still fill the tree's pipeline
  // (tree_chunk_bytes; nvls_tree_chunk_bytes where its GPUs reduce in the
  // switches too: NVLSTree). 0: not a tree, the protocol's fixed chunk.
  int tree_nodes = 0;
  // In-network reads and multicasts as NVSwitch's multimem loads and stores
  // (NVLS): a reducing read takes the reader's own copy through the
  // switches too, and the multicast of its result comes back to it. false:
  // Klenk's pull and multicast, the GPU's own data stays local.
  bool multimem = false;
  // The GPUs' cores pick each message size's protocol as NCCL's tuner does
  // (ring.protocol=auto's thresholds); the operations' proto is then unused.
  bool protocol_by_size = false;
  // The channels that split the message (the cores' layout, and their thread
  // blocks): channel X from here on carries channel X mod data_channels's data
  // on connections of its own, as PXN's relays do (pxn_program). 0: every
  // channel is one of them.
  int data_channels = 0;
  // The NICs issue each operation as soon as its data is in, in any order,
  // keeping one ordered stream per port, peer and channel (Blink §4.1-4.2);
  // the timesteps then only order each NIC's table, nothing waits for a step.
  // false: MultiTree's lockstep decoder (§IV-A).
  bool dataflow = false;
  std::vector<LinkHint> links;             // at most one per rank, peer and channel
  std::vector<Buffers> buffers;            // [rank]
  std::vector<std::vector<int>> groups;    // in-network groups: their ranks
  std::vector<Operation> ops;                     // grouped by rank
  std::vector<uint32_t> rank_begin;        // [ranks + 1]
  std::vector<uint32_t> deps;              // rank-local operation indices

  int op_count(int rank) const { return static_cast<int>(rank_begin[rank + 1] - rank_begin[rank]); }
  const Operation& op(int rank, int i) const { return ops[rank_begin[rank] + i]; }
  const uint32_t* deps_of(const Operation& o) const { return deps.data() + o.dep_begin; }
  // The engine that runs it: a program runs on one, named by its first operation.
  Engine engine() const { return ops.empty() ? Engine::Cores : ops[0].engine; }
  // Has any rank an operation of this kind?
  bool has(OpKind k) const {
    for (const Operation& o : ops)
      if (o.kind == k) return true;
    return false;
  }
  bool operator==(const Program& o) const;
};

// Builds a Program rank by rank: begin_rank(0), add ops, begin_rank(1), ...
class ProgramBuilder {
 public:
  ProgramBuilder(std::string name, Collective c, int ranks, bool in_place = false);
  Program& program() { return p_; }
  // Starts rank r (ranks in order) with its buffers.
  void begin_rank(int r, Buffers b);
  // Appends an operation to the current rank, depending on `deps` (indices of
  // earlier or later operations of the same rank); returns its index.
  int add(Operation op, const std::vector<uint32_t>& deps = {});
  int add_group(std::vector<int> ranks);
  Program build();

 private:
  Program p_;
  int rank_ = -1;
};

ChunkRef chunk(Buffer b, uint32_t index, uint16_t count = 1);
// An operation of kind k on engine e, channel and queue; the rest unset.
Operation make_op(OpKind k, Engine e, uint16_t channel, uint16_t queue);
// An in-network operation that issues nothing at its rank: a member lending
// its data to another's reducing read, or receiving a multicast.
bool passive(const Operation& o);
// An operation done when what the switches send its rank has landed: a
// multicast's receiver, and every member of a reducing write.
bool receives_landing(const Operation& o);
// A copy-engine operation that hands its engine a descriptor (a push, a read
// that takes its result, a multicast of its data, a put) or a barrier's
// flag; the rest only receive, lend their input or copy it locally.
bool copy_issues(const Operation& o);
// For every point-to-point send (sends(kind)), the operation of its peer
// that receives it: the s-th send of a to b on a channel meets b's s-th
// receive from a on it (docs/programs.md); [rank][operation], -1 where it
// sends nothing. Throws UserError for a send that no receive meets.
std::vector<std::vector<int>> receiving_ops(const Program& p);
// The chunks operation o reads and writes of its rank's buffers as the
// GPUs' cores run it: f(ref, write) for each (gpu::CoresRank counts its
// readers and writers so; cores_kept_bytes bounds what it keeps).
template <class F>
void chunk_uses(const Operation& o, F f) {
  const bool reduces = o.kind == OpKind::RecvReduceSend || o.kind == OpKind::RecvReduceCopy ||
                       o.kind == OpKind::RecvReduceCopySend || o.kind == OpKind::Reduce;
  if (!o.src.empty() && o.kind != OpKind::ReduceRead) f(o.src, false);  // the switches read a read's src
  if (!o.dst.empty() && o.kind != OpKind::RecvReduceSend) f(o.dst, true);
  if (reduces && (o.src.empty() || o.kind == OpKind::Reduce)) f(o.dst, false);  // dst the operand
  // A reducing write's sums land in its dst while its src, the same chunk,
  // is read: the landing holds the chunk until the last is in, whether or
  // not a later operation reads it.
  if (o.kind == OpKind::ReduceWrite) f(o.dst, false);
}
// How many chunks of buffer b rank r may name: its count, or for an in-place
// all-reduce or broadcast's output (the input) the larger of the two.
// Whether rank r has a result to check: a reduce's and a gather's only at
// the root.
bool has_result(const Program& p, int r);
uint32_t chunk_limit(const Program& p, int r, Buffer b);

// Rank r's operations that wait for each of its operations, in the order of
// their indices: one table for the rank, not a vector per operation (a
// cluster's rank has thousands).
class Dependents {
 public:
  Dependents() = default;
  Dependents(const Program& p, int r) {
    const int n = p.op_count(r);
    start_.assign(static_cast<size_t>(n) + 1, 0);
    for (int i = 0; i < n; ++i) {
      const Operation& o = p.op(r, i);
      for (uint32_t d = 0; d < o.dep_count; ++d) ++start_[p.deps_of(o)[d] + 1];
    }
    for (size_t i = 1; i < start_.size(); ++i) start_[i] += start_[i - 1];
    ops_.resize(start_.back());
    std::vector<uint32_t> at(start_.begin(), start_.end() - 1);
    for (int i = 0; i < n; ++i) {
      const Operation& o = p.op(r, i);
      for (uint32_t d = 0; d < o.dep_count; ++d) ops_[at[p.deps_of(o)[d]]++] = i;
    }
  }
  struct Span {
    const int *b, *e;
    const int* begin() const { return b; }
    const int* end() const { return e; }
  };
  // The operations that wait for operation i.
  Span of(int i) const {
    const int* d = ops_.data();
    return {d + start_[static_cast<size_t>(i)], d + start_[static_cast<size_t>(i) + 1]};
  }

 private:
  std::vector<uint32_t> start_;
  std::vector<int> ops_;
};

// The text format of docs/programs.md.
std::string write_program(const Program& p);
// Throws UserError "FILE:LINE: what is wrong".
Program read_program(const std::string& text, const std::string& file);
Program read_program_file(const std::string& path);
// A whole file; throws UserError "cannot read WHAT PATH".
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace incsim::collectives
