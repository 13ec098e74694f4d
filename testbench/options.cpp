#include "options.h"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/nearest.h"
#include "core/param.h"
#include "core/yaml_file.h"
#include "choices.h"
#include "topology/cluster.h"
#include "workloads/placement.h"

namespace incsim::tb {

namespace po = boost::program_options;

bool Options::was_given(const std::string& option) const {
  return std::find(given.begin(), given.end(), option) != given.end();
}

namespace {

// Flags that act instead of running: not allowed in a config file.
const char* const kActions[] = {"help", "version", "list-params", "all", "list-choices", "print-schedule",
                                "print-trees", "print-program"};

// Every option, declared once: the parser, --help and config files read this.
const po::options_description& declaration() {
  static const po::options_description desc = [] {
    po::options_description d("usage: incsim [options]\n\noptions", 100, 50);
    auto text = [](const char* name) { return po::value<std::string>()->value_name(name); };
    d.add_options()
        ("workload", text("NAME"), (choice_list("workload") + ": what runs (default: traffic with --traffic, train "
                                     "with --model, netreduce on rack, spineleaf and multigpu, else collective)").c_str())
        ("platform", text("NAME|FILE.yaml"), ("the machine: " + choice_list("platform") + " (default dgx2)").c_str())
        ("dims", text("AxB"), "torus, mesh: routers per dimension, 2x2 to 64x64 (default 4x4); bigraph: nodes per "
                              "switch x switches, an even number of switches and at most 8192 nodes (MultiTree's "
                              "4x8 and 4x16; default 4x8)")
        ("nodes", text("N"), "fattree: k x k nodes of a k-ary 2-level tree, 16 or 64, up to 4096 (default 16); "
                             "cluster: nodes on the InfiniBand network, 2 to 16384, at most 131072 GPUs (default 4)")
        ("node", text("NAME|FILE.yaml"), ("cluster: the platform of each node, " + choice_list("node") +
                                          " or a GPU platform file (default hgx-h100)").c_str())
        ("gpus", text("N|LIST"), "GPUs taking part (star, fattree2l: GPUs built; dgx1v, dgx1p: a count or the "
                                 "allocated GPUs, such as 1,4,5,6; one list per server joined by a network: "
                                 "0,1,2/0,1,2,3,4)")
        ("hosts", text("N"), "rack (NetReduce, Ethernet): hosts on the switch, 2 to 1024 (default 6)")
        ("ring", text("LIST"), "rack: the hosts of the ring, in ring order, such as 0,2,1,3 (default: all, in order)")
        ("racks", text("R"), "spineleaf: leaves under the spine (default 2)")
        ("hosts-per-rack", text("H"), "spineleaf: hosts per leaf (default 4)")
        ("machines", text("M"), "multigpu: machines, one NIC each (default 4)")
        ("gpus-per-machine", text("N"), "multigpu: GPUs per machine (default 8)")
        ("collective", text("NAME"), (choice_list("collective") + " (default allreduce)").c_str())
        ("algorithm", text("NAME|FILE"),
         (choice_list("algorithm") + " (default: " + algorithm_defaults() +
          "; the algorithms are listed below); or a program for the GPUs' cores: MSCCL's XML (FILE.xml) or "
          "incsim's format (docs/programs.md); a list such as ring,push,pull compares them in one run: one table, "
          "a size's algorithms together, with each one's speed-up").c_str())
        ("sizes", text("8K:64M|LIST"), "message sizes: a doubling range or a list (default 8K:64M)")
        ("dtype", text("TYPE"), (choice_list("dtype") + " (default float)").c_str())
        ("redop", text("OP"), (choice_list("redop") + " (default sum)").c_str())
        ("seed", text("N"), "seed for data, memory latencies and faults (default 1)")
        ("traffic", text("PATTERN"), ("synthetic traffic instead of a collective: " + choice_list("traffic") +
                                      " (docs/traffic.md)").c_str())
        ("load", text("0.1:1:0.1|LIST"), "offered loads for --traffic, fractions of each endpoint's injection "
                                         "bandwidth in (0, 1] (default 0.1:1:0.1)")
        ("model", text("NAME|FILE"), ("train: the model, " + choice_list("model") +
                                           ", a YAML layer list (FILE.yaml), a SCALE-Sim "
                                           "topology (FILE.csv), an ASTRA-sim workload (FILE.txt) or a Chakra "
                                           "trace set (NAME.et or ASTRA-sim's prefix NAME: NAME.0.et, NAME.1.et, ...; docs/training.md)").c_str())
        ("batch", text("N"), "train: samples per GPU per iteration (default 32)")
        ("iterations", text("N"), "train: iterations measured, one row each (default 1)")
        ("warmup", text("N"), "train: iterations run before them and not reported (default 0)")
        ("tp", text("N"), "train: tensor parallelism, groups of N consecutive GPUs each holding 1/N of every "
                          "transformer block (Megatron-LM: 2 all-reduces of activations per block forward, 2 "
                          "backward), data parallel over the GPUs with the same place in their group (default 1)")
        ("pp", text("N"), "train: pipeline parallelism, N stages over consecutive blocks of GPUs, each holding its "
                          "share of the layers, micro-batches in PipeDream-Flush's 1F1B schedule (train.microbatches), "
                          "data parallel over each stage's GPUs (default 1)")
        ("baseline", text("ALGORITHM"), "the algorithm the speed-ups are against: one of --algorithm's list (default "
                                        "nccl where the list has it, else the first), or beside one --algorithm another to compare with (train: every "
                                        "iteration runs with it too)")
        ("compute", text("DEVICE"), ("train: the compute model, " + choice_list("compute") + " (default the platform's GPU: h100 on hgx-h100, b200 on nvl72, and on clusters of "
                                          "them; rtx2080 on rack and spineleaf, NetReduce's Testbed 1; v100 elsewhere, the papers')").c_str())
        ("precision", text("TYPE"), "train: fp32, fp16 or bf16: gradient bytes, the compute peak that applies, and the dtype the reduction hardware adds (default fp32)")
        ("timeline", text("FILE.json"), "write a Chrome trace-event timeline (Perfetto, chrome://tracing): train's operations per stream; any other run's GPU steps, link GB/s and table occupancy")
        ("config", text("FILE.yaml"), "options and parameters from a file, applied where it stands (later wins)")
        (",c", po::value<std::string>()->value_name("key=value"), "set a parameter (incsim --list-params shows them)")
        ("fidelity", text("packet|flow"), "packet: every packet through every block (the default and the "
                                          "reference); flow: each transfer a flow sharing links max-min fairly, "
                                          "no element values, for large clusters (the collective workload on the "
                                          "GPUs' cores; docs/flow.md)")
        ("check-fidelity", "with --fidelity flow: run packet level too at the smallest size and print each "
                           "algorithm's flow time beside it, a check of flows on this platform (docs/flow.md)")
        ("vcd", text("FILE"), "write a VCD waveform to FILE (FILE.vcd for a new name without .vcd) and a GTKWave save file beside it")
        ("json", text("FILE|-"), "write results, configuration and per-link statistics as JSON")
        ("csv", text("FILE|-"), "write the results table as CSV")
        ("dump-platform", text("FILE.yaml"), "write the platform's topology as YAML and exit")
        ("print-schedule", "print every node's schedule table (MultiTree Fig. 5 layout) and exit")
        ("print-trees", "print Blink's trees (or the rings) with weights and links and exit")
        ("print-program", "print the run's collective program (docs/programs.md) and exit")
        ("list-params", "list the parameters this run reads (value, default, source) and exit")
        ("all", "with --list-params: every parameter incsim has (type, default, range, description), nothing built")
        ("list-choices", "list the values each option accepts and exit")
        ("log", text("LEVEL|BLOCK=LEVEL,..."), "what blocks do, with the simulated time, on stderr: trace, debug, "
                                                "info, warn or off for all, and per block by hierarchical name, such "
                                                "as debug or info,sw3.port5=debug,fpga.clt=trace (docs/architecture.md)")
        ("quiet", "no progress on stderr")
        ("version", "print the version and git commit and exit")
        ("help,h", "this text");
    return d;
  }();
  return desc;
}

uint64_t parse_uint(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || *end != '\0' || errno != 0)
    throw UserError(flag + " expects a whole number, got '" + v + "'");
  return x;
}

int parse_count(const std::string& flag, const std::string& v, uint64_t lo, uint64_t hi) {
  const uint64_t x = parse_uint(flag, v);
  if (x < lo || x > hi)
    throw UserError(flag + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", not " + v);
  return static_cast<int>(x);
}

// The long options' names after `dashes` ("--" on the command line, "" in a config file).
std::vector<std::string> option_names(const std::string& dashes) {
  std::vector<std::string> names;
  for (const auto& o : declaration().options())
    if (!o->long_name().empty()) names.push_back(dashes + o->long_name());
  return names;
}

std::string unknown_option(const std::string& flag) {
  std::vector<std::string> names = option_names("--");
  names.push_back("-c");
  const std::string near = nearest(flag, names);
  return "unknown option '" + flag + "'" + (near.empty() ? "" : "; did you mean '" + near + "'?") +
         (near.empty() ? "; incsim --help lists the options" : "");
}

class Parser {
 public:
  explicit Parser(Options& o) : o_(o) {}

  // One option, by its long name ("c" for -c), from `source`.
  void apply(const std::string& name, const std::string& value, const std::string& source) {
    const std::string flag = name == "c" ? "-c" : "--" + name;
    if (name != "c" && name != "config") o_.given.push_back(name);
    // An empty file name or level would mean "not given", silently.
    for (const char* named : {"vcd", "json", "csv", "timeline", "dump-platform", "config"})
      if (name == named && value.empty())
        throw UserError("option " + flag + " needs a file name" +
                        (name == "json" || name == "csv" ? std::string(", or - for stdout") : "") + ", not ''");
    if (name == "log" && value.empty())
      throw UserError("option --log needs a level (trace, debug, info, warn or off) or BLOCK=LEVEL items, not ''");
    if (name == "workload") o_.workload = value;
    else if (name == "platform") o_.platform = value;
    else if (name == "collective") o_.collective = value;
    else if (name == "algorithm") o_.algorithm = value;
    else if (name == "gpus") gpus(flag, value);
    else if (name == "model") o_.model = value;
    else if (name == "batch") o_.batch = static_cast<uint32_t>(parse_count(flag, value, 1, 1 << 20));
    else if (name == "iterations") o_.iterations = static_cast<uint32_t>(parse_count(flag, value, 1, 10000));
    else if (name == "warmup") o_.warmup = static_cast<uint32_t>(parse_count(flag, value, 0, 10000));
    else if (name == "tp") o_.tp = static_cast<uint32_t>(parse_count(flag, value, 1, 1024));
    else if (name == "pp") o_.pp = static_cast<uint32_t>(parse_count(flag, value, 1, 1024));
    else if (name == "baseline") o_.baseline = value;
    else if (name == "compute") o_.compute = value;
    else if (name == "precision") o_.precision = value;
    else if (name == "timeline") o_.timeline = value;
    else if (name == "hosts") o_.hosts = parse_count(flag, value, 2, 1024);
    else if (name == "ring") ring(flag, value);
    else if (name == "racks") o_.racks = parse_count(flag, value, 1, 1024);
    else if (name == "hosts-per-rack") o_.hosts_per_rack = parse_count(flag, value, 1, 1024);
    else if (name == "machines") o_.machines = parse_count(flag, value, 1, 1024);
    else if (name == "gpus-per-machine") o_.gpus_per_machine = parse_count(flag, value, 1, 1024);
    else if (name == "dims") {
      parse_dims(value);
      o_.dims = value;
    } else if (name == "nodes") {
      // The platform checks its own range once it is known; 0 would read as its default.
      const uint64_t n = parse_uint(flag, value);
      if (n == 0 || n > 1000000)
        throw UserError(flag + " is a cluster's 2 to " + std::to_string(topo::kMaxClusterNodes) +
                        " nodes or a fat tree's k x k (16, 64, ...), not " + value);
      o_.nodes = static_cast<int>(n);
    }
    else if (name == "node") o_.node = value;
    else if (name == "sizes") o_.sizes = value;
    else if (name == "dtype") o_.dtype = value;
    else if (name == "redop") o_.redop = value;
    else if (name == "seed") o_.seed = parse_uint(flag, value);
    else if (name == "traffic") o_.traffic = value;
    else if (name == "load") o_.load = value;
    else if (name == "vcd") o_.vcd = value;
    else if (name == "fidelity") {
      if (value != "packet" && value != "flow")
        throw UserError("--fidelity must be packet or flow, not '" + value + "'");
      o_.fidelity = value;
    }
    else if (name == "check-fidelity") o_.check_fidelity = true;
    else if (name == "json") o_.json = value;
    else if (name == "csv") o_.csv = value;
    else if (name == "dump-platform") o_.dump_platform = value;
    else if (name == "log") o_.log = value;
    else if (name == "config") config(value);
    else if (name == "c") {
      const auto eq = value.find('=');
      if (eq == std::string::npos || eq == 0) throw UserError("-c expects key=value, got '" + value + "'");
      o_.params.push_back({value.substr(0, eq), value.substr(eq + 1), source});
    } else if (name == "quiet") o_.quiet = true;
    else if (name == "list-params") o_.list_params = true;
    else if (name == "all") o_.list_all = true;
    else if (name == "list-choices") o_.list_choices = true;
    else if (name == "print-schedule") o_.print_schedule = true;
    else if (name == "print-trees") o_.print_trees = true;
    else if (name == "print-program") o_.print_program = true;
    else if (name == "help") o_.help = true;
    else if (name == "version") o_.version = true;
    else throw UserError(unknown_option(flag));
  }

 private:
  void gpus(const std::string& flag, const std::string& value) {
    o_.gpu_list.clear();
    o_.gpu_servers.clear();
    if (value.find_first_of(",/") == std::string::npos) {
      // 0 too: the platform says which counts it builds.
      o_.gpus = parse_count(flag, value, 0, 1000000);
      return;
    }
    o_.gpu_servers.assign(1, {});
    for (size_t at = 0; at <= value.size();) {
      const size_t end = std::min(value.find_first_of(",/", at), value.size());
      const uint64_t g = parse_uint(flag, value.substr(at, end - at));
      if (g > 1000000) throw UserError("--gpus names GPU " + std::to_string(g) + ", which no platform has");
      o_.gpu_list.push_back(static_cast<int>(g));
      o_.gpu_servers.back().push_back(static_cast<int>(g));
      if (end < value.size() && value[end] == '/') o_.gpu_servers.emplace_back();
      at = end + 1;
    }
    if (o_.gpu_servers.size() == 1) o_.gpu_servers.clear();
    o_.gpus = static_cast<int>(o_.gpu_list.size());
  }

  void ring(const std::string& flag, const std::string& value) {
    o_.ring.clear();
    for (size_t at = 0; at <= value.size();) {
      const size_t end = std::min(value.find(',', at), value.size());
      const uint64_t h = parse_uint(flag, value.substr(at, end - at));
      o_.ring.push_back(static_cast<int>(std::min<uint64_t>(h, 1u << 30)));
      at = end + 1;
    }
  }

  // A config file: run options at the top level by their flag names, the
  // rest parameters, nested or dotted.
  void config(const std::string& name) {
    // An include is read from the including file's folder.
    const std::string path = beside_open_file(name);
    if (std::find(open_.begin(), open_.end(), path) != open_.end())
      throw UserError("config file " + path + " includes itself");
    YAML::Node root;
    try {
      root = load_yaml_file(path, "config file");
    } catch (const UserError& e) {
      if (open_.empty()) throw;
      throw UserError(std::string(e.what()) + " (included by " + open_.back() + ")");
    }
    if (root.IsNull()) return;
    if (!root.IsMap()) throw UserError("config file " + path + " must be a map of options and parameters");
    open_.push_back(path);
    o_.config_files.push_back(path);
    Lines seen;
    std::string mistyped;
    for (const auto& kv : root) {
      const std::string key = key_of(kv.first, path);
      once(seen, key, kv.first, path);
      if (key == "jobs") {
        jobs(kv.second, path);
        continue;
      }
      const auto* d = declaration().find_nothrow(key, false);
      if (d && std::find(std::begin(kActions), std::end(kActions), key) != std::end(kActions))
        throw UserError("config file " + path + ": '" + key + "' is a command-line action, not a setting");
      // A map under an option's name is parameters (ring: {channels: 6} is ring.channels).
      if (d && key != "c" && !kv.second.IsMap()) {
        one_value(kv.second, "option '" + key + "' takes one value, as on the command line,", path);
        const bool flag_only = d->semantic()->max_tokens() == 0;
        if (flag_only) {
          const std::string v = kv.second.as<std::string>();
          if (v == "true") apply(key, "", path);
          else if (v != "false")
            throw UserError("config file " + path + ": '" + key + "' expects true or false, got '" + v + "'");
        } else {
          // A platform file named in a config file is found beside it, as an include is.
          const std::string v = kv.second.as<std::string>();
          const bool file = key == "platform" && (v.find('/') != std::string::npos || (v.size() > 5 &&
                                                  (v.compare(v.size() - 5, 5, ".yaml") == 0 ||
                                                   v.compare(v.size() - 4, 4, ".yml") == 0)));
          apply(key, file ? beside_open_file(v) : v, path);
        }
      } else {
        // Every parameter has a dot: a plain key near an option's name is
        // that option mistyped (said once the whole file is read).
        if (!d && kv.second.IsScalar() && key.find('.') == std::string::npos && mistyped.empty()) {
          const std::string near = nearest(key, option_names(""));
          if (!near.empty())
            mistyped = "config file " + path + ": unknown option '" + key + "'; did you mean '" + near + "'?";
        }
        flatten(kv.second, key, path, seen);
      }
    }
    if (!mistyped.empty()) throw UserError(mistyped);
    open_.pop_back();
  }

  // A relative path named inside a config file: from that file's folder.
  std::string beside_open_file(const std::string& name) const {
    if (open_.empty() || name.empty() || name[0] == '/') return name;
    return (std::filesystem::path(open_.back()).parent_path() / name).lexically_normal().string();
  }

  // Where each key of one file stands, nested or dotted alike.
  using Lines = std::map<std::string, int>;
  // yaml-cpp keeps both entries of a key given twice; a config file may not.
  static void once(Lines& seen, const std::string& key, const YAML::Node& at, const std::string& path) {
    const int line = at.Mark().line + 1;
    const auto [it, fresh] = seen.emplace(key, line);
    if (!fresh)
      throw UserError("config file " + path + " sets '" + key + "' twice, on lines " + std::to_string(it->second) +
                      " and " + std::to_string(line));
  }

  // A key of a config file is a name: not a map or a list (yaml-cpp's "bad
  // conversion"), and not empty (Boost finds every option by an empty prefix).
  static std::string key_of(const YAML::Node& k, const std::string& path) {
    if (!k.IsScalar() || k.Scalar().empty())
      throw UserError("config file " + path + ", line " + std::to_string(k.Mark().line + 1) +
                      ": a key must be a non-empty name");
    return k.Scalar();
  }

  void flatten(const YAML::Node& n, const std::string& key, const std::string& path, Lines& seen) {
    if (n.IsMap()) {
      for (const auto& kv : n) {
        const std::string k = key + "." + key_of(kv.first, path);
        once(seen, k, kv.first, path);
        flatten(kv.second, k, path, seen);
      }
    } else {
      one_value(n, "parameter '" + key + "' holds one value,", path);
      o_.params.push_back({key, n.as<std::string>(), path});
    }
  }

  // jobs: a list of maps, each a job (Options::Job); a later file's list replaces an earlier one's.
  void jobs(const YAML::Node& list, const std::string& path) {
    const auto line = [&](const YAML::Node& n) {
      return "config file " + path + ", line " + std::to_string(n.Mark().line + 1);
    };
    static const std::string some = "gpus and optionally name, collective, algorithm, sizes, start_us, placement, "
                                    "seed, repeat, interarrival_us, arrivals, allow_overlap, weight, quota and fallback";
    if (!list.IsSequence()) throw UserError(line(list) + ": jobs is a list of jobs, each a map with " + some);
    if (list.size() == 0)
      throw UserError(line(list) + ": the list of jobs is empty; give at least one, a map with " + some);
    o_.jobs.clear();
    static const std::vector<std::string> keys = {"name",      "gpus", "collective", "algorithm",       "sizes",
                                                  "start_us",  "placement", "seed", "repeat", "interarrival_us",
                                                  "arrivals", "allow_overlap", "weight", "quota", "fallback"};
    for (const auto& item : list) {
      Options::Job job;
      job.where = line(item);
      job.name = "job" + std::to_string(o_.jobs.size() + 1);
      if (!item.IsMap()) throw UserError(job.where + ": a job is a map of " + some);
      YAML::Node gpus;
      std::string gpus_at;  // empty: no gpus key
      for (const auto& kv : item) {
        const std::string key = key_of(kv.first, path);
        const std::string at = line(kv.first);
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
          const std::string near = nearest(key, keys);
          throw UserError(at + ": a job has no key '" + key + "'" +
                          (near.empty() ? "; its keys are " + some : "; did you mean '" + near + "'?"));
        }
        if (key == "gpus") {
          gpus = kv.second;
          gpus_at = at;
          continue;
        }
        one_value(kv.second, "a job's '" + key + "' takes one value,", path);
        const std::string v = kv.second.as<std::string>();
        if (key == "name") job.name = v;
        else if (key == "collective") job.collective = v;
        else if (key == "sizes") job.sizes = v;
        else if (key == "start_us") job.start_us = parse_us("start_us", v, at);
        else if (key == "interarrival_us") job.interarrival_us = parse_us("interarrival_us", v, at);
        else if (key == "arrivals") job.poisson = arrivals(v, at);
        else if (key == "placement") job.placement = placement(v, at);
        else if (key == "seed") job.seed = parse_uint(at + ": a job's seed", v);
        else if (key == "repeat") job.repeat = parse_count(at + ": a job's repeat", v, 1, 4096);
        else if (key == "allow_overlap") job.allow_overlap = yes_no(v, at);
        else if (key == "weight") job.weight = parse_share("weight", v, at, 1e6);
        else if (key == "quota") job.quota = parse_share("quota", v, at, 1);
        else if (key == "fallback") job.fallback_software = fallback(v, at);
        // A program file named in a config file is found beside it.
        else job.algorithm = v.find_first_of("./") == std::string::npos ? v : beside_open_file(v);
      }
      if (gpus_at.empty()) throw UserError(job.where + ": job '" + job.name + "' names no gpus (a list such as [0, 1, 2, 3] or 0-7)");
      if (job.placement.empty()) {
        job.gpus = gpu_set(gpus, gpus_at);
      } else {
        one_value(gpus, "with a placement, a job's 'gpus' is its count of GPUs,", path);
        job.count = parse_count(gpus_at + ": with placement " + job.placement + ", gpus (a count)", gpus.Scalar(), 1,
                                1000000);
      }
      if (job.seed && job.placement != "random" && !job.poisson)
        throw UserError(job.where + ": job '" + job.name +
                        "' gives a seed, which only placement random and arrivals poisson read");
      if (job.poisson && !(job.interarrival_us > 0 && job.repeat > 1))
        throw UserError(job.where + ": job '" + job.name +
                        "' has arrivals poisson, which needs repeat above 1 and interarrival_us above 0 (the mean gap)");
      for (const auto& other : o_.jobs)
        if (other.name == job.name) throw UserError(job.where + ": two jobs are named '" + job.name + "'");
      o_.jobs.push_back(std::move(job));
    }
    o_.given.push_back("jobs");
  }

  // arrivals: fixed (copies interarrival_us apart) or poisson (exponential gaps of that mean).
  static bool arrivals(const std::string& v, const std::string& at) {
    if (v != "fixed" && v != "poisson")
      throw UserError(at + ": a job's arrivals must be fixed or poisson, not '" + v + "'");
    return v == "poisson";
  }

  static std::string placement(const std::string& v, const std::string& at) {
    if (std::find(placements().begin(), placements().end(), v) == placements().end())
      throw UserError(at + ": placement must be one of " + placement_names() + ", not '" + v + "'");
    return v;
  }

  // A weight (positive) or a quota (a fraction of a table, more than 0, at most 1).
  static double parse_share(const std::string& key, const std::string& v, const std::string& at, double hi) {
    char* end = nullptr;
    const double x = v.empty() ? -1 : std::strtod(v.c_str(), &end);
    if (end == nullptr || *end != '\0' || !(x > 0 && x <= hi))
      throw UserError(at + ": a job's " + key + " must be more than 0 and at most " + (std::ostringstream() << std::fixed << std::setprecision(0) << hi).str() +
                      ", not " + v);
    return x;
  }

  static bool fallback(const std::string& v, const std::string& at) {
    if (v == "software") return true;
    if (v == "none") return false;
    throw UserError(at + ": fallback is software (the ring when its share of the reduction tables holds no entry) "
                    "or none, not '" + v + "'");
  }

  static bool yes_no(const std::string& v, const std::string& at) {
    if (v == "true") return true;
    if (v == "false") return false;
    throw UserError(at + ": allow_overlap is true or false, not '" + v + "'");
  }

  // A job's GPUs: a list of numbers, or a text of numbers and ranges (0-7,9).
  static std::vector<int> gpu_set(const YAML::Node& n, const std::string& at) {
    std::vector<std::string> parts;
    if (n.IsSequence()) {
      for (const auto& g : n) {
        if (!g.IsScalar()) throw UserError(at + ": a job's gpus are numbers");
        parts.push_back(g.Scalar());
      }
    } else if (n.IsScalar()) {
      std::stringstream text(n.Scalar());
      for (std::string part; std::getline(text, part, ',');) parts.push_back(part);
    }
    std::vector<int> gpus;
    for (const std::string& part : parts) {
      const size_t dash = part.find('-', 1);
      const std::string what = at + ": gpus";
      const uint64_t lo = parse_uint(what, part.substr(0, dash));
      const uint64_t hi = dash == std::string::npos ? lo : parse_uint(what, part.substr(dash + 1));
      if (hi > 1000000 || lo > hi) throw UserError(at + ": '" + part + "' is not a GPU or a range of GPUs such as 0-7");
      for (uint64_t g = lo; g <= hi; ++g) {
        if (std::find(gpus.begin(), gpus.end(), static_cast<int>(g)) != gpus.end())
          throw UserError(at + ": the job names GPU " + std::to_string(g) + " twice");
        gpus.push_back(static_cast<int>(g));
      }
    }
    if (gpus.empty()) throw UserError(at + ": a job's gpus are a list such as [0, 1, 2, 3] or a range such as 0-7");
    return gpus;
  }

  static double parse_us(const std::string& key, const std::string& v, const std::string& at) {
    char* end = nullptr;
    const double us = v.empty() ? -1 : std::strtod(v.c_str(), &end);
    if (end == nullptr || *end != '\0' || !(us >= 0 && us <= 1e9))
      throw UserError(at + ": " + key + " must be between 0 and 1e9 microseconds, not " + v);
    return us;
  }

  // A setting of a config file is a scalar: `what` says what it holds.
  static void one_value(const YAML::Node& n, const std::string& what, const std::string& path) {
    if (n.IsScalar()) return;
    throw UserError("config file " + path + ": " + what + (n.IsSequence() ? " not a list" : " but has none"));
  }

  Options& o_;
  std::vector<std::string> open_;  // config files being read, to refuse a loop
};

}  // namespace

std::string usage() {
  std::ostringstream os;
  os << declaration() << "\nalgorithms (incsim --list-choices says which collectives and platforms each runs on):\n";
  os << algorithm_help();
  os << "\n"
     << "Parameters (-c key=value, or keys of a --config file) are listed by incsim --list-params;\n"
     << "README.md shows examples and docs/ describes each model.\n";
  return os.str();
}

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

Options parse_command_line(int argc, const char* const* argv) {
  Options o;
  Parser p(o);
  po::parsed_options parsed(nullptr);
  try {
    // No abbreviations: a mistyped flag is an error, never another flag.
    parsed = po::command_line_parser(argc, argv)
                 .options(declaration())
                 .style(po::command_line_style::unix_style ^ po::command_line_style::allow_guessing)
                 .run();
  } catch (const po::unknown_option& e) {
    throw UserError(unknown_option(e.get_option_name()));
  } catch (const po::invalid_command_line_syntax& e) {
    const std::string flag = e.get_option_name();
    if (e.kind() == po::invalid_syntax::missing_parameter) throw UserError("option " + flag + " needs a value");
    if (e.kind() == po::invalid_syntax::extra_parameter) throw UserError("option " + flag + " takes no value");
    throw UserError("cannot read option " + flag + " (" + e.what() + ")");
  } catch (const po::error& e) {
    throw UserError(std::string(e.what()) + "; incsim --help lists the options");
  }
  for (const auto& opt : parsed.options) {
    if (opt.position_key >= 0 || opt.string_key.empty())
      throw UserError("unexpected argument '" + (opt.original_tokens.empty() ? std::string() : opt.original_tokens[0]) +
                      "'; options start with --");
    // Boost names a short-only option by its dash ("-c").
    const std::string name = opt.string_key == "-c" ? "c" : opt.string_key;
    const std::string value = opt.value.empty() ? std::string() : opt.value.front();
    // Boost takes the next word as the value even if it is a flag.
    if (value.rfind("--", 0) == 0 || value == "-c" || value == "-h")
      throw UserError("option " + (name == "c" ? std::string("-c") : "--" + name) + " needs a value");
    p.apply(name, value, "-c");
  }
  if (o.list_all && !o.list_params) throw UserError("--all goes with --list-params (incsim --list-params --all)");
  if (o.csv == "-" && o.json == "-")
    throw UserError("--csv - and --json - would both write to stdout, and neither could be read; send one to a file");
  return o;
}

}  // namespace incsim::tb
