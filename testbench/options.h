#pragma once
// What the incsim command line (and a --config file) asks for.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace incsim::tb {

struct Options {
  std::string platform = "dgx2";
  std::string collective = "allreduce";
  std::string algorithm;  // empty: the collective's default (ring; broadcast: multicast)
  int gpus = 0;  // 0: the platform's own count
  int hosts = 0;  // --hosts (rack); 0: the platform's default
  int racks = 0, hosts_per_rack = 0;
  int machines = 0, gpus_per_machine = 0;  // --machines, --gpus-per-machine (multigpu)  // --racks, --hosts-per-rack (spineleaf); 0: the platform's default
  std::string dims;  // --dims AxB (torus, mesh, bigraph); empty: the platform's default
  int nodes = 0;     // --nodes (fattree); 0: the platform's default
  std::string sizes = "8K:64M";
  std::string dtype = "float";
  std::string redop = "sum";
  uint64_t seed = 1;
  std::string config_file, vcd, json, dump_platform;
  std::vector<std::pair<std::string, std::string>> overrides;  // -c key=value, in order
  bool quiet = false, list_params = false, list_choices = false, help = false;
};

// Parses argv; throws UserError with one sentence on a bad flag or value.
Options parse_command_line(int argc, const char* const* argv, Options base = Options());
const char* usage();
// "8x8" -> {8, 8}; throws UserError unless it is two whole numbers joined by x.
std::pair<int, int> parse_dims(const std::string& text);

}  // namespace incsim::tb
