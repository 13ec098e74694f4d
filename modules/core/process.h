#pragma once
// SC_METHOD processes for blocks with a variable number of ports: one method
// per port, woken by its own event (STYLE.md, convention 4: no threads and no
// clock on a packet's path).
#include <cstdint>
#include <functional>
#include <systemc>

namespace incsim {

// Process activations so far (the benchmark reports them per second).
inline uint64_t& activations() {
  static uint64_t n = 0;
  return n;
}

inline void spawn_method(const char* name, std::function<void()> body, const sc_core::sc_event* wake) {
  sc_core::sc_spawn_options opt;
  opt.spawn_method();
  opt.dont_initialize();
  opt.set_sensitivity(wake);
  sc_core::sc_spawn(
      [body = std::move(body)] {
        ++activations();
        body();
      },
      name, &opt);
}

}  // namespace incsim
