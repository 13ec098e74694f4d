#include "bounds.h"

namespace incsim::collectives {

double payload_bandwidth_GBps(double link_bw_GBps, uint32_t max_payload, uint32_t header_bytes,
                              uint32_t ack_bytes) {
  return link_bw_GBps * max_payload / (max_payload + header_bytes + ack_bytes);
}

double allreduce_busbw_factor(int n) { return 2.0 * (n - 1) / n; }

double allreduce_bound_us(uint64_t bytes, int n, double endpoint_GBps) {
  return allreduce_busbw_factor(n) * static_cast<double>(bytes) / endpoint_GBps / 1e3;
}

}  // namespace incsim::collectives
