#pragma once
// A neural network as data-parallel and tensor-parallel training sees it: a
// list of layers in forward order, each with its work per sample, its
// parameters (so its gradient bytes) and its memory traffic. Plain C++, no
// SystemC; docs/training.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace incsim::training {

enum class Precision { fp32, fp16, bf16 };

int bytes_per_element(Precision p);
const char* to_string(Precision p);
// "fp32", "fp16" or "bf16"; anything else is a UserError.
Precision parse_precision(const std::string& text);

enum class LayerKind { conv, linear, embedding, attention, norm, pool, elementwise };

const char* to_string(LayerKind k);
// The names to_string gives; anything else is a UserError naming `where`.
LayerKind parse_layer_kind(const std::string& text, const std::string& where);

// The collective a tensor-parallel group runs on a layer's activations:
// Megatron's all-reduce, or what an ASTRA-sim file names (its ALLTOALL,
// ALLGATHER, REDUCESCATTER).
enum class TpCollective : uint8_t { allreduce, alltoall, allgather, reducescatter };
const char* to_string(TpCollective c);  // "all-reduce", "all-to-all", "all-gather", "reduce-scatter"

// How Megatron-LM (Shoeybi et al. 2019, §3) splits a transformer block's
// layer over a tensor-parallel group: `column` splits the output features
// (QKV, first FFN matrix) and needs an all-reduce of the input gradient in
// the backward pass; `row` splits the input features (attention output,
// second FFN matrix) and needs an all-reduce of the output in the forward
// pass; `heads` is attention itself, split by heads with no communication;
// `replicated` runs whole on every GPU of the group (layer norms).
enum class TensorSplit { none, column, row, heads, replicated };

const char* to_string(TensorSplit s);
TensorSplit parse_tensor_split(const std::string& text, const std::string& where);

// One matrix product C[m x n] = A[m x k] B[k x n], `count` times per sample
// (e.g. once per attention head). m counts rows per sample: output pixels of
// a convolution (k = filter height x width x input channels, n = filters),
// tokens of a sequence, or 1 for a fully connected layer on one vector.
struct Gemm {
  double m = 0, n = 0, k = 0;
  double count = 1;

  double macs() const { return m * n * k * count; }
};

// Per-layer times measured elsewhere (a profile in a workload file), for the
// whole per-GPU batch the file gives; they replace the compute model's.
struct MeasuredTimes {
  double forward_s = 0;
  double backward_s = 0;  // input gradient and weight gradient together, or the weight gradient alone:
  // the input gradient as a kernel of its own after the weight gradient's
  // (ASTRA-sim's DATA and DLRM loops, which all-reduce a layer's gradient
  // before computing its input gradient); 0: none, or in backward_s.
  double input_grad_after_s = 0;
};

struct Layer {
  std::string name;
  LayerKind kind = LayerKind::linear;
  std::vector<Gemm> gemms;  // the layer's matrix products, per sample
  double forward_flops = 0;  // per sample: 2 x the GEMMs' MACs plus elementwise work
  uint64_t params = 0;       // weights and biases (and normalisation scales)
  double input_elements = 0;   // per sample, read by the forward pass
  double output_elements = 0;  // per sample, written by the forward pass
  // Tensor parallelism: the transformer block the layer belongs to (-1: none)
  // and how Megatron splits it.
  int block = -1;
  TensorSplit split = TensorSplit::none;
  std::optional<MeasuredTimes> measured;

  uint64_t gradient_bytes(Precision p) const { return params * static_cast<uint64_t>(bytes_per_element(p)); }
  // Roofline traffic of the forward pass for `batch` samples: activations in
  // and out, weights read once (an embedding's looked-up rows only).
  double forward_bytes(uint32_t batch, Precision p) const;
  bool transformer_block() const { return block >= 0; }
  // Megatron's all-reduces of a block's layer over its tensor-parallel group,
  // per sample (elements; 0: none): a row split's output in the forward
  // pass, a column split's input gradient in the backward pass.
  double tp_forward_elements() const { return transformer_block() && split == TensorSplit::row ? output_elements : 0; }
  double tp_backward_elements() const {
    return transformer_block() && split == TensorSplit::column ? input_elements : 0;
  }
  // Or the bytes of those all-reduces for the whole batch, as ASTRA-sim's
  // model-parallel files give them (0: from the split).
  uint64_t tp_forward_batch_bytes = 0, tp_backward_batch_bytes = 0;
  // An ASTRA-sim file's other collective in their place, of those bytes
  // (ASTRA-sim's sizes: an all-gather's bytes are each GPU's share, a
  // reduce-scatter's and an all-to-all's each GPU's whole buffer): an expert
  // layer's all-to-all, a sequence-parallel all-gather.
  TpCollective tp_forward_kind = TpCollective::allreduce, tp_backward_kind = TpCollective::allreduce;
  // Activation checkpointing (ASTRA-sim's HYBRID_TRANSFORMER_FWD_IN_BCKWD):
  // before this layer's backward kernel, the forward kernels of layers
  // [recompute_from, this one) run again, each with its forward all-reduce;
  // -1: none.
  int recompute_from = -1;
  // The bytes each all-reduces for `batch` samples of `element` bytes (0: none).
  uint64_t tp_forward_bytes(uint32_t batch, double element) const;
  uint64_t tp_backward_bytes(uint32_t batch, double element) const;
};

// What one GPU of a tensor-parallel group of `ways` runs of `layer`: a
// transformer block's column, row or heads layer has 1/ways of the FLOPs,
// the weights (rounded up) and the split activations (a column split's
// output, a row split's input, both for heads), and of its GEMMs' output
// columns, dot products or heads, and of any measured times; any other layer
// (norms, embeddings, the output projection) runs whole on every GPU.
Layer tensor_shard(const Layer& layer, uint32_t ways);

struct Model {
  std::string name;
  std::string source;  // the publication the shapes come from
  std::vector<Layer> layers;
  // Samples are sequences of this many tokens (0 for models whose sample is
  // one image or one query).
  uint32_t sequence_length = 0;

  uint64_t parameters() const;
  uint64_t gradient_bytes(Precision p) const;
  double forward_flops() const;  // per sample
};

// "a, b, c": a list of names for a message.
std::string name_list(const std::vector<std::string>& names);

}  // namespace incsim::training
