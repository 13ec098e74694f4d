#pragma once
// Chakra execution traces run on a machine (issue 22; docs/training.md):
// --model NAME.et runs NAME.0.et .. NAME.(n-1).et, rank r on GPU r of a
// platform of n GPUs, one iteration per point. The traces lower to one
// training::Graph, which training::GraphRunner walks as ASTRA-sim 2's
// feeder does: a node is issued once all its data and control dependencies
// have completed; this workload keeps the options, rows and output. A compute node runs on the GPU's compute
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
#include <memory>
#include <string>
#include <vector>

#include "training/chakra_trace.h"
#include "training/graph_runner.h"
#include "training_workload.h"

namespace incsim::tb {

class ChakraWorkload : public TrainingWorkload, private training::GraphRunner::Owner {
 public:
  ChakraWorkload(const Options& o, Config& cfg);
  ~ChakraWorkload() override;

  void print_header(std::ostream& os) const override;
  void config_json(nlohmann::ordered_json& config) const override;
  std::string stall_cause() const override;
  double done_fraction() const override;  // bytes the iteration's communications moved, of all

 private:
  struct Iteration;
  Row iterate(size_t a, uint32_t iteration, Runner& run) override;
  // A track per GPU's compute, then each process group's collectives, then
  // each direction of each pair that sends.
  std::vector<std::string> timeline_tracks() const override;

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
    std::vector<std::vector<std::unique_ptr<GroupCollective>>> group;  // [group][op]
    std::vector<std::unique_ptr<GroupCollective>> link;
  };

  // The graph runner's owner: starts a group's collective or a link's
  // transfer, spans what ended, counts each rank's communication time.
  void launch(int stream, const training::GraphRunner::Instance& in, std::function<void()> done) override;
  void computed(uint32_t node, const sc_core::sc_time& took) override;
  void began(int stream, const training::GraphRunner::Instance& in) override;
  void ended(int stream, const training::GraphRunner::Instance& in, const sc_core::sc_time& took) override;
  // What runs on graph stream `stream` (op: a group's collective) of algorithm a.
  GroupCollective& collective_of(size_t a, int stream, int op);
  std::vector<int> members(int stream) const;  // a group's ranks, a link's sender and receiver
  void comm(int r, bool begin);  // a communication of rank r begins or ends
  std::string error(size_t a) const;

  std::string name_;  // NAME of NAME.0.et ...
  std::vector<training::ChakraTrace> traces_;
  int ranks_ = 0;
  // The traces as one graph: rank r's nodes from base_[r] on, in file
  // order; its streams the process groups, then the links; a send's and
  // receive's key an index into keys_.
  training::Graph graph_;
  std::vector<uint32_t> base_;
  std::vector<std::string> labels_;        // [node]: the timeline's span
  std::vector<double> compute_us_;        // [rank]: its compute nodes' time
  std::vector<Group> groups_;
  std::vector<Link> links_;
  std::vector<Key> keys_;
  uint64_t collectives_per_iteration_ = 0, transfers_per_iteration_ = 0;
  std::string compute_note_;
  std::vector<Collectives> collectives_;  // [algorithm]
  std::unique_ptr<training::GraphRunner> runner_;
  std::unique_ptr<Iteration> running_;
};

}  // namespace incsim::tb
