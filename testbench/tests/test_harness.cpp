// Checks the shared sc_main: each test here passes every assertion but makes
// SystemC report a warning or an error, so its process must exit non-zero.
// CTest runs them with WILL_FAIL.
#include <catch2/catch.hpp>

#include <systemc>

TEST_CASE("a SystemC warning fails the test", "[harness]") {
  SC_REPORT_WARNING("incsim/test", "a warning the harness must count");
  CHECK(true);
}

TEST_CASE("a SystemC error caught by the test still fails it", "[harness]") {
  try {
    SC_REPORT_ERROR("incsim/test", "an error the harness must count");
  } catch (const sc_core::sc_report&) {
  }
  CHECK(true);
}

TEST_CASE("a SystemC kernel warning fails the test", "[harness]") {
  // Starting a simulation with nothing to simulate is fine; stopping an
  // unstarted one is a kernel warning.
  sc_core::sc_stop();
  sc_core::sc_stop();
  CHECK(true);
}
