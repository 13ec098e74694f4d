// Benchmark (not a test): a fixed workload, DGX-2 ring all-reduce of 64 MiB by
// default (NetReduce's: --platform multigpu --algorithm pnetreduce --sizes
// 256M), reporting simulated packet-hops, process activations and bytes per
// wall-clock second and the peak resident memory. Extra arguments go to the
// run as on the incsim command line (e.g. --sizes 4M for a quick look).
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <systemc>
#include <vector>

#include "core/error.h"
#include "core/process.h"
#include "core/report.h"
#include "experiment.h"
#include "netreduce_experiment.h"
#include "platforms/netreduce_rack.h"

static const int kQuietBanner = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);

namespace {
// Runs experiment e and prints the report; `endpoints`: GPUs or hosts.
template <class Exp>
int bench(Exp& e, int endpoints) {
  using namespace incsim;
  const auto t0 = std::chrono::steady_clock::now();
  auto rows = e.run(nullptr);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t hops = 0;
  for (const auto& l : e.platform().link_ends()) hops += l.port->packets_sent();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::cout << "workload            " << endpoints << " endpoints, " << rows.size() << " size(s), last "
            << rows.back().size_bytes << " B, #wrong " << rows.back().wrong << "\n"
            << "wall time           " << wall << " s\n"
            << "simulated time      " << sc_core::sc_time_stamp().to_seconds() * 1e6 << " us\n"
            << "packet-hops         " << hops << "\n"
            << "packet-hops/s       " << hops / wall / 1e6 << " M\n"
            << "activations/s       " << activations() / wall / 1e6 << " M (SystemC method runs)\n"
            << "activations/hop     " << static_cast<double>(activations()) / hops << "\n"
            << "packets pooled      " << e.platform().pool().capacity() << "\n"
            << "peak memory         " << ru.ru_maxrss / 1024.0 << " MiB\n";
  return rows.back().wrong == 0 ? 0 : 1;
}
}  // namespace

int sc_main(int argc, char* argv[]) {
  using namespace incsim;
  std::vector<const char*> args{"incsim-bench", "--platform", "dgx2", "--sizes", "64M", "--quiet"};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  try {
    install_report_handler(false);
    const tb::Options o = tb::parse_command_line(static_cast<int>(args.size()), args.data());
    if (tb::is_netreduce_platform(o.platform)) {  // NetReduce's Ethernet platforms (issue 5's benchmark: multigpu)
      tb::NetReduceExperiment e(o);
      return bench(e, e.platform().ring_size());
    }
    tb::Experiment e(o);
    return bench(e, e.participants());
  } catch (const UserError& err) {
    std::cerr << "incsim-bench: error: " << err.what() << "\n";
    return 2;
  }
}
