#pragma once
// A Chakra node named after its id, for the tests that write traces
// (test_training reads them, test_train runs them).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "training/chakra_trace.h"

inline incsim::training::ChakraNode chakra_node(uint64_t id, incsim::training::ChakraNodeType type,
                                                std::vector<uint64_t> deps = {}) {
  incsim::training::ChakraNode n;
  n.id = id;
  n.name = "n" + std::to_string(id);
  n.type = type;
  n.data_deps = std::move(deps);
  return n;
}
