#pragma once
// What every whole-platform run in the tests must satisfy: it finishes
// without a stall, no element of the result is wrong, each row is within
// the analytical bound, and every packet is back in the pool. And the
// builders of a quiet test run's options.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "collective_workload.h"
#include "experiment.h"
#include "netreduce.h"
#include "traffic.h"

namespace incsim::tb {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// Parameters as -c key=value would set them, in order.
inline void set_params(Options& o, const KeyValues& params) {
  o.params.clear();
  for (const auto& [k, v] : params) o.params.push_back({k, v, "-c"});
}

// The options of a quiet test run; the caller adds the platform's shape.
inline Options run_options(const std::string& platform, const std::string& collective, const std::string& algorithm,
                           const std::string& sizes, const KeyValues& params = {}, const std::string& dtype = "float",
                           const std::string& redop = "sum") {
  Options o;
  o.platform = platform;
  o.collective = collective;
  o.algorithm = algorithm;
  o.sizes = sizes;
  o.dtype = dtype;
  o.redop = redop;
  o.quiet = true;
  set_params(o, params);
  return o;
}

inline CollectiveWorkload& collective_of(Experiment& e) { return e.workload_as<CollectiveWorkload>(); }
inline NetReduceWorkload& netreduce_of(Experiment& e) { return e.workload_as<NetReduceWorkload>(); }
inline TrafficWorkload& traffic_of(Experiment& e) { return e.workload_as<TrafficWorkload>(); }

inline std::vector<Row> run_checked(Experiment& e, const std::string& what) {
  std::ostringstream table;
  std::vector<Row> rows;
  REQUIRE_NOTHROW(rows = e.run(&table));
  INFO(table.str());
  for (const auto& row : rows) {
    INFO(what << " size " << row["size_bytes"]);
    CHECK(row.wrong() == 0);
    CHECK(row["bound_fraction"] > 0);
    CHECK(row["bound_fraction"] <= 1.0);
  }
  CHECK(e.machine().packets_in_use() == 0);
  return rows;
}

// Fault injection (fault.alu.*): runs o with the first `elements` results of
// `block`'s ALU one too high; returns #wrong summed over the rows. A result
// the check does not count would leave #wrong at 0 (issue 13: forcing the
// checker to return 0 once passed every integration test).
inline uint64_t wrong_with_alu_fault(Options o, const std::string& block, uint64_t elements) {
  o.params.push_back({"fault.alu.block", block, "-c"});
  o.params.push_back({"fault.alu.elements", std::to_string(elements), "-c"});
  Experiment e(o);
  std::ostringstream table;
  uint64_t wrong = 0;
  for (const auto& r : e.run(&table)) wrong += r.wrong();
  INFO(table.str());
  CHECK(e.machine().packets_in_use() == 0);
  return wrong;
}

}  // namespace incsim::tb
