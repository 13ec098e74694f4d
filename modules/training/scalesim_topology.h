#pragma once
// SCALE-Sim's topology files (Samajdar et al., arXiv:1811.02883), the
// models MultiTree trains (§V-B): a header line, then one convolution per
// line, "name, IFMAP height, IFMAP width, filter height, filter width,
// channels, filters, stride," (SCALE-Sim v2 adds an optional stride along
// the width before the trailing comma). Read as SCALE-Sim computes them
// (v1's sram_traffic_os.py, v2's topology_utils.py): no padding, an output
// of (IFMAP - filter) / stride + 1 pixels rounded down (v1's; v2 rounds up),
// filter height x width x channels x filters weights and no bias; a fully
// connected layer is a convolution whose filter covers its input; pooling
// and activations are not in the file and cost nothing (docs/training.md).
#include <string>

#include "training/model.h"

namespace incsim::training {

// Throws UserError "SCALE-Sim topology F, line N: ..." for a field that is
// not a whole number of at least 1, a filter larger than its input, a line
// of another length, a depth-wise layer (v2's 'DP' in the name), no layers.
Model parse_scalesim_topology(const std::string& text, const std::string& file);
Model read_scalesim_topology(const std::string& path);

}  // namespace incsim::training
