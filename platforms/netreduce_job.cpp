#include "netreduce_job.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "core/error.h"
#include "ethernet/roce_frame.h"

namespace incsim::platforms {

namespace {
constexpr uint32_t kLeafIp0 = 0x0A000101u;  // 10.0.1.1: leaf r's FPGA
constexpr uint32_t kSpineIp = 0x0A000201u;  // 10.0.2.1: the spine's FPGA
}  // namespace

NetReduceJob::NetReduceJob(const NetReduceShape& shape, bool in_network, std::vector<int> ring,
                           uint32_t clt_entries, int job)
    : shape_(shape), in_network_(in_network), job_(job), clt_entries_(clt_entries), ring_(std::move(ring)) {
  const int hosts = shape.hosts(), racks = shape.racks;
  if (ring_.empty())
    for (int i = 0; i < hosts; ++i) ring_.push_back(i);
  else if (shape.layout != Layout::Rack)
    throw UserError("--ring orders the hosts of platform rack; spineleaf and multigpu build their rings themselves");
  std::vector<bool> seen(hosts);
  for (int h : ring_) {
    if (h < 0 || h >= hosts)
      throw UserError("--ring names host " + std::to_string(h) + ", but the rack has hosts 0 to " +
                      std::to_string(hosts - 1));
    if (seen[h]) throw UserError("--ring names host " + std::to_string(h) + " twice");
    seen[h] = true;
  }
  if (ring_.size() < 2) throw UserError("a ring needs at least 2 hosts, not " + std::to_string(ring_.size()));
  if (in_network) {
    // A connection takes a CLT entry at its first packet and a full table
    // drops it (§3.2), which would stall the job: refuse it here.
    const int connections = shape.layout == Layout::MultiGpu ? hosts
                            : racks == 1                     ? static_cast<int>(ring_.size())
                                                             : std::max(shape.hosts_per_rack, racks);
    if (static_cast<uint32_t>(connections) > clt_entries)
      throw UserError("an FPGA's CLT holds " + std::to_string(clt_entries) + " connections, but its rings have " +
                      std::to_string(connections) + "; raise fpga.clt.entries");
  }
  // Links a packet crosses from a sender to its receiver: host to switch and
  // out; the uplinks of spine-leaf or of a machine; an FPGA and back (on
  // spine-leaf the sender's leaf, the spine and the receiver's leaf). The
  // ACK comes back the same way.
  const int one_way = 2 + (racks > 1 ? 2 : 0) + (in_network ? (shape.layout == Layout::SpineLeaf ? 6 : 2) : 0);
  loop_links_ = 2 * one_way;
}

void NetReduceJob::attach(Machine& m) {
  graph_ = &m.topology();
  fabric_ = &m.fabric_as<EthernetFabric>();
  nics_ = m.blocks_of<roce::RoceNic>();
  switches_ = m.blocks_of<eth::EthernetSwitch>();
  fpgas_ = m.blocks_of<netreduce::FpgaAggregator>();
}

std::pair<int, int> NetReduceJob::fpga_port(int host) const {
  const int H = shape_.hosts_per_rack;
  // Graph nodes: hosts are endpoints 0..hosts-1, then the FPGAs (the leaves', then the spine's).
  if (shape_.layout == Layout::MultiGpu) return {static_cast<int>(graph_->endpoints().size()) - 1, host / H};
  return {shape_.hosts() + host / H, host % H};
}

void NetReduceJob::program(uint64_t seed) {
  const topo::Topology& g = *graph_;
  const int H = shape_.hosts_per_rack, R = shape_.racks, hosts = shape_.hosts();
  const bool multigpu = shape_.layout == Layout::MultiGpu;
  const bool leaf_fpgas = shape_.leaf_fpga_ports() > 0;
  auto ip_of = EthernetFabric::ip_of;
  // Graph nodes: hosts are endpoints 0..hosts-1, then the FPGAs; the spine is the last switch.
  const int fpga0 = hosts;
  const int spine_fpga = static_cast<int>(g.endpoints().size()) - 1;
  // The switch port that leads to port `port` of FPGA endpoint `fpga`.
  auto port_to = [&g](int fpga, int port) { return g.peer({g.endpoints()[fpga], port}).port; };

  // The ring: rank k's qp 0 sends to rank k+1's qp 1. Initial PSNs differ per
  // connection, as a NIC picks them, so PSN0 is never 0 by accident; each set
  // of rings mixes the sender with its own prime.
  const auto psn0 = [seed](int sender, uint64_t prime) {
    return static_cast<uint32_t>((seed * 7919 + static_cast<uint64_t>(sender) * prime) % (1u << 20));
  };
  const auto psn0_of = [&psn0](int sender) { return psn0(sender, 104729); };
  auto next_of = [this](int k) { return ring_[(k + 1) % ring_size()]; };
  for (int k = 0; k < ring_size(); ++k) {
    const int host = ring_[k], next = next_of(k);
    nics_[host]->create_qp(next, ip_of(next), roce::RoceNic::qpn_of(recv_qp()), psn0_of(host));
  }
  for (int k = 0; k < ring_size(); ++k) {
    const int host = ring_[k], prev = ring_[(k + ring_size() - 1) % ring_size()];
    nics_[host]->create_qp(prev, ip_of(prev), roce::RoceNic::qpn_of(send_qp()), psn0_of(prev));
  }
  if (multigpu)
    for (int gi = 0; gi < hosts; ++gi) {
      const int mi = gi / H, i = gi % H;
      const int up = mi * H + (i + 1) % H, down = mi * H + (i + H - 1) % H;
      const int next = ((mi + 1) % R) * H + i, prev = ((mi + R - 1) % R) * H + i;
      auto psn = [&psn0](int sender) { return psn0(sender, 15485863); };
      nics_[gi]->create_qp(up, ip_of(up), roce::RoceNic::qpn_of(intra_recv_qp()), psn(gi));
      nics_[gi]->create_qp(down, ip_of(down), roce::RoceNic::qpn_of(intra_send_qp()), psn(down));
      nics_[gi]->create_qp(next, ip_of(next), roce::RoceNic::qpn_of(inter_recv_qp()), psn(gi) ^ 0x5555);
      nics_[gi]->create_qp(prev, ip_of(prev), roce::RoceNic::qpn_of(inter_send_qp()), psn(prev) ^ 0x5555);
    }
  if (!in_network_) return;

  netreduce::Hierarchy hier;
  hier.leaf_ep0 = static_cast<uint32_t>(fpga0);
  hier.leaf_ip0 = kLeafIp0;
  hier.host_ip0 = ip_of(0);
  hier.hosts_per_rack = H;
  hier.racks = R;
  hier.parent_ep = static_cast<uint32_t>(spine_fpga);
  hier.parent_ip = kSpineIp;
  for (int r = 0; r < R && leaf_fpgas; ++r) {
    eth::EthernetSwitch& leaf = *switches_[r];
    const int last = shape_.leaf_fpga_ports() - 1;
    hier.role = R == 1 ? netreduce::Hierarchy::Flat : netreduce::Hierarchy::Leaf;
    hier.self_ep = static_cast<uint32_t>(fpga0 + r);
    hier.self_ip = kLeafIp0 + r;
    hier.rack = r;
    hier.uplink_port = R > 1 ? last : -1;
    fpgas_[r]->set_hierarchy(hier);
    // The leaf learns its FPGA's address on the port the FPGA sends its own
    // frames from, its last (under a spine, its uplink port).
    leaf.set_route(hier.self_ep, port_to(fpga0 + r, last));
    // One ACL rule per worker (§4): its ring connection goes through the
    // FPGA port facing the host.
    for (int k = 0; k < ring_size(); ++k)
      if (ring_[k] / H == r)
        leaf.add_acl({ip_of(ring_[k]), ip_of(next_of(k)), roce::RoceNic::qpn_of(recv_qp()),
                      port_to(fpga_port(ring_[k]).first, fpga_port(ring_[k]).second)});
  }
  if (R == 1) return;
  eth::EthernetSwitch& spine = *switches_.back();
  hier.role = multigpu ? netreduce::Hierarchy::Flat : netreduce::Hierarchy::Spine;
  hier.self_ep = static_cast<uint32_t>(spine_fpga);
  hier.self_ip = kSpineIp;
  hier.rack = -1;
  hier.uplink_port = -1;
  fpgas_.back()->set_hierarchy(hier);
  for (int q = 0; q < R; ++q) {
    const int port = port_to(spine_fpga, q);
    if (!multigpu) {
      // Leaf q's partials enter the spine FPGA by port q.
      spine.add_acl({kLeafIp0 + q, kSpineIp, hier.virtual_qp, port});
      continue;
    }
    // Parallel NetReduce: the n rings' connections leaving machine q enter
    // the FPGA by port q (one rule per GPU, §4).
    for (int i = 0; i < H; ++i) {
      const int gi = q * H + i, next = ((q + 1) % R) * H + i;
      spine.add_acl({ip_of(gi), ip_of(next), roce::RoceNic::qpn_of(inter_recv_qp()),
                     port_to(fpga_port(gi).first, fpga_port(gi).second)});
    }
  }
}

int NetReduceJob::ranks_at(int r) const {
  const int R = racks();
  if (shape_.layout == Layout::MultiGpu) return R;  // each GPU index's ring, the machines its ranks
  return R > 1 && r == R ? R : R == 1 ? ring_size() : shape_.hosts_per_rack;
}

uint32_t NetReduceJob::msg_len_for(uint32_t window, uint32_t msg_len) const {
  const int rings = shape_.layout == Layout::MultiGpu ? shape_.hosts_per_rack : 1;
  for (int r = 0; r < static_cast<int>(fpgas_.size()); ++r)
    msg_len = fpgas_[r]->msg_len_for(job_, ranks_at(r), window, msg_len, mtu_payload(), rings);
  return msg_len;
}

uint16_t NetReduceJob::add_ring(uint32_t window, uint32_t msg_len, elements::DType dtype, elements::RedOp op) {
  const int R = racks(), H = shape_.hosts_per_rack;
  const uint32_t mtu = mtu_payload();
  if (shape_.layout == Layout::MultiGpu) {
    for (int i = 0; i < H; ++i)
      fpgas_[0]->add_ring(static_cast<uint16_t>(i), R, window, msg_len, mtu, dtype, op, 0, job_);
    return 0;
  }
  if (R == 1) {  // the rack's FPGA: several jobs' rings, each its own id and CLT entries
    netreduce::FpgaAggregator& f = *fpgas_[0];
    const uint16_t id = f.ring_id(ring_, 0);
    if (f.ring_connections() > clt_entries_)
      throw UserError("the FPGA's CLT holds " + std::to_string(clt_entries_) + " connections, but the rings on it have " +
                      std::to_string(f.ring_connections()) + "; raise fpga.clt.entries");
    f.add_ring(id, ring_size(), window, msg_len, mtu, dtype, op, 0, job_);
    return id;
  }
  for (int r = 0; r < static_cast<int>(fpgas_.size()); ++r)
    fpgas_[r]->add_ring(0, ranks_at(r), window, msg_len, mtu, dtype, op, R > 1 && r == R ? 0 : r * H, job_);
  return 0;
}

uint64_t NetReduceJob::aggregator_memory() const {
  uint64_t bytes = 0;
  for (const netreduce::FpgaAggregator* f : fpgas_) bytes += job_ >= 0 ? f->memory_used(job_) : f->memory_used();
  return bytes;
}

sc_core::sc_time NetReduceJob::hop_latency() const {
  return fabric_->tx_latency() + fabric_->rx_latency() + 2 * sc_core::sc_time(shape_.wire_ns, sc_core::SC_NS) +
         fabric_->switch_latency();
}

double NetReduceJob::through() const {
  return std::pow((1 - fabric_->link_loss()) * (1 - fabric_->link_corruption()), loop_links_);
}

sc_core::sc_time NetReduceJob::default_stall_timeout() const {
  const double t = through();
  double rtos = 10;
  // Retransmission rounds each get through with probability t: the chance
  // that n rounds in a row fail is (1 - t)^n. Capped at 10^4 rounds (50%
  // loss on a rack needs 7066): beyond, a run would not finish in any useful
  // time, and a stall report says more than a silent hour.
  if (t > 0 && t < 1) rtos = std::max(rtos, std::ceil(std::log(1e-12) / std::log1p(-t)));
  return fabric_->rto() * std::min(rtos, 1e4);
}

std::string NetReduceJob::stall_cause() const {
  const double t = through();
  if (std::log(1e-12) / std::log1p(-t) <= 1e4) return {};
  std::ostringstream os;
  os << "link.loss " << fabric_->link_loss() << " and link.corruption " << fabric_->link_corruption()
     << " let a retransmission through the " << loop_links_ << " links there and back once in "
     << std::setprecision(2) << 1 / t << " tries, too rarely to finish; lower them";
  return os.str();
}

std::vector<std::unique_ptr<roce::HostProgram>> NetReduceJob::host_programs(const collectives::Program& p,
                                                                            const roce::HostConfig& c,
                                                                            const elements::DataPattern* pattern,
                                                                            elements::DType dtype,
                                                                            elements::RedOp op) {
  const int ranks = ring_size(), racks = shape_.racks, per_rack = shape_.hosts_per_rack;
  std::vector<std::unique_ptr<roce::HostProgram>> hosts;
  for (int i = 0; i < ranks; ++i) {  // the host of ring rank i (multigpu: GPU i)
    roce::RoceNic& nic = *nics_[static_cast<size_t>(ring_host(i))];
    std::vector<roce::Connection> sends{{0, (i + 1) % ranks, send_qp()}};
    std::vector<roce::Connection> receives{{0, (i + ranks - 1) % ranks, recv_qp()}};
    if (shape_.layout == Layout::MultiGpu) {
      const int m = i / per_rack, k = i % per_rack;
      sends.push_back({1, m * per_rack + (k + 1) % per_rack, intra_send_qp()});
      receives.push_back({1, m * per_rack + (k + per_rack - 1) % per_rack, intra_recv_qp()});
      sends.push_back({2, ((m + 1) % racks) * per_rack + k, inter_send_qp()});
      receives.push_back({2, ((m + racks - 1) % racks) * per_rack + k, inter_recv_qp()});
    }
    hosts.push_back(std::make_unique<roce::HostProgram>(&nic, &p, i, sends, receives, c, pattern, dtype, op));
    nic.set_client(hosts.back().get());
  }
  return hosts;
}

std::unique_ptr<flow::RoceFlows> NetReduceJob::flows(const collectives::Program& p, uint32_t msg_len,
                                                     uint32_t window, elements::DType dtype) {
  const topo::Topology& t = *graph_;
  const EthernetFabric& fabric = *fabric_;
  refuse_lossy_flows(fabric.link_loss(), fabric.link_corruption());
  flow_machine_ = flow::FlowMachine{};
  flow_machine_.size_for(t);
  flow::LinkFormat frames;
  frames.header = eth::kEthWireOverhead + eth::kRoceOverhead;
  frames.flit = 4;
  frames.max_payload = mtu_payload();
  frames.gathers = true;
  frames.ack_bytes = eth::kEthWireOverhead + eth::kRoceOverhead + eth::kAethBytes;
  flow_machine_.formats.push_back(frames);
  for (size_t k = 0; k < t.nodes().size(); ++k)
    if (t.node(static_cast<int>(k)).kind == topo::NodeKind::Switch)
      flow_machine_.node_ns[k] = fabric.switch_latency().to_seconds() * 1e9;
  flow::RoceCosts c;
  c.tx_ns = fabric.tx_latency().to_seconds() * 1e9;
  c.rx_ns = fabric.rx_latency().to_seconds() * 1e9;
  c.mtu = mtu_payload();
  c.msg_len = msg_len;
  c.window = window;
  c.frame_bytes = frames.header;
  c.reth_bytes = eth::kRethBytes;
  c.ina_bytes = eth::kInaBytes;
  c.ack_bytes = frames.ack_bytes;
  c.ack_every = fabric.ack_every();
  std::vector<int> hosts, fpga_links;
  if (in_network_) c.fpga_ns = fabric.fpga_latency().to_seconds() * 1e9;
  for (int k = 0; k < ring_size(); ++k) {
    const int host = ring_host(k);
    hosts.push_back(host);
    if (!in_network_) continue;
    const auto [fpga, port] = fpga_port(host);
    fpga_links.push_back(t.link_at({t.endpoints()[static_cast<size_t>(fpga)], port}));
  }
  return std::make_unique<flow::RoceFlows>(p, flow_machine_, hosts, fpga_links, c, elements::dtype_bytes(dtype));
}

}  // namespace incsim::platforms
