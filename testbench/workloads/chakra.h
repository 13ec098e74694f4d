#pragma once
// Chakra execution traces run on a machine (issue 22; docs/training.md):
// --model NAME.et runs NAME.0.et .. NAME.(n-1).et, rank r on GPU r of a
// platform of n GPUs, one iteration per point. Each rank walks its graph as
// ASTRA-sim 2's feeder does: a node is issued once all its data and control
// dependencies have completed. A compute node runs on the GPU's compute
// block (gpuN.compute) for its duration_micros, or, without one, for the
// roofline time of its num_ops and tensor_size; memory and metadata nodes
// complete at once. A collective node is a real collective of --algorithm on
// the ranks of its process group (pg_name; all ranks when it is empty or
// "0"), the ranks' nodes matched in the order they issue them, each
// starting once every member has issued it and the group's previous one has
// ended (a communicator's collectives run in order on one stream). A send and
// the receive it matches (source, destination, tag, bytes) are a 2-rank
// broadcast on the two GPUs' cores once both are issued, one at a time per
// direction of a pair, as NCCL's send and receive. Real data: #wrong counts
// every collective's and transfer's elements.
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "training/chakra_trace.h"
#include "training_workload.h"

namespace incsim::tb {

class ChakraWorkload : public TrainingWorkload {
 public:
  ChakraWorkload(const Options& o, Config& cfg);
  ~ChakraWorkload() override;

  void print_header(std::ostream& os) const override;
  void config_json(nlohmann::ordered_json& config) const override;
  std::string stall_cause() const override;
  double done_fraction() const override;

 private:
  struct Iteration;
  Row iterate(size_t a, uint32_t iteration, Runner& run) override;
  // A track per GPU's compute, then each process group's collectives, then
  // each direction of each pair that sends.
  std::vector<std::string> timeline_tracks() const override;

  // A node as it runs: what it does, and the nodes that wait for it.
  enum class Kind : uint8_t { skip, compute, collective, send, recv };
  struct Node {
    Kind kind = Kind::skip;
    sc_core::sc_time duration;  // compute
    int group = -1;             // collective: its process group
    int op = -1;                // collective: its kind in the group (-1: no data, a barrier); send, recv: its key
    int size = -1;              // collective: its size in the op's; send, recv: in the link's
    uint32_t parents = 0;       // dependencies
    std::vector<uint32_t> children;
    std::string label;          // the timeline's span
  };
  // A process group: its ranks and each kind of collective they run.
  struct Group {
    std::string name;
    std::vector<int> ranks;
    std::vector<int> place;  // [rank]: its rank in the group, -1: not a member
    std::vector<std::string> ops;  // incsim's collective names
    std::vector<std::vector<uint64_t>> sizes;  // [op]
    size_t per_iteration = 0;  // collectives each member issues
    std::string label() const { return name.empty() ? "the process group of all ranks" : "process group '" + name + "'"; }
  };
  // A direction of a pair that sends: from src to dst, the sizes it carries.
  struct Link {
    int src, dst;
    std::vector<uint64_t> sizes;
  };
  // Sends and receives match by (source, destination, tag, bytes): a key.
  struct Key {
    int link, size;
  };
  struct Collectives {
    std::vector<std::vector<std::unique_ptr<CollectiveWorkload>>> group;  // [group][op]
    std::vector<std::unique_ptr<CollectiveWorkload>> link;
  };

  void ready(int r, uint32_t i);     // node i of rank r has no dependency left
  void complete(int r, uint32_t i);  // it ended: its children may be ready
  void arrive(int r, uint32_t i);    // a collective node issued
  void post(int r, uint32_t i);      // a send or receive issued
  void start_group(int g);           // the group's next collective, once all its members issued it
  void end_group(int g);
  void pump(int l);                  // the link's next transfer
  void due(std::vector<int>& list, int k);  // a group or link the launcher tries
  void comm(int r, bool begin);      // a communication of rank r begins or ends
  static void stop();                // the iteration ended or failed
  std::string error(size_t a) const;

  std::string name_;  // NAME of NAME.0.et ...
  std::vector<training::ChakraTrace> traces_;
  int ranks_ = 0;
  std::vector<std::vector<Node>> nodes_;  // [rank]
  std::vector<double> compute_us_;        // [rank]: its compute nodes' time
  std::vector<Group> groups_;
  std::vector<Link> links_;
  std::vector<Key> keys_;
  uint64_t collectives_per_iteration_ = 0, transfers_per_iteration_ = 0;
  std::string compute_note_;
  std::vector<Collectives> collectives_;  // [algorithm]
  std::unique_ptr<Iteration> running_;
};

}  // namespace incsim::tb
