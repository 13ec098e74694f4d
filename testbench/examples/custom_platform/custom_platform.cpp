// An architect's own testbench against the installed library: a small
// machine built as a topology graph in code (two 6-port switches, four GPUs
// each, joined by two links), push and ring all-reduce run on it through
// incsim's one driver, the nccl-tests table printed, exit 1 on a wrong element.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/report.h"
#include "experiment.h"
#include "topology/topology.h"

static const int kQuietBanner = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);

int sc_main(int argc, char* argv[]) {
  using namespace incsim;
  // 25 GB/s, 20 ns links; a GPU has one port, a switch six (4 GPUs, 2 to the other switch).
  auto t = std::make_shared<topo::Topology>();
  t->name = "two-switch";
  const int sw0 = t->add_switch("sw0", 6), sw1 = t->add_switch("sw1", 6);
  for (int g = 0; g < 8; ++g) {
    const int gpu = t->add_endpoint("gpu" + std::to_string(g), 1);
    t->connect({gpu, 0}, {g < 4 ? sw0 : sw1, g % 4}, 25.0, 20.0);
  }
  t->connect({sw0, 4}, {sw1, 4}, 25.0, 20.0);
  t->connect({sw0, 5}, {sw1, 5}, 25.0, 20.0);
  t->finalize();

  tb::Options o;
  o.platform = t->name;
  o.topology = t;
  o.algorithm = argc > 1 ? argv[1] : "push";  // push: the switches' reduction tables; ring: the GPUs
  o.sizes = "64K,1M";
  o.quiet = true;
  // Parameters as -c would set them: 1 KiB of table per port (Klenk §IV-G:
  // what 18 kB of SRAM per switch chip allows), so the 12 ports hold the
  // paper's 8 KiB waves, and a bigger one on sw0's link to sw1. Only for an
  // algorithm that reduces in the tables: a run refuses keys it does not read.
  if (o.algorithm != "ring")
    o.params = {{"switch.reduction_table.bytes", "1024", "custom_platform"},
                {"sw0.port4.reduction_table.bytes", "4096", "custom_platform"}};
  try {
    install_report_handler(false);
    tb::Experiment e(o);
    e.print_header(std::cout);
    uint64_t wrong = 0;
    for (const auto& row : e.run(&std::cout)) wrong += row.wrong();
    std::cout << "# " << wrong << " wrong elements\n";
    return wrong == 0 ? 0 : 1;
  } catch (const UserError& err) {
    std::cerr << "custom_platform: error: " << err.what() << "\n";
    return 2;
  }
}
