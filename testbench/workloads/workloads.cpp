// The one place that knows every workload: a new one is a class and a line here.
#include <memory>

#include "chakra.h"
#include "choices.h"
#include "collective_workload.h"
#include "elements/data_pattern.h"
#include "core/error.h"
#include "jobs.h"
#include "netreduce.h"
#include "traffic.h"
#include "train.h"
#include "workload.h"

namespace incsim::tb {

std::string workload_name(const Options& o) {
  // NetReduce's Ethernet platforms run its workload (or train, with --model), a pattern only traffic.
  return !o.workload.empty()                  ? o.workload
         : !o.traffic.empty()                 ? "traffic"
         : !o.model.empty()                   ? "train"
         : is_netreduce_platform(o.platform)  ? "netreduce"
                                              : "collective";
}

std::unique_ptr<Workload> make_workload(const Options& o, Config& cfg) {
  const bool ethernet = is_netreduce_platform(o.platform);
  const std::string w = workload_name(o);
  if (w != "train")
    refuse_options(o, {"model", "batch", "iterations", "warmup", "tp", "pp", "baseline", "compute", "precision"},
                   "is for --workload train");
  check_choice("workload", w, choice_list("workload"));
  if (w == "traffic" && o.traffic.empty())
    throw UserError("--workload traffic needs --traffic PATTERN, one of " + choice_list("traffic"));
  if (w != "traffic" && !o.traffic.empty())
    throw UserError("--traffic " + o.traffic + " runs the traffic workload, not --workload " + w);
  if (w == "netreduce" && !ethernet)
    throw UserError("--workload netreduce runs on NetReduce's Ethernet platforms (" + std::string(kEthernetPlatforms) +
                    ", or a file of their family), not on " + o.platform);
  const bool chakra = !o.model.empty() && !training::chakra_set_name(o.model).empty();
  if (ethernet && (w == "train" ? chakra : w != "netreduce"))
    throw UserError("platform " + o.platform + " is NetReduce's Ethernet, which runs --workload netreduce or train (of a "
                    "model, not a Chakra trace), not " + (w == "train" ? "Chakra trace " + o.model : w));
  if (!o.jobs.empty() && w != (ethernet ? "netreduce" : "collective"))
    throw UserError("a jobs: list runs collectives side by side, not --workload " + w);
  if (o.fidelity == "flow") {
    if (w == "traffic")
      throw UserError("--fidelity flow runs collectives, jobs and training, not --workload traffic (yet)");
    if (ethernet && (w != "netreduce" || !o.jobs.empty()))
      throw UserError("--fidelity flow runs NetReduce's Ethernet platform " + o.platform + " for one collective at a "
                      "time, not " + (o.jobs.empty() ? "training" : "a jobs: list") + " (yet)");
  }
  if (!o.jobs.empty()) return std::make_unique<JobsWorkload>(o, cfg);
  if (w == "traffic") return std::make_unique<TrafficWorkload>(o, cfg);
  if (w == "train" && chakra) return std::make_unique<ChakraWorkload>(o, cfg);
  if (w == "train") return std::make_unique<TrainWorkload>(o, cfg);
  if (w == "netreduce") return std::make_unique<NetReduceWorkload>(o, cfg);
  return std::make_unique<CollectiveWorkload>(o, cfg);
}

}  // namespace incsim::tb
