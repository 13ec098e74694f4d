// YAML platform files: the same description the built-in platforms produce.
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <ostream>

#include "core/error.h"
#include "core/yaml_file.h"
#include "topology.h"

namespace incsim::topo {
namespace {

PortRef parse_port(const Topology& t, const std::string& text, const std::string& file) {
  auto dot = text.rfind('.');
  if (dot == std::string::npos)
    throw UserError("platform file " + file + ": port '" + text + "' must be written NODE.PORT");
  int node = t.find(text.substr(0, dot));
  if (node < 0) throw UserError("platform file " + file + ": unknown node in port '" + text + "'");
  try {
    size_t used = 0;
    int port = std::stoi(text.substr(dot + 1), &used);
    if (used != text.size() - dot - 1) throw std::invalid_argument(text);
    return {node, port};
  } catch (const std::exception&) {
    throw UserError("platform file " + file + ": port '" + text + "' must end in a port number");
  }
}

template <class T>
T scalar(const YAML::Node& n, const char* key, T def, const std::string& file) {
  if (!n[key]) return def;
  try {
    return n[key].as<T>();
  } catch (const YAML::Exception&) {
    throw UserError("platform file " + file + ": '" + key + "' at line " +
                    std::to_string(n[key].Mark().line + 1) + " has the wrong type");
  }
}

void add_nodes(Topology& t, const YAML::Node& list, bool sw, const std::string& file) {
  if (!list) return;
  if (!list.IsSequence())
    throw UserError("platform file " + file + ": '" + (sw ? "switches" : "endpoints") + "' must be a list");
  for (const auto& n : list) {
    auto name = scalar<std::string>(n, "name", "", file);
    if (name.empty()) throw UserError("platform file " + file + ": a node has no name");
    int ports = scalar<int>(n, "ports", 0, file);
    if (sw) t.add_switch(name, ports);
    else t.add_endpoint(name, ports);
  }
}

}  // namespace

Topology load_yaml(const std::string& file, double bw, double lat) {
  const YAML::Node root = load_yaml_file(file, "platform file");
  if (!root.IsMap()) throw UserError("platform file " + file + " must be a map with endpoints, switches and links");
  for (const auto& kv : root) {
    auto k = kv.first.as<std::string>();
    if (k != "name" && k != "link" && k != "endpoints" && k != "switches" && k != "links")
      throw UserError("platform file " + file + ": unknown key '" + k + "'");
  }
  Topology t;
  t.name = scalar<std::string>(root, "name", file, file);
  if (root["link"]) {
    bw = scalar<double>(root["link"], "bw_GBps", bw, file);
    lat = scalar<double>(root["link"], "latency_ns", lat, file);
  }
  add_nodes(t, root["endpoints"], false, file);
  add_nodes(t, root["switches"], true, file);
  if (!root["links"] || !root["links"].IsSequence())
    throw UserError("platform file " + file + " has no list of links");
  for (const auto& l : root["links"]) {
    PortRef a = parse_port(t, scalar<std::string>(l, "a", "", file), file);
    PortRef b = parse_port(t, scalar<std::string>(l, "b", "", file), file);
    t.connect(a, b, scalar<double>(l, "bw_GBps", bw, file), scalar<double>(l, "latency_ns", lat, file));
  }
  t.finalize();
  return t;
}

void save_yaml(const Topology& t, std::ostream& os) {
  os << "name: " << t.name << "\nendpoints:\n";
  for (int e : t.endpoints()) os << "  - {name: " << t.node(e).name << ", ports: " << t.node(e).ports << "}\n";
  os << "switches:\n";
  for (int s : t.switches()) os << "  - {name: " << t.node(s).name << ", ports: " << t.node(s).ports << "}\n";
  os << "links:\n";
  for (const auto& l : t.links())
    os << "  - {a: " << t.port_name(l.a) << ", b: " << t.port_name(l.b) << ", bw_GBps: " << l.bw_GBps
       << ", latency_ns: " << l.latency_ns << "}\n";
}

}  // namespace incsim::topo
