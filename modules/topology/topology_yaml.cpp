// YAML platform files: the same description the built-in platforms produce.
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "core/error.h"
#include "core/yaml_file.h"
#include "direct_networks.h"
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
    const auto kind = scalar<std::string>(n, "kind", sw ? kinds::kNvSwitch : kinds::kGpu, file);
    if (sw) t.add_switch(name, ports, kind);
    else t.add_endpoint(name, ports, kind);
  }
}

// The shortest text that reads back as the same double, so a dump loads
// back bit for bit.
std::string number(double v) {
  std::ostringstream os;
  for (int digits = 6; digits <= 17; ++digits) {
    os.str("");
    os << std::setprecision(digits) << v;
    if (std::stod(os.str()) == v) break;
  }
  return os.str();
}

}  // namespace

Topology load_yaml(const std::string& file, const std::function<LinkDefaults(const std::string& family)>& link_defaults) {
  const YAML::Node root = load_yaml_file(file, "platform file");
  if (!root.IsMap()) throw UserError("platform file " + file + " must be a map with endpoints, switches and links");
  for (const auto& kv : root) {
    auto k = kv.first.as<std::string>();
    if (k != "name" && k != "family" && k != "grid" && k != "routing" && k != "vc_policy" && k != "link" &&
        k != "endpoints" && k != "switches" && k != "links")
      throw UserError("platform file " + file + ": unknown key '" + k + "'");
  }
  Topology t;
  t.name = scalar<std::string>(root, "name", file, file);
  t.family = scalar<std::string>(root, "family", Topology::kKlenk, file);
  if (t.family != Topology::kKlenk && t.family != Topology::kMultiTree && t.family != "dgx1v" && t.family != "dgx1p" &&
      t.family != Topology::kNetReduce)
    throw UserError("platform file " + file + ": family must be klenk, multitree, dgx1v, dgx1p or netreduce, not '" +
                    t.family + "'");
  if (root["grid"]) {
    t.grid.kx = scalar<int>(root["grid"], "kx", 0, file);
    t.grid.ky = scalar<int>(root["grid"], "ky", 0, file);
    t.grid.wrap = scalar<bool>(root["grid"], "wrap", false, file);
  }
  t.routing = scalar<std::string>(root, "routing", t.routing, file);
  if (t.routing != "shortest-path" && t.routing != "dimension-order")
    throw UserError("platform file " + file + ": routing must be shortest-path or dimension-order, not '" + t.routing +
                    "'");
  t.vc_policy = parse_vc_policy(scalar<std::string>(root, "vc_policy", to_string(t.vc_policy), file));
  const LinkDefaults d = link_defaults(t.family);
  double bw = d.bw_GBps, lat = d.latency_ns;
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
    const int dim = scalar<int>(l, "dim", -1, file);
    if (dim < -1 || dim > 1) throw UserError("platform file " + file + ": a link's dim must be 0 (X) or 1 (Y)");
    t.connect(a, b, scalar<double>(l, "bw_GBps", bw, file), scalar<double>(l, "latency_ns", lat, file), dim,
              scalar<bool>(l, "dateline", false, file));
  }
  if (t.routing != "dimension-order") {
    t.finalize();
    return t;
  }
  try {
    t.finalize(dimension_order_routes(t));
  } catch (const std::logic_error& e) {  // a route off a shortest path: the file's grid does not fit its links
    throw UserError("platform file " + file + ": dimension-order routing does not fit its grid and links (" +
                    e.what() + ")");
  }
  return t;
}

void save_yaml(const Topology& t, std::ostream& os) {
  os << "name: " << t.name << "\nfamily: " << t.family << "\n";
  if (t.grid.kx > 0)
    os << "grid: {kx: " << t.grid.kx << ", ky: " << t.grid.ky << ", wrap: " << (t.grid.wrap ? "true" : "false")
       << "}\n";
  os << "routing: " << t.routing << "\nvc_policy: " << to_string(t.vc_policy) << "\nendpoints:\n";
  auto node = [&](int n) {
    os << "  - {name: " << t.node(n).name << ", ports: " << t.node(n).ports << ", kind: " << t.node(n).block << "}\n";
  };
  for (int e : t.endpoints()) node(e);
  os << "switches:\n";
  for (int s : t.switches()) node(s);
  os << "links:\n";
  for (const auto& l : t.links()) {
    os << "  - {a: " << t.port_name(l.a) << ", b: " << t.port_name(l.b) << ", bw_GBps: " << number(l.bw_GBps)
       << ", latency_ns: " << number(l.latency_ns);
    if (l.dim >= 0) os << ", dim: " << l.dim;
    if (l.dateline) os << ", dateline: true";
    os << "}\n";
  }
}

}  // namespace incsim::topo
