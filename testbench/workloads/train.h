#pragma once
// Training iterations, data parallel (issue 22; docs/training.md): every GPU
// of the platform (or --gpus N) holds the model and a --batch of samples.
// An iteration runs the forward pass and the backward pass layer by layer on
// each GPU's compute engine (gpuN.compute), all-reduces the gradients as
// they become ready, in buckets of train.bucket_bytes (PyTorch DDP's 25 MiB;
// 0: one per layer, as Klenk and MultiTree overlap) or once after the
// backward pass (train.overlap false), and ends with the optimizer step.
// The all-reduces are real collectives on the machine, with real data and
// #wrong, issued one after another as NCCL issues a communicator's
// collectives on one stream. --baseline runs each iteration again with
// another algorithm on the same machine, for the speed-up.
#include <memory>
#include <string>
#include <vector>

#include "collective.h"
#include "core/process.h"
#include "training/compute.h"
#include "training/model.h"
#include "workload.h"

namespace incsim::tb {

class TrainWorkload : public Workload {
 public:
  TrainWorkload(const Options& o, Config& cfg);
  ~TrainWorkload() override;

  platforms::Machine& machine() override { return *platform_; }
  void print_header(std::ostream& os) const override;
  size_t points() const override { return opt_.iterations; }
  std::vector<Row> run_point(size_t i, Runner& run, std::ostream& notes) override;
  void config_json(nlohmann::ordered_json& config) const override;
  sc_core::sc_time default_stall_timeout() const override;
  double done_fraction() const override;
  void trace(sc_core::sc_trace_file* tf) const override;

  // One kernel or all-reduce of the timeline: of algorithm a, on GPU
  // `track`'s compute (the GPUs' count: the all-reduces), from start to end.
  struct Span {
    int algorithm;
    int track;
    std::string name;
    double start_us, end_us;
  };
  const std::vector<Span>& spans() const { return spans_; }
  // The links' utilisation from ts on (0 after an all-reduce ends).
  struct Counter {
    int algorithm;
    double ts, mean, busiest;
  };

 private:
  struct Iteration;
  // Runs one iteration of `algorithm` (index into collectives_), returns its row.
  Row iterate(size_t a, uint32_t iteration, Runner& run, bool record);
  void write_timeline() const;

  Options opt_;
  training::Model model_;
  training::Precision precision_;
  std::unique_ptr<training::ComputeModel> compute_;
  std::vector<training::LayerTimes> times_;  // per layer
  sc_core::sc_time update_;                  // the optimizer step
  std::vector<uint64_t> buckets_;            // bytes, in the order they are reduced
  std::vector<int> bucket_of_;               // [layer]: its bucket, -1 for a layer without weights
  bool overlap_ = true;
  std::unique_ptr<platforms::Platform> platform_;
  std::vector<std::string> algorithms_;      // --algorithm, then --baseline
  std::vector<std::unique_ptr<CollectiveWorkload>> collectives_;
  std::unique_ptr<Iteration> running_;
  std::vector<Span> spans_;
  std::vector<Counter> counters_;
  Wakeup launch_;
};

}  // namespace incsim::tb
