#include "training/model.h"

#include <array>
#include <cmath>
#include <utility>

#include "core/error.h"

namespace incsim::training {
namespace {

template <class E, size_t N>
E parse_name(const std::array<std::pair<E, const char*>, N>& names, const std::string& text, const std::string& what) {
  std::string list;
  for (const auto& [e, name] : names) {
    if (text == name) return e;
    list += std::string(list.empty() ? "" : ", ") + name;
  }
  throw UserError(what + " must be one of " + list + ", not '" + text + "'");
}

template <class E, size_t N>
const char* name_of(const std::array<std::pair<E, const char*>, N>& names, E e) {
  for (const auto& [v, name] : names)
    if (v == e) return name;
  return "?";
}

constexpr std::array<std::pair<Precision, const char*>, 3> kPrecisions{
    {{Precision::fp32, "fp32"}, {Precision::fp16, "fp16"}, {Precision::bf16, "bf16"}}};
constexpr std::array<std::pair<LayerKind, const char*>, 7> kKinds{{{LayerKind::conv, "conv"},
                                                                   {LayerKind::linear, "linear"},
                                                                   {LayerKind::embedding, "embedding"},
                                                                   {LayerKind::attention, "attention"},
                                                                   {LayerKind::norm, "norm"},
                                                                   {LayerKind::pool, "pool"},
                                                                   {LayerKind::elementwise, "elementwise"}}};
constexpr std::array<std::pair<TensorSplit, const char*>, 5> kSplits{{{TensorSplit::none, "none"},
                                                                      {TensorSplit::column, "column"},
                                                                      {TensorSplit::row, "row"},
                                                                      {TensorSplit::heads, "heads"},
                                                                      {TensorSplit::replicated, "replicated"}}};

}  // namespace

std::string name_list(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

int bytes_per_element(Precision p) { return p == Precision::fp32 ? 4 : 2; }
const char* to_string(Precision p) { return name_of(kPrecisions, p); }
Precision parse_precision(const std::string& text) { return parse_name(kPrecisions, text, "the precision"); }

const char* to_string(LayerKind k) { return name_of(kKinds, k); }
LayerKind parse_layer_kind(const std::string& text, const std::string& where) {
  return parse_name(kKinds, text, where);
}

const char* to_string(TensorSplit s) { return name_of(kSplits, s); }
TensorSplit parse_tensor_split(const std::string& text, const std::string& where) {
  return parse_name(kSplits, text, where);
}

double Layer::forward_bytes(uint32_t batch, Precision p) const {
  const double b = bytes_per_element(p);
  // An embedding reads the rows it looks up (its output), not its table.
  const double weights = kind == LayerKind::embedding ? output_elements * batch : static_cast<double>(params);
  return ((input_elements + output_elements) * batch + weights) * b;
}

const char* to_string(TpCollective c) {
  switch (c) {
    case TpCollective::allreduce: return "all-reduce";
    case TpCollective::alltoall: return "all-to-all";
    case TpCollective::allgather: return "all-gather";
    case TpCollective::reducescatter: return "reduce-scatter";
  }
  return "?";
}

uint64_t Layer::tp_forward_bytes(uint32_t batch, double element) const {
  return tp_forward_batch_bytes ? tp_forward_batch_bytes
                                : static_cast<uint64_t>(std::llround(tp_forward_elements() * batch * element));
}

uint64_t Layer::tp_backward_bytes(uint32_t batch, double element) const {
  return tp_backward_batch_bytes ? tp_backward_batch_bytes
                                 : static_cast<uint64_t>(std::llround(tp_backward_elements() * batch * element));
}

Layer tensor_shard(const Layer& layer, uint32_t ways) {
  const bool column = layer.split == TensorSplit::column, row = layer.split == TensorSplit::row,
             heads = layer.split == TensorSplit::heads;
  if (ways == 1 || !layer.transformer_block() || !(column || row || heads)) return layer;
  const double w = ways;
  Layer s = layer;
  s.forward_flops /= w;
  s.params = (layer.params + ways - 1) / ways;
  if (row || heads) s.input_elements /= w;
  if (column || heads) s.output_elements /= w;
  for (Gemm& g : s.gemms) (column ? g.n : row ? g.k : g.count) /= w;
  if (s.measured) s.measured->forward_s /= w, s.measured->backward_s /= w, s.measured->input_grad_after_s /= w;
  return s;
}

uint64_t Model::parameters() const {
  uint64_t n = 0;
  for (const auto& l : layers) n += l.params;
  return n;
}

uint64_t Model::gradient_bytes(Precision p) const {
  return parameters() * static_cast<uint64_t>(bytes_per_element(p));
}

double Model::forward_flops() const {
  double f = 0;
  for (const auto& l : layers) f += l.forward_flops;
  return f;
}

}  // namespace incsim::training
