#include "cores.h"

#include <utility>

#include "collectives/nccl.h"
#include "core/error.h"

namespace incsim::gpu {

CoresParams cores_params(Config& cfg, uint64_t family_chunk, bool nccl_slices, bool tree) {
  CoresParams cp;
  cp.nccl_slices = nccl_slices;
  cp.simple = {cfg.get(kCoresChunk, family_chunk ? family_chunk : kCoresChunk.default_value()),
               cfg.get(kCoresSlots, tree ? kNcclSteps : kCoresSlots.default_value())};
  cp.ll = {cfg.get(kLlChunk), kNcclSteps};
  cp.ll128 = {cfg.get(kLl128Chunk), kNcclSteps};
  cp.by_size = {cfg.get(collectives::kAutoLlMax), cfg.get(collectives::kAutoLl128Max)};
  for (const auto& [key, bytes] : {std::pair{kCoresChunk.key(), cp.simple.chunk_bytes},
                                   std::pair{kLlChunk.key(), cp.ll.chunk_bytes},
                                   std::pair{kLl128Chunk.key(), cp.ll128.chunk_bytes}})
    if (bytes % 4 != 0) throw UserError(key + " must be a positive multiple of 4");
  return cp;
}

Cores::Cores(sc_core::sc_module_name name, const std::string& gpu_name)
    : sc_core::sc_module(name), alu_(gpu_name + ".cores") {}

void Cores::trace(sc_core::sc_trace_file* tf) const {
  const std::string me = name();
  sc_core::sc_trace(tf, step_, me + ".step");
  sc_core::sc_trace(tf, pass_, me + ".chunk");
}

}  // namespace incsim::gpu
