// incsim: run a workload (a collective, synthetic traffic, NetReduce's jobs)
// on a simulated platform and print an nccl-tests-style table (README.md
// shows an example); everything goes through the one driver, Experiment.
#include <cstdlib>
#include <iostream>

#include "experiment.h"

// No SystemC banner: stdout holds results only and stderr one line per error.
// It must be set before SystemC elaborates, which is before sc_main runs.
static const int kQuietBanner = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);

int sc_main(int argc, char* argv[]) { return incsim::tb::run_incsim(argc, argv, std::cout, std::cerr); }
