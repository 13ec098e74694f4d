#pragma once
// What every run mode writes the same way: the parameters a run used, and
// bytes and utilisation per link direction (--json).
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "options.h"

namespace incsim::tb {

// The platform as the command line gave it: platform, and dims or nodes when set.
inline void platform_json(nlohmann::ordered_json& config, const Options& o) {
  config["platform"] = o.platform;
  if (!o.dims.empty()) config["dims"] = o.dims;
  if (o.nodes) config["nodes"] = o.nodes;
}

// Every parameter the run declared, with the value it used.
inline nlohmann::ordered_json params_json(const Config& cfg) {
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for (const auto& [k, p] : cfg.params()) params[k] = p.value;
  return params;
}

// One entry per link end (from, to, port): the bytes it sent during a row
// of `time_us`, and that over its capacity.
template <class Ends>
nlohmann::ordered_json links_json(const Ends& ends, const std::vector<uint64_t>& bytes, double time_us) {
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (size_t k = 0; k < ends.size(); ++k) {
    const double capacity = ends[k].port->bw_GBps() * time_us * 1e3;
    links.push_back({{"from", ends[k].from},
                     {"to", ends[k].to},
                     {"bytes", bytes[k]},
                     {"utilisation", static_cast<double>(bytes[k]) / capacity}});
  }
  return links;
}

// The nccl-tests columns of a results row.
template <class Row>
void row_json(nlohmann::ordered_json& row, const Row& r, const std::string& type, const std::string& redop) {
  row["size_bytes"] = r.size_bytes;
  row["count"] = r.count;
  row["type"] = type;
  row["redop"] = redop;
  row["time_us"] = r.time_us;
  row["algbw_GBps"] = r.algbw_GBps;
  row["busbw_GBps"] = r.busbw_GBps;
  row["wrong"] = r.wrong;
  row["bound_us"] = r.bound_us;
  row["bound_fraction"] = r.bound_fraction;
}

// Writes the --json file, one space of indent per level.
inline void write_json_file(const std::string& path, const nlohmann::ordered_json& j) {
  std::ofstream f(path);
  if (!f) throw UserError("cannot write the results file '" + path + "'");
  f << j.dump(1) << "\n";
}

}  // namespace incsim::tb
