#include "options.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "core/error.h"

namespace incsim::tb {

const char* usage() {
  return "usage: incsim [options]\n"
         "  --platform NAME|FILE.yaml   dgx2 (default), fattree2l, star, torus, mesh, fattree, bigraph,\n"
         "                              or a YAML platform file (incsim --list-choices)\n"
         "  --dims KXxKY                torus, mesh: routers per dimension, 2x2 to 16x16 (default 4x4);\n"
         "                              bigraph: nodes per switch x switches, 4x8 or 4x16 (default 4x8)\n"
         "  --nodes N                   fattree: k x k nodes of a k-ary 2-level tree, 16 or 64 (default 16)\n"
         "  --collective allreduce      allreduce (default), reducescatter, allgather, broadcast\n"
         "  --algorithm ring            ring (default), push or pull (in-switch reduction), multicast,\n"
         "                              dbtree, hd, ring2d, hdrm, multitree, multitree-msg (NIC schedule tables)\n"
         "  --gpus N|LIST               GPUs taking part (star, fattree2l: GPUs built; dgx1v, dgx1p: a count\n"
         "                              or the allocated GPUs, such as 1,4,5,6; one list per server joined\n"
         "                              by a network: 0,1,2/0,1,2,3,4)\n"
         "  --hosts N                   rack (NetReduce, Ethernet): hosts on the switch (default 6);\n"
         "                              with --algorithm netreduce (default) or ring (docs/netreduce.md)\n"
         "  --ring 0,2,1,3              rack: the hosts of the ring, in ring order (default: all, in order)\n"
         "  --racks R --hosts-per-rack H  spineleaf (NetReduce, Ethernet): R leaves of H hosts under a spine\n"
         "                              (default 2 x 4)\n"
         "  --machines M --gpus-per-machine n  multigpu (NetReduce): M machines of n GPUs, one NIC each\n"
         "                              (default 4 x 8); --algorithm pnetreduce (default), flatring, tencent\n"
         "  --sizes 8K:64M|8K,1M,64M    message sizes: doubling range or list (default 8K:64M)\n"
         "  --dtype float|int32         element type (default float)\n"
         "  --redop sum|min|max         reduction operator (default sum)\n"
         "  --seed N                    seed for data and memory latencies (default 1)\n"
         "  --traffic PATTERN           synthetic traffic instead of a collective: uniform, transpose,\n"
         "                              bitcomp, hotspot, neighbor (docs/traffic.md)\n"
         "  --load 0.1:1:0.1|0.2,0.5    offered loads for --traffic, fractions of each endpoint's\n"
         "                              injection bandwidth in (0, 1] (default 0.1:1:0.1)\n"
         "  --config FILE.yaml          options and parameters from a file\n"
         "  -c key=value                set a parameter (incsim --list-params shows them)\n"
         "  --vcd FILE                  write a VCD waveform\n"
         "  --json FILE                 write results, configuration and per-link statistics\n"
         "  --dump-platform FILE.yaml   write the platform's topology as YAML and exit\n"
         "  --print-schedule            print every node's schedule table (MultiTree Fig. 5 layout) and exit\n"
         "  --print-trees               print Blink's trees (or the rings) with weights and links and exit\n"
         "  --list-params               list every parameter with its default and exit\n"
         "  --list-choices              list the values each option accepts and exit\n"
         "  --quiet                     no progress on stderr\n"
         "  --help                      this text\n";
}

namespace {
uint64_t parse_uint(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || *end != '\0' || errno != 0)
    throw UserError(flag + " expects a whole number, got '" + v + "'");
  return x;
}
}  // namespace

std::pair<int, int> parse_dims(const std::string& text) {
  const auto x = text.find_first_of("xX");
  auto number = [&](const std::string& part) {
    if (part.empty() || part.size() > 6 || part.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoi(part);
  };
  const int a = x == std::string::npos ? -1 : number(text.substr(0, x));
  const int b = x == std::string::npos ? -1 : number(text.substr(x + 1));
  if (a < 0 || b < 0) throw UserError("--dims expects two whole numbers joined by x, such as 8x8, got '" + text + "'");
  return {a, b};
}

Options parse_command_line(int argc, const char* const* argv, Options o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    static const char* const kFlags[] = {"--platform", "--collective", "--algorithm", "--gpus", "--hosts", "--ring", "--racks", "--hosts-per-rack", "--machines", "--gpus-per-machine", "--dims", "--nodes", "--sizes",
                                         "--dtype",    "--redop",      "--seed",      "--config", "--vcd",
                                         "--json",     "--dump-platform", "-c",       "--quiet",  "--list-params",
                                         "--list-choices", "--print-schedule", "--print-trees", "--help",
                                         "-h", "--traffic", "--load"};
    const std::string flag = a.rfind("--", 0) == 0 ? a.substr(0, a.find('=')) : a;
    if (std::find(std::begin(kFlags), std::end(kFlags), flag) == std::end(kFlags))
      throw UserError("unknown option '" + flag + "'; incsim --help lists the options");
    const bool takes_value =
        a != "--quiet" && a != "--list-params" && a != "--list-choices" && a != "--print-schedule" && a != "--print-trees" && a != "--help" &&
        a != "-h";
    if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {
      value = a.substr(a.find('=') + 1);
      a = a.substr(0, a.find('='));
    } else if (takes_value) {
      if (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0)
        throw UserError("option " + a + " needs a value");
      value = argv[++i];
    }
    if (a == "--platform") o.platform = value;
    else if (a == "--collective") o.collective = value;
    else if (a == "--algorithm") o.algorithm = value;
    else if (a == "--gpus" && value.find_first_of(",/") != std::string::npos) {
      o.gpu_list.clear();
      o.gpu_servers.assign(1, {});
      size_t at = 0;
      while (at <= value.size()) {
        const size_t end = std::min(value.find_first_of(",/", at), value.size());
        const uint64_t g = parse_uint(a, value.substr(at, end - at));
        if (g > 1000000) throw UserError("--gpus names GPU " + std::to_string(g) + ", which no platform has");
        o.gpu_list.push_back(static_cast<int>(g));
        o.gpu_servers.back().push_back(static_cast<int>(g));
        if (end < value.size() && value[end] == '/') o.gpu_servers.emplace_back();
        at = end + 1;
      }
      if (o.gpu_servers.size() == 1) o.gpu_servers.clear();
      o.gpus = static_cast<int>(o.gpu_list.size());
    } else if (a == "--gpus") {
      o.gpu_list.clear();
      o.gpu_servers.clear();
      const uint64_t g = parse_uint(a, value);
      if (g == 0 || g > 1000000) throw UserError("--gpus must be between 1 and 1000000, not " + value);
      o.gpus = static_cast<int>(g);
    } else if (a == "--hosts") {
      const uint64_t h = parse_uint(a, value);
      if (h < 2 || h > 1024) throw UserError("--hosts must be between 2 and 1024, not " + value);
      o.hosts = static_cast<int>(h);
    } else if (a == "--ring") {
      o.ring.clear();
      for (size_t at = 0; at <= value.size();) {
        const size_t end = std::min(value.find(',', at), value.size());
        const uint64_t h = parse_uint(a, value.substr(at, end - at));
        o.ring.push_back(static_cast<int>(std::min<uint64_t>(h, 1u << 30)));
        at = end + 1;
      }
    } else if (a == "--racks" || a == "--hosts-per-rack" || a == "--machines" || a == "--gpus-per-machine") {
      const uint64_t v = parse_uint(a, value);
      if (v < 1 || v > 1024) throw UserError(a + " must be between 1 and 1024, not " + value);
      int& field = a == "--racks" ? o.racks
                   : a == "--hosts-per-rack" ? o.hosts_per_rack
                   : a == "--machines" ? o.machines
                                       : o.gpus_per_machine;
      field = static_cast<int>(v);
    } else if (a == "--dims") {
      parse_dims(value);
      o.dims = value;
    } else if (a == "--nodes") {
      const uint64_t nodes = parse_uint(a, value);
      if (nodes == 0 || nodes > 1000000) throw UserError("--nodes must be between 1 and 1000000, not " + value);
      o.nodes = static_cast<int>(nodes);
    } else if (a == "--sizes") o.sizes = value;
    else if (a == "--dtype") o.dtype = value;
    else if (a == "--redop") o.redop = value;
    else if (a == "--seed") o.seed = parse_uint(a, value);
    else if (a == "--traffic") o.traffic = value;
    else if (a == "--load") o.load = value;
    else if (a == "--config") o.config_file = value;
    else if (a == "--vcd") o.vcd = value;
    else if (a == "--json") o.json = value;
    else if (a == "--dump-platform") o.dump_platform = value;
    else if (a == "-c") {
      auto eq = value.find('=');
      if (eq == std::string::npos || eq == 0)
        throw UserError("-c expects key=value, got '" + value + "'");
      o.overrides.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    } else if (a == "--quiet") o.quiet = true;
    else if (a == "--list-params") o.list_params = true;
    else if (a == "--list-choices") o.list_choices = true;
    else if (a == "--print-schedule") o.print_schedule = true;
    else if (a == "--print-trees") o.print_trees = true;
    else if (a == "--help" || a == "-h") o.help = true;
    else throw UserError("unknown option '" + a + "'; incsim --help lists the options");
  }
  return o;
}

}  // namespace incsim::tb
