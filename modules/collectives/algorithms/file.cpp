// A program file (MSCCL's XML, incsim's text format; docs/programs.md) run
// as an algorithm of its own: its engine says where it runs. It is not in
// the registry: a file names itself.
#include "collectives/algorithms/common.h"
#include "collectives/program_synthesis.h"

namespace incsim::collectives {

namespace {

// Its name, which Algorithm::Info points to, made before the Algorithm.
struct Path {
  std::string path_;
};

class ProgramFile : private Path, public Algorithm {
 public:
  ProgramFile(const std::string& path, Program p)
      : Path{path}, Algorithm({path_.c_str(), "", "", Family::GpuFabric, "", "", "", 0}), program_(std::move(p)) {}
  // The cores' writes cross a cluster's adapters; the copy engines' blocks
  // and the NICs' messages stay in a node.
  bool crosses_nodes() const override { return program_.engine() == Engine::Cores; }
  bool in_switches() const override { return copy() && in_network_method(program_).has_value(); }
  std::string cannot_run(const Site& s) const override {
    if (!crosses_nodes())
      if (const std::string why = builtin::cluster_refusal(s, path_, in_switches()); !why.empty()) return why;
    return in_switches() ? builtin::switch_tables_refusal(s, path_) : std::string();
  }
  Needs needs(const topo::Topology& t, Collective) const override { return needs_of(program_, t); }
  Synthesis synthesize(const Site&) const override {
    Synthesis out;
    out.program = program_;
    return out;
  }

 private:
  bool copy() const { return program_.engine() == Engine::CopyEngine; }
  Program program_;
};

}  // namespace

std::unique_ptr<Algorithm> file_algorithm(const std::string& path, Program program) {
  return std::make_unique<ProgramFile>(path, std::move(program));
}

}  // namespace incsim::collectives
