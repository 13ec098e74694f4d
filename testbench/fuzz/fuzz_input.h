#pragma once
// What the fuzz targets share: the input as a file (the loaders read paths),
// and the rule that a UserError is an answer while anything else is a finding.
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace incsim::fuzz {

// A file holding the input, one per process (libFuzzer may run jobs in parallel).
inline std::string write_input(const uint8_t* data, size_t size, const char* ext) {
  const std::string path = "/tmp/incsim-fuzz-" + std::to_string(getpid()) + ext;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), size);
  return path;
}

}  // namespace incsim::fuzz
