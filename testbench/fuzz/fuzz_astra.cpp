// ASTRA-sim's text workload format (modules/training/astra_workload.h): any
// text either reads or raises a UserError; a crash, a sanitizer report,
// another exception or a timeout is a finding.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "training/astra_workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    incsim::training::parse_astra_workload(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const incsim::UserError&) {
  }
  return 0;
}
