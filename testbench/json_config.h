#pragma once
// The parts of a --json results file that every run mode (collectives,
// synthetic traffic) writes alike.
#include <nlohmann/json.hpp>

#include "core/config.h"
#include "options.h"

namespace incsim::tb {

// The platform as the command line gave it: platform, and dims or nodes when set.
inline void platform_json(nlohmann::ordered_json& config, const Options& o) {
  config["platform"] = o.platform;
  if (!o.dims.empty()) config["dims"] = o.dims;
  if (o.nodes) config["nodes"] = o.nodes;
}

// Every parameter with the value this run used.
inline nlohmann::ordered_json params_json(const Config& cfg) {
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for (const auto& [k, p] : cfg.params()) params[k] = p.value;
  return params;
}

}  // namespace incsim::tb
