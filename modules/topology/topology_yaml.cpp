// YAML platform files: the same description the built-in platforms produce.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <initializer_list>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "core/error.h"
#include "core/yaml_file.h"
#include "direct_networks.h"
#include "topology.h"

namespace incsim::topo {
namespace {

// Every structure error names the file and the line (yaml-cpp's Mark) of the
// item at fault; never yaml-cpp's own text.
[[noreturn]] void fail(const std::string& file, const YAML::Node& at, const std::string& what) {
  const int line = at.Mark().line;
  throw UserError("platform file " + file + (line >= 0 ? ", line " + std::to_string(line + 1) : "") + ": " + what);
}

// Runs a Topology call for the item at `at`, so that its error names the line too.
template <class F>
auto at_line(const std::string& file, const YAML::Node& at, F&& f) {
  try {
    return f();
  } catch (const UserError& e) {
    fail(file, at, e.what());
  }
}

// `n` is a map whose keys are among `keys`, each once.
void check_map(const YAML::Node& n, std::initializer_list<const char*> keys, const std::string& what,
               const std::string& file) {
  std::string list;
  for (const char* k : keys) list += std::string(list.empty() ? "" : ", ") + k;
  if (!n.IsMap()) fail(file, n, what + " must be a map with the keys " + list);
  std::vector<std::string> seen;
  for (const auto& kv : n) {
    if (!kv.first.IsScalar()) fail(file, kv.first, "a key of " + what + " must be one of " + list);
    const auto k = kv.first.Scalar();
    if (std::find(keys.begin(), keys.end(), k) == keys.end())
      fail(file, kv.first, "unknown key '" + k + "' in " + what + "; the keys are " + list);
    if (std::find(seen.begin(), seen.end(), k) != seen.end())
      fail(file, kv.first, "key '" + k + "' appears twice in " + what);
    seen.push_back(k);
  }
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, int>) return "a whole number";
  else if constexpr (std::is_same_v<T, double>) return "a number";
  else return "a single value";
}

// n is a map (check_map); its key's value as T, or def if absent.
template <class T>
T scalar(const YAML::Node& n, const char* key, T def, const std::string& file) {
  const YAML::Node v = n[key];
  if (!v) return def;
  if (!v.IsScalar()) fail(file, v, std::string("'") + key + "' must be " + type_name<T>());
  try {
    return v.as<T>();
  } catch (const YAML::Exception&) {
    fail(file, v, std::string("'") + key + "' must be " + type_name<T>() + ", not '" + v.Scalar() + "'");
  }
}

PortRef parse_port(const Topology& t, const YAML::Node& link, const char* end, const std::string& file) {
  if (!link[end]) fail(file, link, std::string("a link has no '") + end + "' (NODE.PORT)");
  const auto text = scalar<std::string>(link, end, "", file);
  const YAML::Node at = link[end];
  auto dot = text.rfind('.');
  if (dot == std::string::npos) fail(file, at, "port '" + text + "' must be written NODE.PORT");
  int node = t.find(text.substr(0, dot));
  if (node < 0) fail(file, at, "unknown node in port '" + text + "'");
  try {
    size_t used = 0;
    int port = std::stoi(text.substr(dot + 1), &used);
    if (used != text.size() - dot - 1) throw std::invalid_argument(text);
    return {node, port};
  } catch (const std::exception&) {
    fail(file, at, "port '" + text + "' must end in a port number");
  }
}

void add_nodes(Topology& t, const YAML::Node& list, bool sw, const std::string& file) {
  if (!list) return;
  const std::string what = sw ? "switches" : "endpoints";
  if (!list.IsSequence()) fail(file, list, "'" + what + "' must be a list");
  // Refuse a huge list before adding its nodes one by one.
  if (t.nodes().size() + list.size() > static_cast<size_t>(kMaxNodes))
    fail(file, list, "'" + what + "' makes more than " + std::to_string(kMaxNodes) +
                         " nodes (endpoints and switches), the most a platform may have");
  for (const auto& n : list) {
    check_map(n, {"name", "ports", "kind"}, sw ? "a switch" : "an endpoint", file);
    auto name = scalar<std::string>(n, "name", "", file);
    if (name.empty()) fail(file, n, "a node has no name");
    int ports = scalar<int>(n, "ports", 0, file);
    const auto kind = scalar<std::string>(n, "kind", sw ? kinds::kNvSwitch : kinds::kGpu, file);
    at_line(file, n, [&] { return sw ? t.add_switch(name, ports, kind) : t.add_endpoint(name, ports, kind); });
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
  check_map(root, {"name", "family", "grid", "routing", "vc_policy", "link", "endpoints", "switches", "links"},
            "a platform file", file);
  Topology t;
  t.name = scalar<std::string>(root, "name", file, file);
  t.family = scalar<std::string>(root, "family", Topology::kKlenk, file);
  const char* const families[] = {Topology::kKlenk, Topology::kMultiTree, "dgx1v", "dgx1p", Topology::kNetReduce,
                                  Topology::kNetReduceMultiGpu, Topology::kHgxH100, Topology::kNvl72};
  if (std::find(std::begin(families), std::end(families), t.family) == std::end(families))
    fail(file, root["family"],
         "family must be klenk, multitree, dgx1v, dgx1p, netreduce, netreduce-multigpu, hgx-h100 or nvl72, not '" +
             t.family + "'");
  if (const YAML::Node grid = root["grid"]) {
    check_map(grid, {"kx", "ky", "wrap"}, "'grid'", file);
    t.grid.kx = scalar<int>(grid, "kx", 0, file);
    t.grid.ky = scalar<int>(grid, "ky", 0, file);
    t.grid.wrap = scalar<bool>(grid, "wrap", false, file);
  }
  t.routing = scalar<std::string>(root, "routing", t.routing, file);
  if (t.routing != "shortest-path" && t.routing != "dimension-order")
    fail(file, root["routing"], "routing must be shortest-path or dimension-order, not '" + t.routing + "'");
  const std::string vc = scalar<std::string>(root, "vc_policy", to_string(t.vc_policy), file);
  t.vc_policy = at_line(file, root, [&] { return parse_vc_policy(vc); });
  const LinkDefaults d = link_defaults(t.family);
  double bw = d.bw_GBps, lat = d.latency_ns;
  if (const YAML::Node link = root["link"]) {
    check_map(link, {"bw_GBps", "latency_ns"}, "'link'", file);
    bw = scalar<double>(link, "bw_GBps", bw, file);
    lat = scalar<double>(link, "latency_ns", lat, file);
    at_line(file, link, [&] { check_link("the default link", bw, lat); });
  }
  add_nodes(t, root["endpoints"], false, file);
  add_nodes(t, root["switches"], true, file);
  const YAML::Node links = root["links"];
  if (!links || !links.IsSequence()) throw UserError("platform file " + file + " has no list of links");
  for (const auto& l : links) {
    check_map(l, {"a", "b", "bw_GBps", "latency_ns", "dim", "dateline"}, "a link", file);
    const PortRef a = parse_port(t, l, "a", file);
    const PortRef b = parse_port(t, l, "b", file);
    const double link_bw = scalar<double>(l, "bw_GBps", bw, file), link_lat = scalar<double>(l, "latency_ns", lat, file);
    const int dim = scalar<int>(l, "dim", -1, file);
    if (dim < -1 || dim > 1) fail(file, l, "a link's dim must be 0 (X) or 1 (Y)");
    const bool dateline = scalar<bool>(l, "dateline", false, file);
    at_line(file, l, [&] { t.connect(a, b, link_bw, link_lat, dim, dateline); });
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
