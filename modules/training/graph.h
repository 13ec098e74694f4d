#pragma once
// A training step as one dependency graph (docs/architecture.md, "One
// graph runner"), as ASTRA-sim's workload feeder walks a Chakra trace:
// compute nodes on a GPU's compute engine, communication nodes (a rank's
// part in a collective of its group, a send, a receive) and the edges
// between them. Training's parallelisms, ASTRA-sim's text files and Chakra
// traces lower to it; training::GraphRunner runs it on a machine. Plain
// data: the owner says what a communication's `op` and `size` mean.
#include <cstdint>
#include <limits>
#include <vector>

namespace incsim::training {

struct Graph {
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  enum class Kind : uint8_t {
    none,        // nothing to do (a Chakra memory or metadata node): ends once ready
    compute,     // a kernel on GPU `rank`'s compute engine
    collective,  // rank `rank`'s part, at `place`, in its group's (`stream`) next collective
    send,        // to the matching receive (same `key`) over link `stream`
    recv,
  };
  struct Node {
    Kind kind = Kind::none;
    int rank = 0;
    // compute: its time at full speed, and what the engine's waveform shows.
    double seconds = 0;
    int phase = 0, layer = -1;
    // communication: its group or link, place in the group, what runs (the
    // owner's op and size; op -1: nothing, a barrier), a send's or receive's key.
    int stream = -1, place = 0, op = -1, size = -1, key = -1;
    std::vector<uint32_t> children;  // the nodes that wait for it to end, in the order they are told
    uint32_t parents = 0;            // the nodes it waits for
    // The compute node queued behind this one on the same engine once both
    // are issued (a CUDA stream's next kernel: it need not wait for this one
    // to end, the engine runs them in order).
    uint32_t next_on_engine = kNone;
    // Released by a communication's end, it is issued from the launcher
    // once that has started the streams due (training's optimizer step).
    bool after_launch = false;
  };
  // When a communication starts once all its members have issued it. Never
  // from inside its own stream's completion: the stream's next one starts
  // from the runner's launcher, a delta cycle later at the same time. The
  // two feeders this graph replaced differ in the rest, which decides which
  // of two simultaneous collectives injects first, so both are kept (their
  // rows do not change).
  enum class Start : uint8_t {
    at_once,        // training: at once; the launcher takes due streams in index order
    from_launcher,  // Chakra: always from the launcher, the group last made due first, then the links so
  };
  Start start = Start::at_once;
  // A send goes at once, its receive matched when posted (Chakra traces, as
  // ASTRA-sim's network API sends them); false: a send and its receive
  // start together once both are posted (training's pipeline, as NCCL's
  // send and receive kernels run together).
  bool eager_sends = false;
  std::vector<Node> nodes;
  std::vector<int> streams;  // [stream]: its members (a link: 2, sender and receiver)
  int keys = 0;              // sends' and receives' keys

  uint32_t add(Node n) {
    nodes.push_back(std::move(n));
    return static_cast<uint32_t>(nodes.size() - 1);
  }
  // A kernel of `seconds` on GPU `rank`'s compute engine.
  uint32_t add_compute(int rank, double seconds, int phase, int layer = -1) {
    Node n;
    n.kind = Kind::compute;
    n.rank = rank;
    n.seconds = seconds;
    n.phase = phase;
    n.layer = layer;
    return add(std::move(n));
  }
  // Rank `rank`'s part in a communication of `stream`.
  uint32_t add_communication(Kind kind, int rank, int stream, int place, int op, int size, int key = -1) {
    Node n;
    n.kind = kind;
    n.rank = rank;
    n.stream = stream;
    n.place = place;
    n.op = op;
    n.size = size;
    n.key = key;
    return add(std::move(n));
  }
  // `child` waits for `parent` to end.
  void depend(uint32_t parent, uint32_t child) {
    nodes[parent].children.push_back(child);
    ++nodes[child].parents;
  }
  // `next` is queued on the engine behind `first` (both compute, one GPU).
  void queue_behind(uint32_t first, uint32_t next) {
    nodes[first].next_on_engine = next;
    ++nodes[next].parents;
  }
  int add_stream(int members) {
    streams.push_back(members);
    return static_cast<int>(streams.size() - 1);
  }
};

}  // namespace incsim::training
