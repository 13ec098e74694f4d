#include "adapter/roce_bridge.h"

#include <cstring>
#include <string>

#include "ethernet/roce_frame.h"

namespace incsim::adapter {

RoceBridge::RoceBridge(sc_core::sc_module_name name, const HcaConfig& cfg, const roce::NicConfig& nic,
                       net::PacketPool& gpu_pool, net::PacketPool& eth_pool)
    : StagingPool(net::PacketFormat{0, 1, cfg.mtu_bytes}),
      Adapter(name, cfg, gpu_pool, staging),
      nic_("nic", cfg.gpu, eth::ip_of(cfg.gpu), nic, &eth_pool),
      unacked_(cfg.endpoints),
      una_(cfg.endpoints, 0) {
  nic_.set_client(this);
  // Queue pair p leads to GPU p (its own unused), whose pair back is this GPU's index + 1.
  for (uint32_t p = 0; p < cfg.endpoints; ++p) nic_.create_qp(p, eth::ip_of(p), roce::RoceNic::qpn_of(cfg.gpu), 0);
}

void RoceBridge::configure_port(int p, double bw_GBps, sc_core::sc_time latency, uint32_t peer_buffer_bytes) {
  if (p == kPcie) configure_pcie(bw_GBps, latency, peer_buffer_bytes);
  else nic_.configure_port(0, bw_GBps, latency, peer_buffer_bytes);
}

// The next packet is posted once the NIC has sent every earlier one (sent() wakes us).
bool RoceBridge::network_ready(sc_core::sc_time) { return !nic_.has_unsent(); }

uint16_t RoceBridge::local_ring(uint16_t id) const {
  for (size_t k = 0; k < rings_.size(); ++k)
    if (rings_[k].id == id) return static_cast<uint16_t>(k);
  sc_assert(false);  // NetReduceRings joins every member before it asks
  return 0;
}

bool RoceBridge::join_ring(uint16_t ring, uint64_t start, uint64_t bytes, uint16_t rank, uint16_t ranks,
                           uint32_t next, uint32_t prev) {
  for (Ring& g : rings_)
    if (g.id == ring) {
      g = {ring, start, start + bytes, rank, ranks, 0};
      return false;
    }
  const auto k = static_cast<uint16_t>(rings_.size());
  rings_.push_back({ring, start, start + bytes, rank, ranks, 0});
  const int s = nic_.create_qp(next, eth::ip_of(next), roce::RoceNic::qpn_of(recv_qp(k)), 0);
  const int r = nic_.create_qp(prev, eth::ip_of(prev), roce::RoceNic::qpn_of(send_qp(k)), 0);
  sc_assert(s == send_qp(k) && r == recv_qp(k));
  unacked_.resize(unacked_.size() + 2);
  una_.resize(una_.size() + 2, 0);
  return true;
}

bool RoceBridge::transmit(net::Packet* n, sc_core::sc_time) {
  roce::WorkRequest wr;
  wr.id = reinterpret_cast<uintptr_t>(n);  // fill() copies its payload, at every (re)transmission
  wr.packets = 1;
  wr.last_bytes = n->payload_bytes;
  wr.remote_va = n->addr;
  wr.lines = n->lines;
  int qp = static_cast<int>(n->dst);
  if (n->op == net::Op::ReduceWrite) {
    uint16_t k = 0;
    while (k < rings_.size() && (n->addr < rings_[k].start || n->addr >= rings_[k].end)) ++k;
    if (k == rings_.size())
      SC_REPORT_ERROR("incsim/roce_bridge", (std::string(name()) + ": a reducing write to a region of no ring "
                                                                   "(the workload should have joined its group)")
                                                .c_str());
    Ring& g = rings_[k];
    qp = send_qp(k);
    wr.has_ina = true;
    wr.ina = {eth::kInetTag, g.id, g.rank, g.next_msg++, 1};
  }
  unacked_[static_cast<size_t>(qp)].push(n);
  nic_.post(qp, wr);
  return false;
}

void RoceBridge::fill(int, const roce::WorkRequest& wr, uint32_t, uint8_t* payload, uint32_t bytes) {
  std::memcpy(payload, reinterpret_cast<const net::Packet*>(wr.id)->data, bytes);
}

void RoceBridge::acknowledged(int qp, uint32_t una) {
  net::PacketFifo& f = unacked_[static_cast<size_t>(qp)];
  for (uint32_t& u = una_[static_cast<size_t>(qp)]; u < una; ++u) {
    net::Packet* n = f.pop();
    free_send_bytes(n->payload_bytes);
    net_pool().put(n);
  }
  nic_.reset_work(qp);  // its work requests, all acknowledged, need not be kept
  wake_to_network(sim_now());
}

// Payloads arrive in each connection's order: the GPU side writes them on.
void RoceBridge::deliver(int qp, uint64_t va, const uint8_t* payload, uint32_t bytes, net::Lines lines) {
  const sc_core::sc_time now = sim_now();
  net::Packet* p = net_pool().get();
  const bool sum = qp >= static_cast<int>(config().endpoints);  // a ring's: its members' sum, from the FPGA
  p->src = sum ? nic_.remote_endpoint(qp) : static_cast<uint32_t>(qp);
  p->count = sum ? rings_[static_cast<size_t>((qp - send_qp(0)) / 2)].ranks : 0;
  p->dst = config().gpu;
  p->addr = va;
  p->stream = 0;
  p->op = net::Op::Write;
  p->lines = lines;
  p->vc = net::kRequestVc;
  p->payload_bytes = static_cast<uint16_t>(bytes);
  p->dtype = p->redop = 0;
  p->in_port = -1;  // it holds no link's buffer
  p->t_head = p->t_tail = p->t_inject = now;
  std::memcpy(p->data, payload, bytes);
  to_gpu_queue(p);
}

void RoceBridge::trace(sc_core::sc_trace_file* tf) const {
  Adapter::trace(tf);
  nic_.trace(tf);
}

uint64_t RoceBridge::report_held(std::ostream& os) const {
  uint64_t kept = 0;
  for (const net::PacketFifo& f : unacked_) kept += f.size();
  const uint64_t n = Adapter::report_held(os);
  if (kept) os << "  " << name() << ": " << kept << " packets sent and not yet acknowledged\n";
  return n + kept + nic_.report_held(os);
}

}  // namespace incsim::adapter
