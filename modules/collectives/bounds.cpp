#include "bounds.h"

namespace incsim::collectives {

double payload_bandwidth_GBps(double link_bw_GBps, uint32_t max_payload, uint32_t header_bytes,
                              uint32_t ack_bytes) {
  return link_bw_GBps * max_payload / (max_payload + header_bytes + ack_bytes);
}

double allreduce_busbw_factor(int n) { return 2.0 * (n - 1) / n; }

double gather_busbw_factor(int n) { return static_cast<double>(n - 1) / n; }

double bandwidth_bound_us(uint64_t bytes, double busbw_factor, double endpoint_GBps) {
  return busbw_factor * static_cast<double>(bytes) / endpoint_GBps / 1e3;
}

double pull_table_bytes(double b_in_GBps, int p, int d_max, double l_hop_ns, double l_gpu_ns) {
  return b_in_GBps / (p - 1) * (2.0 * d_max * l_hop_ns + l_gpu_ns);
}

double push_table_bytes(double b_in_GBps, int d_max, double l_hop_ns) { return b_in_GBps * d_max * l_hop_ns; }

double busbw_factor(Collective c, int n) {
  switch (c) {
    case Collective::AllReduce: return allreduce_busbw_factor(n);
    case Collective::Broadcast: return 1.0;
    default: return gather_busbw_factor(n);  // reduce-scatter, all-gather, all-to-all (nccl-tests' alltoall)
  }
}

}  // namespace incsim::collectives
