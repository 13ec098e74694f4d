#pragma once
// incsim's own YAML layer list, for a model the zoo does not have or a
// profile measured on real hardware (docs/training.md):
//
//   name: toy
//   sequence_length: 0           # tokens per sample, 0 for images
//   layers:
//     - name: fc1
//       kind: linear             # conv, linear, embedding, attention, norm, pool, elementwise
//       params: 1049600          # weights and biases: the gradient
//       gemms: [[1, 1024, 1024]] # m, n, k[, count] per sample (for the systolic model)
//       forward_flops: 2.1e6     # per sample; default 2 x the GEMMs' MACs
//       input_elements: 1024     # per sample, for the roofline's bytes
//       output_elements: 1024
//       block: 0                 # transformer block (tensor parallelism); -1 none
//       split: column            # none, column, row, heads, replicated
//       forward_us: 12.5         # measured for the whole batch: both or neither
//       backward_us: 25.0
#include <string>

#include "training/model.h"

namespace incsim::training {

// Throws UserError "layer file F, line N: ..." for an unknown key, a value
// of the wrong type, a negative or non-finite number, a missing name.
Model read_layer_file(const std::string& path);

}  // namespace incsim::training
