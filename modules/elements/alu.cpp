#include "alu.h"

#include <vector>

#include "core/error.h"
#include "core/nearest.h"

namespace incsim::elements {

namespace {
struct Injected {
  std::string block;
  uint64_t elements = 0;
  bool matched = false;
  std::vector<std::string> blocks;  // every ALU's name, for the error's suggestion
};
Injected g_injected;
}  // namespace

Alu::Alu(const std::string& block) {
  if (g_injected.block.empty()) return;
  g_injected.blocks.push_back(block);
  if (block == g_injected.block) {
    faults_ = g_injected.elements;
    g_injected.matched = true;
  }
}

void Alu::inject(const std::string& block, uint64_t elements) {
  g_injected = Injected();
  g_injected.block = block;
  g_injected.elements = elements;
}

void Alu::check_matched() {
  if (g_injected.block.empty() || g_injected.matched) return;
  const std::string near = nearest(g_injected.block, g_injected.blocks);
  throw UserError("fault.alu.block names '" + g_injected.block + "', which is no block with an ALU in this run" +
                  (near.empty() ? "" : "; did you mean '" + near + "'?"));
}

void Alu::corrupt(DType t, uint8_t* acc, uint32_t bytes) {
  with_elements(t, [&](auto e) {
    using E = decltype(e);
    for (uint32_t i = 0; i < bytes && faults_; i += E::kBytes, --faults_) E::store(acc + i, E::load(acc + i) + 1);
  });
}

}  // namespace incsim::elements
