// The one sc_main of every test executable (STYLE.md, convention 8):
// libsystemc defines main(), so Catch2 runs as a session inside sc_main.
// incsim's report handler counts SystemC warnings and errors; any of them,
// from the model or from the SystemC kernel, fails the run even when every
// assertion passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>
#include <iostream>
#include <systemc>

#include "core/report.h"

// No SystemC banner, also when CMake runs the executable to list its tests:
// it must be set before SystemC elaborates, which is before sc_main runs.
static const int kQuietBanner = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);

int sc_main(int argc, char* argv[]) {
  incsim::install_report_handler(false);
  const int failed = Catch::Session().run(argc, argv);
  const int warnings = incsim::reported_warnings();
  const int errors = incsim::reported_errors();
  if (warnings || errors) {
    std::cerr << "test failed: SystemC reported " << warnings << " warning(s) and " << errors << " error(s)\n";
    return failed ? failed : 1;
  }
  return failed;
}
