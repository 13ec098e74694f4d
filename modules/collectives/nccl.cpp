#include "collectives/nccl.h"

#include <algorithm>
#include <sstream>
#include <utility>

#include "collectives/nccl_tuning.h"
#include "core/error.h"
#include "core/units.h"
#include "core/nearest.h"

namespace incsim::collectives {

std::string ProtocolBySize::header_line() const {
  return "# protocol by size (ring.protocol=auto): LL up to " + size_label(ll_max_bytes) + ", LL128 up to " +
         size_label(ll128_max_bytes) + ", Simple above\n";
}

Protocol message_protocol(const Program& p, const ProtocolBySize& by_size, uint64_t bytes) {
  if (p.engine() != Engine::Cores || p.ops.empty()) return Protocol::Simple;
  return p.protocol_by_size ? by_size.for_size(bytes) : p.ops.front().proto;
}

double nccl_base_latency_us(Protocol p, bool tree) {
  switch (p) {
    case Protocol::LL: return tree ? 6.8 : 6.6;
    case Protocol::LL128: return 14.0;
    default: return 8.4;
  }
}

std::string NcclSoftware::header_line() const {
  if (launch == Launch::None) return {};
  std::ostringstream os;
  os << "# nccl software (nccl.launch=" << (launch == Launch::Thread ? "thread" : "process")
     << "): each collective starts after NCCL's fixed cost (LL " << nccl_base_latency_us(Protocol::LL, tree)
     << " us, LL128 " << nccl_base_latency_us(Protocol::LL128, tree) << ", Simple "
     << nccl_base_latency_us(Protocol::Simple, tree) << "; NCCL's tuning.cc), and a row is at least the host's "
     << host_period_us() << " us of launches per collective ("
     << (launch == Launch::Thread ? std::to_string(gpus) + " GPUs' from one thread" : std::string("one per process"));
  if (graph_collectives > 0) os << " per CUDA graph of " << graph_collectives << " collectives, nccl.graph_collectives and";
  else os << ",";
  os << " nccl.host_launch_us)";
  if (net.charged()) {
    os << "; a step between nodes waits for NCCL's proxy threads and PCIe, LL and LL128 "
       << net.step_us(Protocol::LL) << " us more, Simple " << net.step_us(Protocol::Simple)
       << " (nccl.proxy_pass_us, nccl.pcie_round_trip_us"
       << (net.flush ? "; the receiver flushes GPUDirect's writes" : "") << ")";
  }
  os << "\n";
  return os.str();
}

NetSteps nccl_net_steps(Config& cfg, const std::string& family, std::vector<int> node_of,
                        const std::vector<int>& endpoints) {
  NetSteps n;
  n.node_of = std::move(node_of);
  if (std::none_of(endpoints.begin(), endpoints.end(), [&](int g) { return n.across(g, endpoints.front()); }))
    return {};
  n.proxy_pass_us = cfg.get(kNcclProxyPass);
  n.pcie_round_trip_us = cfg.get(kNcclPcieRoundTrip);
  GpuArch arch;
  n.flush = !nccl_arch(family, arch) || arch == GpuArch::Ampere;  // dgx2's V100s too
  return n;
}

NcclSoftware nccl_software(Config& cfg, const std::string& default_launch, int gpus, bool tree) {
  NcclSoftware s;
  const std::string mode = cfg.get(kNcclLaunch, default_launch);
  if (mode == "process") s.launch = NcclSoftware::Launch::Process;
  else if (mode == "thread") s.launch = NcclSoftware::Launch::Thread;
  else if (mode != "none")
    throw UserError("nccl.launch must be process, thread or none, not '" + mode + "'");
  if (s.launch != NcclSoftware::Launch::None) s.host_launch_us = cfg.get(kNcclHostLaunch);
  s.graph_collectives = cfg.get(kNcclGraph);
  if (s.graph_collectives > 0 && s.launch == NcclSoftware::Launch::None)
    throw UserError("nccl.graph_collectives shares the host's launches among a CUDA graph's collectives, and "
                    "nccl.launch=none charges no launches: set nccl.launch=process or thread with it");
  s.gpus = gpus;
  s.tree = tree;
  return s;
}

void apply_protocol(Program& p, const std::string& algorithm, const std::string& proto, bool simple_only) {
  const bool by_size = to_lower(proto) == "auto";
  if (simple_only && !by_size && parse_protocol(proto, "ring.protocol (or auto)") != Protocol::Simple)
    throw UserError(algorithm + " runs NCCL's Simple protocol only, as NCCL's NVLS and CollNet kernels do: "
                    "ring.protocol=" + proto);
  p.protocol_by_size = by_size && !simple_only;
  if (!by_size)
    for (Operation& o : p.ops) o.proto = parse_protocol(proto, "ring.protocol (or auto)");
}

}  // namespace incsim::collectives
