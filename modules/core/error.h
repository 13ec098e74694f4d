#pragma once
// A problem with what the user asked for (flag, key, size, topology): the
// testbench prints its message as one sentence and exits non-zero.
#include <stdexcept>
#include <string>

namespace incsim {

struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace incsim
