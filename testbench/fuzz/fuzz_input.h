#pragma once
// What the fuzz targets share: the input as a file (the loaders read paths),
// and the rule that a UserError is an answer while anything else is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

namespace incsim::fuzz {

// The files this process wrote, removed when it exits: a run leaves nothing
// in /tmp (a finding's input is libFuzzer's artifact, not this file).
struct Written {
  std::set<std::string> paths;
  ~Written() {
    for (const std::string& p : paths) std::remove(p.c_str());
  }
};

// A file holding the input, one per process (libFuzzer may run jobs in parallel).
inline std::string write_input(const uint8_t* data, size_t size, const char* ext) {
  static Written written;
  const std::string path = "/tmp/incsim-fuzz-" + std::to_string(getpid()) + ext;
  written.paths.insert(path);
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), size);
  return path;
}

}  // namespace incsim::fuzz
