// An architect's own testbench against the installed library: a small
// machine built as a topology graph in code (two 6-port switches, four GPUs
// each, joined by two links), an all-reduce launched on its eight GPUs
// through the communicator, at packet level (every element checked) or as
// flows, and a row per size; exit 1 on a wrong element.
//   custom_platform [ALGORITHM [packet|flow]]     (default: push packet)
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>

#include "core/config.h"
#include "core/error.h"
#include "core/report.h"
#include "platforms/communicator.h"
#include "platforms/flow_call.h"
#include "platforms/platform.h"
#include "topology/topology.h"

static const int kQuietBanner = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);

int sc_main(int argc, char* argv[]) {
  using namespace incsim;
  // 25 GB/s, 20 ns links; a GPU has one port, a switch six (4 GPUs, 2 to the other switch).
  topo::Topology t;
  t.name = "two-switch";
  const int sw0 = t.add_switch("sw0", 6), sw1 = t.add_switch("sw1", 6);
  for (int g = 0; g < 8; ++g) {
    const int gpu = t.add_endpoint("gpu" + std::to_string(g), 1);
    t.connect({gpu, 0}, {g < 4 ? sw0 : sw1, g % 4}, 25.0, 20.0);
  }
  t.connect({sw0, 4}, {sw1, 4}, 25.0, 20.0);
  t.connect({sw0, 5}, {sw1, 5}, 25.0, 20.0);
  t.finalize();

  const std::string algorithm = argc > 1 ? argv[1] : "push";  // push: the switches' reduction tables; ring: the GPUs
  const std::string fidelity = argc > 2 ? argv[2] : "packet";
  try {
    install_report_handler(false);
    if (fidelity != "packet" && fidelity != "flow")
      throw UserError("the fidelity is packet or flow, not '" + fidelity + "'");
    // Parameters as -c would set them: 1 KiB of table per port (Klenk §IV-G:
    // what 18 kB of SRAM per switch chip allows), so the 12 ports hold the
    // paper's 8 KiB waves, and a bigger one on sw0's link to sw1. Only for
    // an algorithm that reduces in the tables: a key nothing reads is an error.
    Config cfg;
    if (algorithm != "ring") {
      cfg.set("switch.reduction_table.bytes", "1024", "custom_platform");
      cfg.set("sw0.port4.reduction_table.bytes", "4096", "custom_platform");
    }
    // The machine, sized for what the algorithm needs of it (its tables, its packets).
    const platforms::PlatformDefaults d = platforms::platform_defaults(t, platforms::needs_of(t, {algorithm}));
    std::unique_ptr<platforms::GpuMachine> machine;
    std::unique_ptr<platforms::FlowPlatform> flows;
    std::unique_ptr<platforms::Communicator> comm;
    const std::vector<int> gpus{0, 1, 2, 3, 4, 5, 6, 7};
    const uint64_t seed = 1;
    if (fidelity == "packet") {
      machine = std::make_unique<platforms::GpuMachine>(t, cfg, seed, d);
      comm = std::make_unique<platforms::Communicator>(*machine, gpus, cfg, seed);
    } else {
      flows = std::make_unique<platforms::FlowPlatform>(t, cfg, d, false);
      comm = std::make_unique<platforms::Communicator>(*flows, gpus, cfg, seed);
    }
    const std::unique_ptr<platforms::Call> call =
        comm->launch(algorithm, collectives::Collective::AllReduce, elements::DType::Float32, elements::RedOp::Sum);
    cfg.check_unused();
    // As flows, what they model and what they cannot see; then the bound and the setup.
    call->describe_fidelity(std::cout);
    call->describe(std::cout, 1 << 20, algorithm);
    uint64_t wrong = 0;
    std::cout << "#       size    time_us   busbw_GBps   #wrong\n";
    for (const uint64_t bytes : {uint64_t{64} << 10, uint64_t{1} << 20}) {
      call->start(bytes, [] { sc_core::sc_pause(); });
      sc_core::sc_start();
      const platforms::Measures m = call->measures();
      wrong += m.wrong;
      std::cout << std::setw(12) << bytes << std::setw(11) << std::fixed << std::setprecision(2) << m.time_us
                << std::setw(13) << m.busbw_factor * static_cast<double>(bytes) / (m.time_us * 1e3) << std::setw(9)
                << m.wrong << "\n";
    }
    std::cout << "# " << wrong << " wrong elements\n";
    return wrong == 0 ? 0 : 1;
  } catch (const UserError& err) {
    std::cerr << "custom_platform: error: " << err.what() << "\n";
    return 2;
  }
}
