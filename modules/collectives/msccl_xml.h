#pragma once
// MSCCL's XML algorithms (the format msccl-tools' ir_to_xml writes, and TACCL
// and TE-CCL with it) as Programs; docs/programs.md has the mapping. Plain
// C++, no SystemC.
#include <string>

#include "collectives/program.h"

namespace incsim::collectives {

// Throws UserError naming the file and the element (gpu, tb, step ids) for a
// file that is not such an algorithm: a step whose peer is not its thread
// block's, a dependency on a step that does not exist, a buffer or chunk out
// of range, a collective or protocol incsim does not know.
Program read_msccl_xml(const std::string& text, const std::string& file);
Program read_msccl_file(const std::string& path);

}  // namespace incsim::collectives
