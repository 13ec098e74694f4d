// The YAML platform loader: any file either loads (and then writes out and
// loads back the same) or raises a UserError; a crash, a sanitizer report,
// another exception or a timeout is a finding.
#include <cstdint>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "fuzz_input.h"
#include "topology/topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace incsim;
  const std::string path = fuzz::write_input(data, size, ".yaml");
  topo::Topology t;
  try {
    t = topo::load_yaml(path, 25, 10);
  } catch (const UserError&) {
    return 0;
  }
  std::ostringstream os;
  topo::save_yaml(t, os);
  std::ofstream(path, std::ios::trunc) << os.str();
  const topo::Topology back = topo::load_yaml(path, 25, 10);  // a UserError here is a finding
  if (back.links().size() != t.links().size() || back.nodes().size() != t.nodes().size()) __builtin_trap();
  for (size_t n = 0; n < t.nodes().size(); ++n)
    for (size_t d = 0; d < t.endpoints().size(); ++d)
      if (t.route(static_cast<int>(n), static_cast<int>(d)) != back.route(static_cast<int>(n), static_cast<int>(d)))
        __builtin_trap();
  return 0;
}
