// MSCCL's XML algorithms (modules/collectives/msccl_xml.h) and the checker
// behind them: any text either reads (and then checks, with or without
// problems) or raises a UserError; a crash, a sanitizer report, another
// exception or a timeout is a finding.
#include <cstdint>
#include <string>

#include "collectives/msccl_xml.h"
#include "collectives/program_check.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const incsim::collectives::Program p =
        incsim::collectives::read_msccl_xml(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    // A check's buffers grow with the chunks a file claims: keep to what runs in a second.
    uint64_t chunks = 0;
    for (const auto& b : p.buffers) chunks += uint64_t{b.input} + b.output + b.scratch;
    if (chunks <= (1u << 20)) incsim::collectives::check_program(p);
  } catch (const incsim::UserError&) {
  }
  return 0;
}
