#include "cores.h"

namespace incsim::gpu {

Cores::Cores(sc_core::sc_module_name name, const std::string& gpu_name)
    : sc_core::sc_module(name), alu_(gpu_name + ".cores") {}

void Cores::trace(sc_core::sc_trace_file* tf) const {
  const std::string me = name();
  sc_core::sc_trace(tf, step_, me + ".step");
  sc_core::sc_trace(tf, pass_, me + ".chunk");
}

}  // namespace incsim::gpu
