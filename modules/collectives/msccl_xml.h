#pragma once
// MSCCL's XML algorithms (the format msccl-tools' ir_to_xml writes, and TACCL
// and TE-CCL with it) as Programs; docs/programs.md has the mapping. Plain
// C++, no SystemC.
#include <string>

#include "collectives/program.h"

namespace incsim::collectives {

// The steps mean what MSCCL's runtime makes of them (msccl's
// msccl_interpreter.h and topo.cc): a receive that reduces adds what
// arrives to its src chunk and writes dst; a step that depends on step k of
// another thread block waits for the first step at or after k with
// hasdep="1", the one after which the runtime signals progress.
//
// Throws UserError naming the file, the line and the element ("FILE:12: gpu
// 0 tb 3 step 2: ...") for a file that is not such an algorithm: malformed
// XML (nested past a depth cap too), a step whose peer is not its thread
// block's, a dependency on a step that does not exist or that nothing
// signals, a buffer or chunk out of range, a collective or protocol incsim
// does not know, and what the runtime leaves undefined: two thread blocks of
// a GPU on one connection (channel, peer and direction). Time and memory
// are linear in the file.
Program read_msccl_xml(const std::string& text, const std::string& file);
// The same from a file, refused before reading if it is over 64 MiB.
Program read_msccl_file(const std::string& path);

}  // namespace incsim::collectives
