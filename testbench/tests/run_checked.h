#pragma once
// What every whole-platform run in the tests must satisfy: it finishes
// without a stall, no element of the result is wrong, each row is within
// the analytical bound, and every packet is back in the pool.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "experiment.h"

namespace incsim::tb {

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
