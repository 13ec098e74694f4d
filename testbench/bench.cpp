// Benchmark (not a test): a fixed workload, DGX-2 ring all-reduce of 64 MiB by
// default (NetReduce's: --platform multigpu --algorithm pnetreduce --sizes
// 256M), reporting simulated packet-hops, process activations and bytes per
// wall-clock and per CPU (user) second and the peak resident memory. Extra
// arguments go to the run as on the incsim command line (e.g. --sizes 4M for
// a quick look). Compare builds by the CPU-second figures of paired runs: the
// machines are shared and wall time is noisy.
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

static const int kQuietBanner = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);

int sc_main(int argc, char* argv[]) {
  using namespace incsim;
  std::vector<const char*> args{"incsim-bench", "--platform", "dgx2", "--sizes", "64M", "--quiet"};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  try {
    install_report_handler(false);
    tb::Experiment e(tb::parse_command_line(static_cast<int>(args.size()), args.data()));
    rusage r0{};
    getrusage(RUSAGE_SELF, &r0);
    const auto t0 = std::chrono::steady_clock::now();
    const auto rows = e.run(nullptr);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
    const double user = seconds(ru.ru_utime) - seconds(r0.ru_utime);
    uint64_t hops = 0, wrong = 0;
    for (const auto& l : e.machine().link_ends()) hops += l.port->packets_sent();
    for (const auto& r : rows) wrong += r.wrong();
    std::cout << "workload            " << e.machine().link_ends().size() << " link ends, " << rows.size()
              << " point(s), #wrong " << wrong << "\n"
              << "wall time           " << wall << " s\n"
              << "user CPU time       " << user << " s\n"
              << "simulated time      " << sc_core::sc_time_stamp().to_seconds() * 1e6 << " us\n"
              << "packet-hops         " << hops << "\n"
              << "packet-hops/s       " << hops / wall / 1e6 << " M\n"
              << "packet-hops/CPU-s   " << hops / user / 1e6 << " M\n"
              << "activations/s       " << activations() / wall / 1e6 << " M (SystemC method runs)\n"
              << "activations/hop     " << static_cast<double>(activations()) / hops << "\n"
              << "packets pooled      " << e.machine().pool().capacity() << "\n"
              << "peak memory         " << ru.ru_maxrss / 1024.0 << " MiB\n";
    return wrong == 0 ? 0 : 1;
  } catch (const UserError& err) {
    std::cerr << "incsim-bench: error: " << err.what() << "\n";
    return 2;
  }
}
