#pragma once
// Runs a training::Graph on a machine (docs/architecture.md, "One graph
// runner"), as ASTRA-sim's workload feeder issues a Chakra trace: a node is
// issued once every node it waits for has ended. A compute node is queued
// on its GPU's compute engine (gpuN.compute), behind the kernels queued
// before it; a node that does nothing ends at once. A rank's collective
// node is matched with its group's other members' in the order each issues
// them (NCCL's rule on a communicator), a send with the receive of its key
// in order; a group's collectives and a link's transfers run one at a time,
// in that order, each once all its members have issued it, or, for an
// eager send (Graph::eager_sends), once it is issued. The owner starts a
// communication (on the communicator) and is told what ended.
//
// When a communication starts, once all its members have issued it:
// Graph::Start.
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <systemc>
#include <vector>

#include "core/process.h"
#include "gpu/compute_engine.h"
#include "graph.h"

namespace incsim::training {

class GraphRunner {
 public:
  // One communication of a stream: what runs, and its members' nodes (by
  // place; a transfer: the send, then the receive).
  struct Instance {
    int op = -1, size = -1;
    int arrived = 0;
    std::vector<uint32_t> nodes;  // a transfer's receive: Graph::kNone until posted
    bool landed = false;          // a transfer that has ended
  };
  class Owner {
   public:
    virtual ~Owner() = default;
    // Start the communication now; done() once it has ended (never from inside launch).
    virtual void launch(int stream, const Instance& in, std::function<void()> done) = 0;
    // A compute node ended, its engine running it for `took`.
    virtual void computed(uint32_t /*node*/, const sc_core::sc_time& /*took*/) {}
    // A communication starts, or ended after `took` (before its nodes end).
    virtual void began(int /*stream*/, const Instance& /*in*/) {}
    virtual void ended(int /*stream*/, const Instance& /*in*/, const sc_core::sc_time& /*took*/) {}
  };

  // `engines`: each rank's compute engine.
  GraphRunner(const char* name, std::vector<gpu::ComputeEngine*> engines, Owner& owner);

  // Runs `graph` (kept by the caller until done) from now: its nodes
  // without parents are issued at once, in order.
  void start(const Graph& graph);
  bool done() const { return done_; }
  const sc_core::sc_time& ended_at() const { return t_end_; }
  size_t left() const { return left_; }  // nodes not yet ended

  // A member issued a collective as its group's k-th where another member
  // issued another op or size: the run stopped.
  struct Mismatch {
    uint32_t node;
    size_t k;
  };
  const std::optional<Mismatch>& mismatch() const { return mismatch_; }
  // What a stuck run waits for: the first group whose next collective a
  // member (at `place`) has not issued, and the first send or receive
  // (by key) without its match (an eager send has none).
  struct Missing {
    int stream;
    size_t k;
    int place;
  };
  std::optional<Missing> missing_member() const;
  uint32_t unmatched() const;  // Graph::kNone: none

 private:
  struct Stream {
    std::vector<size_t> issued;  // [place]: collectives issued
    std::deque<Instance> instances;
    size_t next = 0;  // into instances
    bool busy = false;
    int ending = 0;  // inside its completion
    bool link = false;  // its communications are transfers
    bool due = false;   // Start::at_once: for the launcher
    sc_core::sc_time start;
  };
  void issue(uint32_t i);
  void queue(uint32_t i);     // a compute node and those behind it
  void complete(uint32_t i);  // it ended: its children may be issued
  void arrive(uint32_t i);    // a collective node issued
  void post(uint32_t i);      // a send or receive issued
  void try_start(int s);  // its members may all have issued the next one
  void make_due(int s);   // for the launcher
  void start_now(int s);
  void end(int s);
  void launch();  // the launcher: due streams, in order
  static void stop();

  std::vector<gpu::ComputeEngine*> engines_;
  Owner& owner_;
  Wakeup wake_;
  const Graph* graph_ = nullptr;
  std::vector<uint32_t> parents_;  // [node]: still to end (or be queued, for the one behind on its engine)
  size_t left_ = 0;
  std::vector<uint32_t> stack_;  // ended nodes whose children to visit
  std::vector<Stream> streams_;
  // [key]: sends and receives posted before their match; eager sends
  // (their link stream's instances) whose receive is not yet posted.
  std::vector<std::deque<uint32_t>> sends_, recvs_;
  std::vector<std::deque<size_t>> unclaimed_;
  int ending_ = 0;                    // streams inside their completion
  std::vector<uint32_t> released_;    // after_launch nodes for the launcher, in node order
  std::vector<int> due_groups_, due_links_;  // Start::from_launcher: the last made due on top
  std::optional<Mismatch> mismatch_;
  bool done_ = true;
  sc_core::sc_time t_end_;
};

}  // namespace incsim::training
