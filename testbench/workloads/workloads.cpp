// The one place that knows every workload: a new one is a class and a line here.
#include <memory>

#include "collective.h"
#include "jobs.h"
#include "netreduce.h"
#include "traffic.h"
#include "workload.h"

namespace incsim::tb {

std::unique_ptr<Workload> make_workload(const Options& o, Config& cfg) {
  if (!o.jobs.empty()) return std::make_unique<JobsWorkload>(o, cfg);
  if (!o.traffic.empty()) return std::make_unique<TrafficWorkload>(o, cfg);
  if (is_netreduce_platform(o.platform)) return std::make_unique<NetReduceWorkload>(o, cfg);
  return std::make_unique<CollectiveWorkload>(o, cfg);
}

}  // namespace incsim::tb
