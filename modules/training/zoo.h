#pragma once
// The models the four papers train, and a decoder-only transformer of any
// size. Each layer's shape follows the published architecture (the source is
// named beside each builder in zoo.cpp); parameter counts are derived from
// the shapes, never typed in. docs/training.md lists them.
#include <cstdint>
#include <string>
#include <vector>

#include "training/model.h"

namespace incsim::training {

// A GPT-style decoder-only transformer (Radford et al. 2019): learned
// positions, pre-norm blocks with a 4 x hidden feed-forward layer, output
// projection tied to the token embedding. The defaults are GPT-3 XL, 1.3B
// parameters (Brown et al. 2020, Table 2.1).
struct DecoderShape {
  uint32_t layers = 24;
  uint32_t hidden = 2048;
  uint32_t heads = 16;
  uint32_t sequence = 2048;
  uint32_t vocabulary = 50257;
};

struct ZooOptions {
  // Tokens per sample for the sequence models (transformer-big,
  // transformer-base, bert-large, gpt2); 0 keeps each model's own: 80 for
  // the translation transformers (Klenk §II-B, Fig. 1b), 512 for BERT
  // (Klenk §VI-E), 1024 for GPT-2 (its context).
  uint32_t sequence = 0;
  DecoderShape decoder;  // for "transformer"
};

// The zoo's names: alexnet, vgg16, resnet18, resnet50, googlenet,
// alphagozero, fasterrcnn, ncf, transformer-big, transformer-base,
// bert-large, gpt2, transformer (the DecoderShape one).
const std::vector<std::string>& zoo_names();

// A UserError listing zoo_names() for an unknown name, or for a DecoderShape
// or sequence that cannot be built (zero sizes, heads not dividing hidden).
Model zoo_model(const std::string& name, const ZooOptions& options = {});

Model decoder_transformer(const DecoderShape& shape);

}  // namespace incsim::training
