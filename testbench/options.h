#pragma once
// What the incsim command line (and a --config file) asks for. Every run
// option is declared once (options.cpp, with Boost.program_options): --help is
// generated from that declaration, and a --config file's top-level keys are
// the same options by the same names, applied where --config stands among the
// flags (later wins). Anything else in a config file, and every -c key=value,
// is a parameter (Config).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace incsim::topo {
class Topology;
}

namespace incsim::tb {

struct Options {
  std::string platform = "dgx2";
  // An architect's own sc_main may give the machine as a topology graph built
  // in code (testbench/examples/custom_platform.cpp); it then replaces
  // --platform's graph, and `platform` only names it.
  std::shared_ptr<const topo::Topology> topology;
  std::string collective = "allreduce";
  std::string algorithm;  // empty: the workload's default (ring; broadcast: multicast; NetReduce's platforms: theirs)
  std::optional<int> gpus;  // none: the platform's own count
  std::vector<int> gpu_list;  // --gpus 1,4,5,6 (dgx1v, dgx1p): which GPUs; gpus is then their count
  // --gpus 0,1,2/0,1,2,3,4: one allocation per DGX-1 server (gpu_list holds them all, server by server)
  std::vector<std::vector<int>> gpu_servers;
  int hosts = 0;  // --hosts (rack); 0: the platform's default
  int racks = 0, hosts_per_rack = 0;  // --racks, --hosts-per-rack (spineleaf); 0: the platform's default
  int machines = 0, gpus_per_machine = 0;  // --machines, --gpus-per-machine (multigpu)
  std::vector<int> ring;                    // --ring (rack): hosts in ring order; empty: all, in order
  std::string dims;  // --dims AxB (torus, mesh, bigraph); empty: the platform's default
  int nodes = 0;     // --nodes (fattree, cluster); 0: the platform's default
  std::string node;  // --node (cluster): the node platform
  std::string sizes = "8K:64M";
  std::string dtype = "float";
  std::string redop = "sum";
  uint64_t seed = 1;
  // --workload collective|traffic|netreduce; empty: traffic if --traffic
  // names a pattern, netreduce on NetReduce's Ethernet platforms, else collective.
  std::string workload;
  // Synthetic traffic (workloads/traffic.h): a pattern runs it instead of a collective.
  std::string traffic;  // --traffic PATTERN; empty: run a collective
  std::string load = "0.1:1:0.1";  // --load: offered loads, start:stop:step or a list
  std::vector<std::string> config_files;  // --config, in order (each applied where it stood)
  // A config file's `jobs:` list: collectives that run at once on one
  // platform, each on its own GPUs (workloads/jobs.h). What a job leaves
  // out it takes from the run's options (collective, algorithm, sizes).
  struct Job {
    std::string name;       // default job1, job2, ...
    std::vector<int> gpus;  // in rank order; with a placement, chosen when the platform is built
    std::string collective, algorithm, sizes;  // empty: the run's
    double start_us = 0;    // after each point begins
    // A placement (contiguous, random, fragmented, spread: workloads/placement.h)
    // picks `count` GPUs among those no earlier job holds; empty: gpus lists them.
    std::string placement;
    int count = 0;
    std::optional<uint64_t> seed;  // random placement, poisson arrivals; the run's --seed if absent
    // repeat: copies name.1 ... name.K, copy k starting (k-1) x interarrival_us
    // later, or, with arrivals poisson, after k-1 exponential gaps of that mean.
    int repeat = 1;
    double interarrival_us = 0;
    bool poisson = false;
    bool allow_overlap = false;  // may share GPUs with other jobs (the engines time-share them)
    // Its share of the switches' reduction tables (nvswitch/table_sharing.h):
    // weight under switch.reduction_table.policy=partitioned, quota (a
    // fraction of each table) under quota; unset: 1.
    std::optional<double> weight, quota;
    // fallback: software runs the ring if its share holds no table entry.
    bool fallback_software = false;
    std::string where;      // "config file F, line N", for messages
  };
  std::vector<Job> jobs;
  // Training iterations (workloads/train.h).
  std::string model;           // --model NAME|FILE.yaml
  uint32_t batch = 32;         // --batch: samples per GPU per iteration
  uint32_t iterations = 1;     // --iterations measured, after --warmup
  uint32_t warmup = 0;
  uint32_t tp = 1;             // --tp: tensor-parallel group size (1: data parallel only)
  uint32_t pp = 1;             // --pp: pipeline stages (1: none)
  std::string baseline;        // --baseline ALGORITHM: run beside --algorithm, for the speed-up
  // --compute: the compute model (modules/training/compute.h); empty: the
  // platform's GPU's (platforms::default_compute, TrainingWorkload::compute_model).
  std::string compute;
  std::string precision = "fp32";
  std::string timeline;        // --timeline FILE.json: a Chrome trace-event file
  std::string vcd, json, csv, dump_platform;
  std::string fidelity = "packet";  // --fidelity: packet (the reference) or flow (docs/flow.md)
  bool check_fidelity = false;      // --check-fidelity: flows beside packet level at the smallest size
  std::string log;  // --log: what blocks report on stderr (core/log.h); empty: nothing
  // Parameters: -c key=value and a config file's parameters, in the order
  // given, each with its source ("-c" or the file's path); later wins.
  struct Setting {
    std::string key, value, source;
  };
  std::vector<Setting> params;
  bool quiet = false, list_params = false, list_all = false, list_choices = false, help = false, version = false,
       print_schedule = false, print_trees = false, print_program = false;
  // Which run options were given (by a flag or a config file): a workload
  // refuses the ones it has no use for.
  std::vector<std::string> given;
  bool was_given(const std::string& option) const;
};

// Parses argv (and every --config file it names, in place); throws UserError
// with one sentence on a bad flag, value or file.
Options parse_command_line(int argc, const char* const* argv);
// --help: generated from the same declaration the parser uses.
std::string usage();
// "8x8" -> {8, 8}; throws UserError unless it is two whole numbers joined by x.
std::pair<int, int> parse_dims(const std::string& text);

}  // namespace incsim::tb
