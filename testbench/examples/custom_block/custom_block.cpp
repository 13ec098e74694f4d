// An architect's own block in a built-in platform, against the installed
// library: a reduction table eviction policy that, when a push write misses a
// full table, evicts the entry that holds the most contributions (its partial
// saves the home GPU the most work) instead of the least recently used one
// (Klenk §IV-C). It is registered by name before the platform is built and
// chosen like a built-in one, with switch.reduction_table.eviction; push
// all-reduce on DGX-2 then runs with it in every switch port, small tables
// forcing evictions, and #wrong checks that the partials still add up.
#include <cstdlib>
#include <iostream>
#include <memory>

#include "core/error.h"
#include "core/report.h"
#include "experiment.h"
#include "nvswitch/eviction.h"

static const int kQuietBanner = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);

namespace {
class FullestFirst : public incsim::nvswitch::EvictionPolicy {
 public:
  int victim(const incsim::nvswitch::ReductionTable& t) override {
    int best = -1;
    for (int e = t.lru(); e >= 0; e = t.entry(e).next)  // every entry in use, least recently used first
      if (t.entry(e).owner == kPushOwner && (best < 0 || t.entry(e).count > t.entry(best).count)) best = e;
    return best;
  }
};
}  // namespace

int sc_main(int argc, char* argv[]) {
  using namespace incsim;
  nvswitch::register_eviction_policy("fullest", [] { return std::make_unique<FullestFirst>(); });
  tb::Options o;
  o.platform = "dgx2";
  o.algorithm = "push";
  o.sizes = "64K,1M";
  o.quiet = true;
  o.params = {{"switch.reduction_table.eviction", argc > 1 ? argv[1] : "fullest", "custom_block"},
              // Tables of 4 entries and no wave limit on the copy engines: full tables, many evictions.
              {"switch.reduction_table.bytes", "512", "custom_block"},
              {"gpu.copy_engine.waves", "0", "custom_block"}};
  try {
    install_report_handler(false);
    tb::Experiment e(o);
    e.print_header(std::cout);
    uint64_t wrong = 0;
    for (const auto& row : e.run(&std::cout)) wrong += row.wrong();
    std::cout << "# " << wrong << " wrong elements\n";
    return wrong == 0 ? 0 : 1;
  } catch (const UserError& err) {
    std::cerr << "custom_block: error: " << err.what() << "\n";
    return 2;
  }
}
