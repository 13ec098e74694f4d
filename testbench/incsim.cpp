// incsim: run a collective on a simulated platform and print an
// nccl-tests-style table (README.md shows an example), or synthetic traffic
// (--traffic, docs/traffic.md).
#include <cstdlib>
#include <iostream>
#include <systemc>

#include "core/error.h"
#include "core/report.h"
#include "experiment.h"
#include "traffic_experiment.h"
#include "netreduce_experiment.h"

// No SystemC banner: stdout holds results only and stderr one line per error.
// It must be set before SystemC elaborates, which is before sc_main runs.
static const int kQuietBanner = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);

// Elaborated experiment -> table, JSON, exit status (1 if any element is wrong).
template <class E>
static int run(E& e, const incsim::tb::Options& o) {
  if (o.list_params) {
    e.list_params(std::cout);
    return 0;
  }
  if (!o.dump_platform.empty()) return 0;
  e.print_header(std::cout);
  auto rows = e.run(&std::cout);
  if (!o.json.empty()) e.write_json(o.json, rows);
  uint64_t wrong = 0;
  for (const auto& r : rows) wrong += r.wrong;
  if (wrong) {
    std::cerr << "incsim: error: " << wrong << " elements differ from the reference result\n";
    return 1;
  }
  return 0;
}

int sc_main(int argc, char* argv[]) {
  using namespace incsim;
  try {
    tb::Options o = tb::parse_command_line(argc, argv);
    if (o.help) {
      std::cout << tb::usage();
      return 0;
    }
    if (o.list_choices) {
      std::cout << tb::choices();
      return 0;
    }
    install_report_handler(false);
    if (!tb::is_netreduce_platform(o.platform) &&
        (o.hosts || o.racks || o.hosts_per_rack || o.machines || o.gpus_per_machine || !o.ring.empty()))
      throw UserError("--hosts, --ring, --racks, --hosts-per-rack, --machines and --gpus-per-machine shape the "
                      "Ethernet platforms rack, spineleaf and multigpu, not " + o.platform);
    if (!o.traffic.empty()) return tb::run_traffic(o, std::cout);
    if (o.load != tb::Options().load) throw UserError("--load applies to --traffic only");
    if (tb::is_netreduce_platform(o.platform)) {
      tb::NetReduceExperiment e(o);
      return run(e, o);
    }
    tb::Experiment e(o);
    if (!o.list_params && o.dump_platform.empty() && (o.print_trees || o.print_schedule)) {
      if (o.print_trees) e.print_trees(std::cout);
      else e.print_schedule(std::cout);
      return 0;
    }
    return run(e, o);
  } catch (const UserError& e) {
    std::cerr << "incsim: error: " << e.what() << "\n";
    return 2;
  } catch (const sc_core::sc_report& r) {
    std::cerr << "incsim: error: " << r.get_msg() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "incsim: error: " << e.what() << "\n";
    return 3;
  }
}
