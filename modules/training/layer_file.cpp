#include "training/layer_file.h"

#include <cmath>

#include "core/yaml_file.h"

namespace incsim::training {
namespace {

// A non-negative finite number; `whole` also an integer below 2^53 (exact
// in a double).
double number(const YamlChecker& in, const YAML::Node& n, const char* key, double def, bool whole = false) {
  const double v = in.scalar<double>(n, key, def);
  if (!std::isfinite(v) || v < 0 || (whole && (v != std::floor(v) || v > 9007199254740992.0)))
    in.fail(n[key], std::string("'") + key + "' must be a " + (whole ? "whole " : "") + "number of at least 0");
  return v;
}

Gemm gemm(const YamlChecker& in, const YAML::Node& g) {
  if (!g.IsSequence() || g.size() < 3 || g.size() > 4)
    in.fail(g, "a GEMM is a list [m, n, k] or [m, n, k, count]");
  double v[4] = {0, 0, 0, 1};
  for (size_t i = 0; i < g.size(); ++i) {
    if (!g[i].IsScalar()) in.fail(g[i], "a GEMM's sizes must be numbers");
    try {
      v[i] = g[i].as<double>();
    } catch (const YAML::Exception&) {
      in.fail(g[i], "a GEMM's sizes must be numbers, not '" + g[i].Scalar() + "'");
    }
    if (!std::isfinite(v[i]) || v[i] < 0) in.fail(g[i], "a GEMM's sizes must be finite and at least 0");
  }
  return {v[0], v[1], v[2], v[3]};
}

Layer layer(const YamlChecker& in, const YAML::Node& n) {
  in.check_map(n,
               {"name", "kind", "params", "gemms", "forward_flops", "input_elements", "output_elements", "block",
                "split", "forward_us", "backward_us"},
               "a layer");
  Layer l;
  l.name = in.scalar<std::string>(n, "name", "");
  if (l.name.empty()) in.fail(n, "a layer has no name");
  l.kind = in.at_line(n["kind"] ? n["kind"] : n,
                      [&] { return parse_layer_kind(in.scalar<std::string>(n, "kind", "linear"), "a layer's kind"); });
  l.params = static_cast<uint64_t>(number(in, n, "params", 0, true));
  if (const YAML::Node gs = n["gemms"]) {
    if (!gs.IsSequence()) in.fail(gs, "'gemms' must be a list of [m, n, k] or [m, n, k, count]");
    for (const auto& g : gs) l.gemms.push_back(gemm(in, g));
  }
  double macs = 0;
  for (const auto& g : l.gemms) macs += g.macs();
  l.forward_flops = number(in, n, "forward_flops", 2 * macs);
  l.input_elements = number(in, n, "input_elements", 0);
  l.output_elements = number(in, n, "output_elements", 0);
  l.block = in.scalar<int>(n, "block", -1);
  if (l.block < -1) in.fail(n["block"], "'block' must be a transformer block's number, or -1 for none");
  l.split = in.at_line(n["split"] ? n["split"] : n, [&] {
    return parse_tensor_split(in.scalar<std::string>(n, "split", "none"), "a layer's split");
  });
  if (n["forward_us"] || n["backward_us"]) {
    if (!n["forward_us"] || !n["backward_us"]) in.fail(n, "a layer gives forward_us and backward_us together, or neither");
    l.measured = MeasuredTimes{number(in, n, "forward_us", 0) * 1e-6, number(in, n, "backward_us", 0) * 1e-6};
  }
  return l;
}

}  // namespace

Model read_layer_file(const std::string& path) {
  const YAML::Node root = load_yaml_file(path, "layer file");
  const YamlChecker in("layer file", path);
  in.check_map(root, {"name", "sequence_length", "layers"}, "a layer file");
  Model m;
  m.name = in.scalar<std::string>(root, "name", path);
  m.source = path;
  const double sequence = number(in, root, "sequence_length", 0, true);
  if (sequence > (1u << 20)) in.fail(root["sequence_length"], "'sequence_length' must be at most 1048576 tokens");
  m.sequence_length = static_cast<uint32_t>(sequence);
  const YAML::Node layers = root["layers"];
  if (!layers || !layers.IsSequence()) in.fail(root, "a layer file needs a list of layers");
  if (layers.size() == 0) in.fail(layers, "the list of layers is empty; a model has at least one layer");
  for (const auto& n : layers) m.layers.push_back(layer(in, n));
  return m;
}

}  // namespace incsim::training
