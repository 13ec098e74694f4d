// Benchmark (not a test) of the simulator's speed. Two forms:
//
//   incsim-bench [incsim options]     one workload, DGX-2 ring all-reduce of
//       64 MiB unless the options say otherwise, reported in detail (packet-
//       hops, process activations and bytes per wall-clock and per CPU (user)
//       second of the run, peak resident memory);
//   incsim-bench NAME... [options]    the named workloads of docs/validation.md's
//       speed tables, one line each, the options added to every one (e.g.
//       --sizes 1M for a quick look).
//
// Compare builds by the CPU-second figures of paired runs: the machines are
// shared and wall time is noisy. SystemC elaborates once per process, so
// each named workload runs in a child forked before anything is elaborated.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <string>
#include <systemc>
#include <vector>

#include "core/error.h"
#include "core/process.h"
#include "core/report.h"
#include "experiment.h"

static const int kQuietBanner = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);

namespace {

using namespace incsim;

struct Named {
  const char* name;
  std::vector<const char*> args;
};

// The five workloads docs/validation.md measures builds by.
const std::vector<Named> kWorkloads = {
    {"dgx2-ring", {"--platform", "dgx2", "--sizes", "64M"}},
    {"dgx2-push", {"--platform", "dgx2", "--algorithm", "push", "--sizes", "64M"}},
    {"fattree2l-push", {"--platform", "fattree2l", "--gpus", "128", "--algorithm", "push", "--sizes", "1M"}},
    {"torus-multitree-msg", {"--platform", "torus", "--dims", "8x8", "--algorithm", "multitree-msg", "--sizes", "4M"}},
    {"multigpu-pnetreduce", {"--platform", "multigpu", "--algorithm", "pnetreduce", "--sizes", "16M"}},
};

void usage(std::ostream& os) {
  os << "usage: incsim-bench [incsim options]      one workload in detail (default: --platform dgx2 --sizes 64M)\n"
        "       incsim-bench NAME... [options]     named workloads, one line each; 'all' runs every one\n"
        "\n"
        "Each named workload runs in a process of its own; its line gives the packet-hops, the user CPU\n"
        "and wall seconds of the whole process (elaboration included), hops per CPU second, the peak\n"
        "resident memory and the wrong elements. Options after the names go to every workload.\n"
        "\n"
        "workloads:\n";
  for (const auto& w : kWorkloads) {
    os << "  " << std::left << std::setw(21) << w.name;
    for (const char* a : w.args) os << ' ' << a;
    os << "\n";
  }
}

double seconds(const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; }

// Packet-hops over every link; none at --fidelity flow, which builds no link.
uint64_t packet_hops(tb::Experiment& e) {
  uint64_t hops = 0;
  if (!e.workload().machine()) return 0;
  for (const auto& l : e.machine().link_ends()) hops += l.port->packets_sent();
  return hops;
}

uint64_t wrong_elements(const std::vector<tb::Row>& rows) {
  uint64_t wrong = 0;
  for (const auto& r : rows) wrong += r.wrong();
  return wrong;
}

// The single-workload form: the run alone (elaboration excluded), in detail.
int run_detailed(const std::vector<const char*>& args) {
  tb::Experiment e(tb::parse_command_line(static_cast<int>(args.size()), args.data()));
  rusage r0{};
  getrusage(RUSAGE_SELF, &r0);
  const auto t0 = std::chrono::steady_clock::now();
  const auto rows = e.run(nullptr);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double user = seconds(ru.ru_utime) - seconds(r0.ru_utime);
  const uint64_t hops = packet_hops(e), wrong = wrong_elements(rows);
  const platforms::Machine* m = e.workload().machine();
  std::cout << "workload            " << (m ? m->link_ends().size() : 0) << " link ends, " << rows.size()
            << " point(s), #wrong " << wrong << "\n"
            << "wall time           " << wall << " s\n"
            << "user CPU time       " << user << " s\n"
            << "simulated time      " << sc_core::sc_time_stamp().to_seconds() * 1e6 << " us\n"
            << "packet-hops         " << hops << "\n"
            << "packet-hops/s       " << hops / wall / 1e6 << " M\n"
            << "packet-hops/CPU-s   " << hops / user / 1e6 << " M\n"
            << "activations/s       " << activations() / wall / 1e6 << " M (SystemC method runs)\n"
            << "activations/hop     " << static_cast<double>(activations()) / hops << "\n"
            << "packets pooled      " << (m ? m->pool().capacity() : 0) << "\n"
            << "peak memory         " << ru.ru_maxrss / 1024.0 << " MiB\n";
  return wrong == 0 ? 0 : 1;
}

// One named workload in this (forked) process: the whole process measured.
int run_line(const Named& w, const std::vector<const char*>& extra) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<const char*> args{"incsim-bench"};
  args.insert(args.end(), w.args.begin(), w.args.end());
  args.push_back("--quiet");
  args.insert(args.end(), extra.begin(), extra.end());
  tb::Experiment e(tb::parse_command_line(static_cast<int>(args.size()), args.data()));
  const auto rows = e.run(nullptr);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double user = seconds(ru.ru_utime);
  const uint64_t hops = packet_hops(e), wrong = wrong_elements(rows);
  char line[160];
  std::snprintf(line, sizeof line, "%-21s %12llu %9.2f %9.2f %11.3f %9.0f %7llu\n", w.name,
                static_cast<unsigned long long>(hops), user, wall, hops / user / 1e6, ru.ru_maxrss / 1024.0,
                static_cast<unsigned long long>(wrong));
  std::cout << line << std::flush;
  return wrong == 0 ? 0 : 1;
}

int run_named(const std::vector<const Named*>& names, const std::vector<const char*>& extra) {
  std::cout << "workload                     hops    user s    wall s  M hops/CPU-s  peak MiB  #wrong\n" << std::flush;
  int status = 0;
  for (const Named* w : names) {
    const pid_t pid = fork();
    if (pid < 0) throw UserError(std::string("cannot start a process: ") + std::strerror(errno));
    if (pid == 0) {
      int rc = 2;
      try {
        rc = run_line(*w, extra);
      } catch (const UserError& err) {
        std::cerr << "incsim-bench: error: " << w->name << ": " << err.what() << "\n";
      }
      std::cout.flush();
      std::_Exit(rc);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    const int rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : 2;
    if (rc == 2) return 2;
    status = std::max(status, rc);
  }
  return status;
}

}  // namespace

int sc_main(int argc, char* argv[]) {
  std::vector<const Named*> names;
  int i = 1;
  for (; i < argc && argv[i][0] != '-'; ++i) {
    const std::string a = argv[i];
    if (a == "all") {
      for (const auto& w : kWorkloads) names.push_back(&w);
      continue;
    }
    const Named* found = nullptr;
    for (const auto& w : kWorkloads)
      if (a == w.name) found = &w;
    if (!found) {
      std::cerr << "incsim-bench: error: unknown workload '" << a << "' (incsim-bench --help lists them)\n";
      return 2;
    }
    names.push_back(found);
  }
  std::vector<const char*> extra(argv + i, argv + argc);
  for (const char* a : extra)
    if (!std::strcmp(a, "--help") || !std::strcmp(a, "-h")) {
      usage(std::cout);
      return 0;
    }
  try {
    install_report_handler(false);
    if (!names.empty()) return run_named(names, extra);
    std::vector<const char*> args{"incsim-bench", "--platform", "dgx2", "--sizes", "64M", "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_detailed(args);
  } catch (const UserError& err) {
    std::cerr << "incsim-bench: error: " << err.what() << "\n";
    return 2;
  }
}
