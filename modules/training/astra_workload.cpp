#include "training/astra_workload.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <sstream>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "core/user_file.h"
#include "training/model.h"

namespace incsim::training {
namespace {

// A training iteration simulates each layer's kernels on every GPU: 10,000
// layers take 6.4 s on 4 GPUs (measured), so 100,000 about a minute, and a
// million layers would run for hours before a row.
constexpr uint32_t kMaxLayers = 100000;

// The parallelisms Workload::decode_parallelsim knows.
const std::vector<std::string> kParallelisms{"DATA",
                                             "HYBRID_TRANSFORMER",
                                             "HYBRID_TRANSFORMER_FWD_IN_BCKWD",
                                             "HYBRID_DLRM",
                                             "HYBRID_DLRM_ENHANCED",
                                             "MODEL",
                                             "HYBRID_DATA_MODEL",
                                             "HYBRID_MODEL_DATA",
                                             "HYBRID_CUSTOMIZED",
                                             "MICRO",
                                             "DISTRIBUTED_INFERENCE"};

constexpr std::array<std::pair<AstraCollective, const char*>, 6> kCollectives{
    {{AstraCollective::none, "NONE"},
     {AstraCollective::allreduce, "ALLREDUCE"},
     {AstraCollective::allgather, "ALLGATHER"},
     {AstraCollective::reducescatter, "REDUCESCATTER"},
     {AstraCollective::alltoall, "ALLTOALL"},
     {AstraCollective::allreduce_alltoall, "ALLREDUCEALLTOALL"}}};

// A file's lines as whitespace-separated fields, read one after the other.
class Reader {
 public:
  Reader(const std::string& text, std::string file) : in_(text), file_(std::move(file)) {}

  // The next line with a field on it; false at the end of the file.
  bool next() {
    std::string line;
    while (std::getline(in_, line)) {
      ++line_;
      fields_.clear();
      std::istringstream words(line);
      for (std::string w; words >> w;) fields_.push_back(w);
      if (!fields_.empty()) return true;
    }
    return false;
  }

  const std::vector<std::string>& fields() const { return fields_; }
  int line() const { return line_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw UserError("workload file " + file_ + ", line " + std::to_string(line_) + ": " + what);
  }
  [[noreturn]] void fail_at_end(const std::string& what) const {
    throw UserError("workload file " + file_ + " ends early: " + what);
  }

  // Field i as a T, the whole field; `what` names it.
  template <class T>
  T number(size_t i, const char* what) const {
    if (i >= fields_.size()) fail(std::string("no ") + what);
    const std::string& f = fields_[i];
    T v{};
    const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || end != f.data() + f.size())
      fail(std::string(what) + " must be a " + (std::is_signed_v<T> ? "" : "non-negative ") + "whole number, not '" +
           f + "'");
    return v;
  }

 private:
  std::istringstream in_;
  std::string file_;
  std::vector<std::string> fields_;
  int line_ = 0;
};

AstraCollective collective(const Reader& r, size_t i, const char* what) {
  const std::string& f = r.fields()[i];
  std::vector<std::string> names;
  for (const auto& [c, name] : kCollectives) {
    if (f == name) return c;
    names.push_back(name);
  }
  r.fail(std::string(what) + " must be one of " + name_list(names) + ", not '" + f + "'");
}

// "checkpoints: 2 2 11": a count and that many layer numbers, from field i;
// returns the field after them.
size_t layer_list(const Reader& r, size_t i, const char* key, std::vector<int64_t>& out) {
  if (i >= r.fields().size() || r.fields()[i] != key)
    r.fail(std::string("the parallelism ") + r.fields()[0] + " needs '" + key + " N' and N layer numbers");
  const auto n = r.number<uint32_t>(i + 1, key);
  if (i + 2 + n > r.fields().size()) r.fail(std::string(key) + " lists fewer than its " + std::to_string(n) + " layers");
  for (uint32_t k = 0; k < n; ++k) out.push_back(r.number<int64_t>(i + 2 + k, "a checkpoint layer"));
  return i + 2 + n;
}

// Workload::iterate_hybrid_parallel_DLRM: in the forward pass, layer 0 (the
// embedding) issues its forward ALLTOALL without waiting and the layers up
// to the last bottom one run meanwhile; the next one waits for it. In the
// backward pass, the first top layer's input gradient issues layer 0's
// input-gradient ALLTOALL, the bottom layers run meanwhile, and
// HYBRID_DLRM waits for it at layer 0. What the loop would misrun is refused.
AstraDlrm dlrm_exchange(const AstraWorkload& w, const std::string& file) {
  const auto at = [&](int line) { return "workload file " + file + ", line " + std::to_string(line) + ": "; };
  const int64_t last = w.dlrm_last_bottom_layer, layers = static_cast<int64_t>(w.layers.size());
  if (last < 1)
    throw UserError(at(1) + "the last bottom layer " + std::to_string(last) + " is not above the embedding (layer 0), " +
                    "and ASTRA-sim would issue the embedding's all-to-all and never wait for it");
  if (last >= layers - 1)
    throw UserError(at(1) + "the last bottom layer " + std::to_string(last) + " leaves no top layer of the " +
                    std::to_string(layers) + " (numbered from 0), and ASTRA-sim issues the embedding's backward " +
                    "all-to-all from the first top layer's input gradient");
  const AstraLayer& embedding = w.layers.front();
  const auto bytes = [&](const AstraComm& c, const char* what) -> uint64_t {
    if (c.type == AstraCollective::none) return 0;
    if (c.type != AstraCollective::alltoall)
      throw UserError(at(embedding.line) + "the embedding's " + what + " collective is ALLTOALL or NONE in a " +
                      w.parallelism + " file, not " + to_string(c.type));
    if (c.bytes % 4 != 0)
      throw UserError(at(embedding.line) + "the embedding's " + what + " all-to-all of " + std::to_string(c.bytes) +
                      " bytes is no whole number of 4-byte fp32 elements");
    return c.bytes;
  };
  AstraDlrm d;
  d.forward_bytes = bytes(embedding.forward.comm, "forward");
  d.backward_bytes = bytes(embedding.input_grad.comm, "input-gradient");
  d.last_bottom = static_cast<int>(last);
  d.embedding_waits = w.parallelism == "HYBRID_DLRM";
  return d;
}

}  // namespace

const char* to_string(AstraCollective c) {
  for (const auto& [v, name] : kCollectives)
    if (v == c) return name;
  return "?";
}

AstraWorkload parse_astra_workload(const std::string& text, const std::string& file) {
  Reader r(text, file);
  AstraWorkload w;
  if (!r.next()) throw UserError("workload file " + file + " is empty");
  const auto& head = r.fields();
  w.parallelism = head[0];
  if (std::find(kParallelisms.begin(), kParallelisms.end(), w.parallelism) == kParallelisms.end())
    r.fail("the parallelism must be one of " + name_list(kParallelisms) + ", not '" + w.parallelism + "'");
  size_t used = 1;
  std::vector<int64_t> checkpoints, initiates;
  if (w.parallelism == "HYBRID_TRANSFORMER" || w.parallelism == "HYBRID_TRANSFORMER_FWD_IN_BCKWD") {
    // Early files (workload_inputs/Transformer_HybridParallel.txt) give no group.
    if (used < head.size() && head[used] == "model_parallel_NPU_group:") {
      w.model_parallel_group = r.number<uint32_t>(used + 1, "model_parallel_NPU_group");
      if (w.model_parallel_group == 0) r.fail("model_parallel_NPU_group must be positive");
      used += 2;
    }
    if (w.parallelism == "HYBRID_TRANSFORMER_FWD_IN_BCKWD") {
      used = layer_list(r, used, "checkpoints:", checkpoints);
      used = layer_list(r, used, "checkpoint_initiates:", initiates);
    }
  } else if (w.parallelism == "HYBRID_DLRM" || w.parallelism == "HYBRID_DLRM_ENHANCED") {
    if (used >= head.size()) r.fail("the parallelism " + w.parallelism + " needs the number of its last bottom layer");
    w.dlrm_last_bottom_layer = r.number<int64_t>(used++, "the last bottom layer");
  }
  if (used < head.size()) r.fail("unexpected '" + head[used] + "' after the parallelism " + w.parallelism);

  if (!r.next()) r.fail_at_end("no layer count on its second line");
  const auto count = r.number<uint32_t>(0, "the layer count");
  if (r.fields().size() > 1) r.fail("the layer count line has more than a number: '" + r.fields()[1] + "'");
  if (count > kMaxLayers)
    r.fail("the layer count " + std::to_string(count) + " is more than the " + std::to_string(kMaxLayers) +
           " layers incsim runs in one model");
  const bool custom = w.parallelism == "HYBRID_CUSTOMIZED";
  const size_t fields = custom ? 13 : 12;
  while (r.next()) {
    if (w.layers.size() == count)
      r.fail("more layers than the " + std::to_string(count) + " its second line gives");
    const auto& f = r.fields();
    if (f.size() != fields)
      r.fail("a layer has " + std::to_string(fields) + " fields (name, reserved, then compute cycles, collective and " +
             "bytes for forward, input gradient and weight gradient, update cycles" +
             (custom ? ", parallelism" : "") + "), not " + std::to_string(f.size()));
    AstraLayer l;
    l.name = f[0];
    l.line = r.line();
    l.reserved = r.number<int64_t>(1, "the reserved field");
    AstraPass* passes[3] = {&l.forward, &l.input_grad, &l.weight_grad};
    const char* names[3][3] = {{"the forward compute time", "the forward collective", "the forward collective size"},
                               {"the input-gradient compute time", "the input-gradient collective",
                                "the input-gradient collective size"},
                               {"the weight-gradient compute time", "the weight-gradient collective",
                                "the weight-gradient collective size"}};
    for (int p = 0; p < 3; ++p) {
      passes[p]->cycles = r.number<uint64_t>(2 + 3 * p, names[p][0]);
      passes[p]->comm.type = collective(r, 3 + 3 * p, names[p][1]);
      passes[p]->comm.bytes = r.number<uint64_t>(4 + 3 * p, names[p][2]);
    }
    l.update_cycles = r.number<uint64_t>(11, "the update time");
    if (custom) {
      l.parallelism = f[12];
      std::vector<std::string> own = kParallelisms;
      own.erase(std::find(own.begin(), own.end(), "HYBRID_CUSTOMIZED"));
      if (std::find(own.begin(), own.end(), l.parallelism) == own.end())
        r.fail("a layer's parallelism must be one of " + name_list(own) + ", not '" + l.parallelism + "'");
    }
    w.layers.push_back(std::move(l));
  }
  if (w.layers.size() < count)
    r.fail_at_end("its second line gives " + std::to_string(count) + " layers, it has " +
                  std::to_string(w.layers.size()));
  auto mark = [&](const std::vector<int64_t>& list, bool AstraLayer::*flag, const char* key) {
    for (int64_t i : list) {
      if (i < 0 || i >= static_cast<int64_t>(count))
        throw UserError("workload file " + file + ", line 1: " + key + " names layer " + std::to_string(i) +
                        " of " + std::to_string(count) + " (numbered from 0)");
      w.layers[static_cast<size_t>(i)].*flag = true;
    }
  };
  mark(checkpoints, &AstraLayer::checkpoint, "checkpoints:");
  mark(initiates, &AstraLayer::checkpoint_initiates, "checkpoint_initiates:");
  return w;
}

AstraWorkload read_astra_workload(const std::string& path) {
  // kMaxLayers lines of ~100 B; the largest published files (a layer per
  // line) are far below this.
  return parse_astra_workload(read_user_file(path, "workload file", 16u << 20), path);
}

AstraModel astra_model(const AstraWorkload& w, const std::string& file, double clock_hz) {
  const auto at = [&](int line) { return "workload file " + file + ", line " + std::to_string(line) + ": "; };
  const std::string& p = w.parallelism;
  const bool model_parallel = p == "HYBRID_TRANSFORMER" || p == "HYBRID_TRANSFORMER_FWD_IN_BCKWD" ||
                              p == "HYBRID_DATA_MODEL" || p == "HYBRID_MODEL_DATA" || p == "MODEL";
  const bool dlrm = p == "HYBRID_DLRM" || p == "HYBRID_DLRM_ENHANCED";
  if (p != "DATA" && !model_parallel && !dlrm)
    throw UserError("workload file " + file + " is " + p + " parallel, and incsim runs ASTRA-sim's DATA, MODEL, " +
                    "HYBRID_DATA_MODEL, HYBRID_MODEL_DATA, HYBRID_TRANSFORMER, HYBRID_TRANSFORMER_FWD_IN_BCKWD, " +
                    "HYBRID_DLRM and HYBRID_DLRM_ENHANCED files only");
  AstraModel out;
  Model& m = out.model;
  m.name = file;
  m.source = "ASTRA-sim workload file";
  out.model_parallel_group = w.model_parallel_group;
  // Workload::decode_involved_dimensions: HYBRID_MODEL_DATA's data-parallel
  // collectives span the first network dimension, its model-parallel ones
  // the others.
  out.strided_groups = p == "HYBRID_MODEL_DATA";
  // A collective's bytes; another kind than an all-reduce only where `kind`
  // may say which (a model-parallel one: Layer::issue_forward_pass_comm and
  // issue_input_grad_comm issue each of the four).
  const auto comm_bytes = [&](const AstraLayer& l, const AstraComm& c, const char* what,
                              TpCollective* kind = nullptr) -> uint64_t {
    if (c.type == AstraCollective::none) return 0;
    if (c.type == AstraCollective::allreduce_alltoall)
      throw UserError(at(l.line) + "a " + what + "'s ALLREDUCEALLTOALL is read by ASTRA-sim 1.0 but issued by none " +
                      "of its layers (Layer::issue_*_comm stops with 'no known collective operation'), so it has no " +
                      "meaning to run");
    if (kind)
      *kind = c.type == AstraCollective::alltoall       ? TpCollective::alltoall
              : c.type == AstraCollective::allgather     ? TpCollective::allgather
              : c.type == AstraCollective::reducescatter ? TpCollective::reducescatter
                                                         : TpCollective::allreduce;
    // ASTRA-sim issues a weight gradient's ALLGATHER, REDUCESCATTER or
    // ALLTOALL too; incsim's gradients are all-reduced in buckets.
    if (!kind && c.type != AstraCollective::allreduce)
      throw UserError(at(l.line) + "a " + p + " " + what + " is all-reduced here, not " + std::string(to_string(c.type)) +
                      ": incsim all-reduces the weight gradients in buckets (ASTRA-sim would run it)");
    if (c.bytes % 4 != 0)
      throw UserError(at(l.line) + "a " + what + " of " + std::to_string(c.bytes) +
                      " bytes is no whole number of 4-byte fp32 elements");
    return c.bytes;
  };
  if (dlrm) out.dlrm = dlrm_exchange(w, file);
  for (const AstraLayer& l : w.layers) {
    // A DLRM file's embedding exchanges run apart (out.dlrm).
    if (!model_parallel && !(dlrm && m.layers.empty()) &&
        (l.forward.comm.type != AstraCollective::none || l.input_grad.comm.type != AstraCollective::none))
      throw UserError(at(l.line) + (dlrm ? "a " + p + " layer above the embedding (layer 0) has a forward or " +
                                               "input-gradient collective, which ASTRA-sim's DLRM loop never issues " +
                                               "or never waits for"
                                         : std::string("a DATA-parallel layer communicates only its weight gradient")));
    Layer layer;
    layer.name = l.name;
    layer.params = comm_bytes(l, l.weight_grad.comm, "weight gradient") / 4;
    if (model_parallel) {
      layer.tp_forward_batch_bytes = comm_bytes(l, l.forward.comm, "forward output", &layer.tp_forward_kind);
      // ASTRA-sim issues no input-gradient collective for the first layer: nobody needs that gradient.
      const uint64_t input_grad = comm_bytes(l, l.input_grad.comm, "input gradient", &layer.tp_backward_kind);
      layer.tp_backward_batch_bytes = m.layers.empty() ? 0 : input_grad;
      if (layer.tp_backward_batch_bytes == 0) layer.tp_backward_kind = TpCollective::allreduce;
    }
    // Workload::iterate_data_parallel and iterate_hybrid_parallel_DLRM run
    // a layer's weight gradient, issue its all-reduce, then run its input
    // gradient, and end the backward pass with layer 0's weight gradient:
    // layer 0's input gradient (nobody's output gradient; the embedding's
    // lookup indices under DLRM) is never computed. The other loops run the
    // input gradient first, layer 0's included.
    const auto s = [&](uint64_t cycles) { return static_cast<double>(cycles) / clock_hz; };
    if (model_parallel)
      layer.measured = MeasuredTimes{s(l.forward.cycles), s(l.input_grad.cycles + l.weight_grad.cycles), 0};
    else
      layer.measured = MeasuredTimes{s(l.forward.cycles), s(l.weight_grad.cycles), m.layers.empty() ? 0 : s(l.input_grad.cycles)};
    m.layers.push_back(layer);
    out.update_s += static_cast<double>(l.update_cycles) / clock_hz;
  }
  // Workload::iterate_hybrid_parallel_Transformer_fwd_in_bckwd: on reaching
  // the input gradient of a layer that initiates a recomputation, the
  // backward pass walks down to the nearest checkpoint at or below it and
  // runs the forward pass (compute and blocking forward collective) from
  // there up to the first layer that initiates one, then goes on with that
  // layer's input gradient.
  const auto layer_name = [&](size_t i) { return "layer " + std::to_string(i) + " (" + w.layers[i].name + ")"; };
  for (size_t i = 0; i < w.layers.size(); ++i) {
    if (!w.layers[i].checkpoint_initiates) continue;
    size_t c = i;
    while (c > 0 && !w.layers[c].checkpoint) --c;
    if (!w.layers[c].checkpoint)
      throw UserError(at(1) + layer_name(i) + " initiates a recomputation with no checkpoint at or below it, so " +
                      "ASTRA-sim would look for one below layer 0");
    if (c == i)
      throw UserError(at(1) + layer_name(i) + " both is a checkpoint and initiates a recomputation, which ASTRA-sim " +
                      "would carry on past it into layers whose backward pass has run");
    for (size_t j = c + 1; j < i; ++j)
      if (w.layers[j].checkpoint_initiates)
        throw UserError(at(1) + layer_name(j) + " and " + layer_name(i) + " both recompute from the checkpoint at " +
                        layer_name(c) + ", and ASTRA-sim would stop the second one's recomputation at the first and " +
                        "skip the backward pass of the layers above the first up to the second");
    m.layers[i].recompute_from = static_cast<int>(c);
  }
  return out;
}

}  // namespace incsim::training
