// SCALE-Sim's topology CSVs (modules/training/scalesim_topology.h): any
// text either reads or raises a UserError; a crash, a sanitizer report,
// another exception or a timeout is a finding.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "training/scalesim_topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    incsim::training::parse_scalesim_topology(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv");
  } catch (const incsim::UserError&) {
  }
  return 0;
}
