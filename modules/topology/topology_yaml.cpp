// YAML platform files: the same description the built-in platforms produce.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "core/error.h"
#include "core/yaml_file.h"
#include "direct_networks.h"
#include "topology.h"

namespace incsim::topo {
namespace {

PortRef parse_port(const Topology& t, const YAML::Node& link, const char* end, const YamlChecker& in) {
  if (!link[end]) in.fail(link, std::string("a link has no '") + end + "' (NODE.PORT)");
  const auto text = in.scalar<std::string>(link, end, "");
  const YAML::Node at = link[end];
  auto dot = text.rfind('.');
  if (dot == std::string::npos) in.fail(at, "port '" + text + "' must be written NODE.PORT");
  int node = t.find(text.substr(0, dot));
  if (node < 0) in.fail(at, "unknown node in port '" + text + "'");
  try {
    size_t used = 0;
    int port = std::stoi(text.substr(dot + 1), &used);
    if (used != text.size() - dot - 1) throw std::invalid_argument(text);
    return {node, port};
  } catch (const std::exception&) {
    in.fail(at, "port '" + text + "' must end in a port number");
  }
}

// Adds a list's nodes; `at` gets each node's item, for messages.
void add_nodes(Topology& t, const YAML::Node& list, bool sw, const YamlChecker& in, std::vector<YAML::Node>& at) {
  if (!list) return;
  const std::string what = sw ? "switches" : "endpoints";
  if (!list.IsSequence()) in.fail(list, "'" + what + "' must be a list");
  // Refuse a huge list before adding its nodes one by one.
  if (t.nodes().size() + list.size() > static_cast<size_t>(kMaxNodes))
    in.fail(list, "'" + what + "' makes more than " + std::to_string(kMaxNodes) +
                         " nodes (endpoints and switches), the most a platform may have");
  for (const auto& n : list) {
    in.check_map(n, {"name", "ports", "kind"}, sw ? "a switch" : "an endpoint");
    auto name = in.scalar<std::string>(n, "name", "");
    if (name.empty()) in.fail(n, "a node has no name");
    int ports = in.scalar<int>(n, "ports", 0);
    const auto kind = in.scalar<std::string>(n, "kind", sw ? kinds::kNvSwitch : kinds::kGpu);
    in.at_line(n, [&] { return sw ? t.add_switch(name, ports, kind) : t.add_endpoint(name, ports, kind); });
    at.push_back(n);
  }
}

// A switch's ports that no link uses are left out (a partly populated
// 64-port switch): the switch keeps the ports its links use, in order, so
// where the used ones come first their numbers stay. An endpoint sends on
// every port it has, so each must be linked.
Topology without_unused_ports(const Topology& t, const std::vector<YAML::Node>& at, const YamlChecker& in) {
  const int n = static_cast<int>(t.nodes().size());
  std::vector<std::vector<int>> renumbered(n);  // [node][declared port]: the port kept, -1: left out
  bool unused = false;
  for (int u = 0; u < n; ++u) {
    const Node& node = t.node(u);
    int kept = 0;
    renumbered[u].assign(node.ports, -1);
    for (int p = 0; p < node.ports; ++p) {
      if (t.peer({u, p}).node >= 0) {
        renumbered[u][p] = kept++;
        continue;
      }
      if (node.kind == NodeKind::Endpoint)
        in.fail(at[u], "endpoint " + node.name + "'s port " + std::to_string(p) + " is not linked; an endpoint sends on " +
                           "every port it declares, so declare only the ports its links use");
      unused = true;
    }
    if (kept == 0 && node.kind == NodeKind::Switch)
      in.fail(at[u], "switch " + node.name + " has no link; a switch needs at least one");
  }
  if (!unused) return t;
  Topology out;
  out.name = t.name;
  out.family = t.family;
  out.grid = t.grid;
  out.routing = t.routing;
  out.vc_policy = t.vc_policy;
  for (int u = 0; u < n; ++u) {
    const Node& node = t.node(u);
    const int kept = static_cast<int>(std::count_if(renumbered[u].begin(), renumbered[u].end(), [](int p) { return p >= 0; }));
    if (node.kind == NodeKind::Switch) out.add_switch(node.name, kept, node.block);
    else out.add_endpoint(node.name, kept, node.block);
  }
  for (const Link& l : t.links())
    out.connect({l.a.node, renumbered[l.a.node][l.a.port]}, {l.b.node, renumbered[l.b.node][l.b.port]}, l.bw_GBps,
                l.latency_ns, l.dim, l.dateline);
  return out;
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
  const YamlChecker in("platform file", file);
  if (!root.IsMap()) throw UserError("platform file " + file + " must be a map with endpoints, switches and links");
  in.check_map(root, {"name", "family", "grid", "routing", "vc_policy", "link", "endpoints", "switches", "links"},
            "a platform file");
  Topology t;
  t.name = in.scalar<std::string>(root, "name", file);
  t.family = in.scalar<std::string>(root, "family", Topology::kKlenk);
  const char* const families[] = {Topology::kKlenk, Topology::kMultiTree, "dgx1v", "dgx1p", Topology::kNetReduce,
                                  Topology::kNetReduceMultiGpu, Topology::kHgxA100, Topology::kHgxH100,
                                  Topology::kHgxB200, Topology::kNvl72};
  if (std::find(std::begin(families), std::end(families), t.family) == std::end(families))
    in.fail(root["family"],
            "family must be klenk, multitree, dgx1v, dgx1p, netreduce, netreduce-multigpu, hgx-a100, hgx-h100, "
            "hgx-b200 or nvl72, not '" +
                t.family + "'");
  if (const YAML::Node grid = root["grid"]) {
    in.check_map(grid, {"kx", "ky", "wrap"}, "'grid'");
    t.grid.kx = in.scalar<int>(grid, "kx", 0);
    t.grid.ky = in.scalar<int>(grid, "ky", 0);
    t.grid.wrap = in.scalar<bool>(grid, "wrap", false);
  }
  t.routing = in.scalar<std::string>(root, "routing", t.routing);
  if (t.routing != "shortest-path" && t.routing != "dimension-order")
    in.fail(root["routing"], "routing must be shortest-path or dimension-order, not '" + t.routing + "'");
  const std::string vc = in.scalar<std::string>(root, "vc_policy", to_string(t.vc_policy));
  t.vc_policy = in.at_line(root, [&] { return parse_vc_policy(vc); });
  const LinkDefaults d = link_defaults(t.family);
  double bw = d.bw_GBps, lat = d.latency_ns;
  if (const YAML::Node link = root["link"]) {
    in.check_map(link, {"bw_GBps", "latency_ns"}, "'link'");
    bw = in.scalar<double>(link, "bw_GBps", bw);
    lat = in.scalar<double>(link, "latency_ns", lat);
    in.at_line(link, [&] { check_link("the default link", bw, lat); });
  }
  std::vector<YAML::Node> node_at;
  add_nodes(t, root["endpoints"], false, in, node_at);
  add_nodes(t, root["switches"], true, in, node_at);
  const YAML::Node links = root["links"];
  if (!links || !links.IsSequence()) throw UserError("platform file " + file + " has no list of links");
  for (const auto& l : links) {
    in.check_map(l, {"a", "b", "bw_GBps", "latency_ns", "dim", "dateline"}, "a link");
    const PortRef a = parse_port(t, l, "a", in);
    const PortRef b = parse_port(t, l, "b", in);
    const double link_bw = in.scalar<double>(l, "bw_GBps", bw), link_lat = in.scalar<double>(l, "latency_ns", lat);
    const int dim = in.scalar<int>(l, "dim", -1);
    if (dim < -1 || dim > 1) in.fail(l, "a link's dim must be 0 (X) or 1 (Y)");
    const bool dateline = in.scalar<bool>(l, "dateline", false);
    in.at_line(l, [&] { t.connect(a, b, link_bw, link_lat, dim, dateline); });
  }
  t = without_unused_ports(t, node_at, in);
  try {
    if (t.routing != "dimension-order") t.finalize();
    else t.finalize(dimension_order_routes(t));
  } catch (const UserError& e) {  // what the whole graph has (an endpoint that cannot reach another): the file says it
    const std::string what = e.what(), prefix = "platform '" + t.name + "': ";
    throw UserError("platform file " + file + ": " + (what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what));
  } catch (const std::logic_error& e) {  // a route off a shortest path: the file's grid does not fit its links
    throw UserError("platform file " + file + ": dimension-order routing does not fit its grid and links (" +
                    e.what() + ")");
  }
  t.from_file = true;
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
