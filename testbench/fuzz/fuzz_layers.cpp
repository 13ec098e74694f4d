// incsim's YAML layer list (modules/training/layer_file.h): any file either
// reads or raises a UserError; a crash, a sanitizer report, another
// exception or a timeout is a finding.
#include <cstdint>

#include "core/error.h"
#include "fuzz_input.h"
#include "training/layer_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    incsim::training::read_layer_file(incsim::fuzz::write_input(data, size, ".yaml"));
  } catch (const incsim::UserError&) {
  }
  return 0;
}
