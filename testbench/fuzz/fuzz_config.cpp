// The --config file loader: any file is read or refused with a UserError.
#include <cstdint>

#include "core/error.h"
#include "fuzz_input.h"
#include "options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = incsim::fuzz::write_input(data, size, ".conf.yaml");
  const char* argv[] = {"incsim", "--config", path.c_str()};
  try {
    incsim::tb::parse_command_line(3, argv);
  } catch (const incsim::UserError&) {
  }
  return 0;
}
