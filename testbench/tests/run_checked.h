#pragma once
// What every whole-platform run in the tests must satisfy: it finishes
// without a stall, no element of the result is wrong, each row is within
// the analytical bound, and every packet is back in the pool.
#include <utility>
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "experiment.h"

namespace incsim::tb {

// The options of a quiet test run; the caller adds the platform's shape.
inline Options run_options(const std::string& platform, const std::string& collective, const std::string& algorithm,
                           const std::string& sizes, std::vector<std::pair<std::string, std::string>> params = {},
                           const std::string& dtype = "float", const std::string& redop = "sum") {
  Options o;
  o.platform = platform;
  o.collective = collective;
  o.algorithm = algorithm;
  o.sizes = sizes;
  o.dtype = dtype;
  o.redop = redop;
  o.quiet = true;
  o.overrides = std::move(params);
  return o;
}

inline std::vector<Row> run_checked(Experiment& e, const std::string& what) {
  std::ostringstream table;
  std::vector<Row> rows;
  REQUIRE_NOTHROW(rows = e.run(&table));
  INFO(table.str());
  for (const auto& row : rows) {
    INFO(what << " size " << row.size_bytes);
    CHECK(row.wrong == 0);
    CHECK(row.bound_fraction > 0);
    CHECK(row.bound_fraction <= 1.0);
  }
  CHECK(e.platform().pool().in_use() == 0);
  return rows;
}

}  // namespace incsim::tb
