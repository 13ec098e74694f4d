#include "netreduce_rack.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "core/error.h"
#include "nvswitch/nvswitch.h"
#include "platform.h"

namespace incsim::platforms {

namespace {
const Param<double> kIntraGBps{
    "intra.bw_GBps", 150.0, Range::at_least(0.001).at_most(1e5),
    "B_intra: each GPU's link into its machine's fabric, GB/s (NetReduce §3.4: \"NVLink makes B_intra = 150 "
    "GB/s\"; Fig. 7 sweeps 15.75, PCIe 3.0 x16, to 150)"};
const Param<double> kUplinkGBps{"leaf.uplink_bw_GBps", 50.0, Range::at_least(0.001).at_most(1e5),
                                "leaf-to-spine link, GB/s; default: the sum of the rack's host links (50: 4 "
                                "hosts of 12.5), a non-blocking leaf (assumption; Fig. 5 does not give it)"};
constexpr uint32_t kLeafIp0 = 0x0A000101u;   // 10.0.1.1: leaf r's FPGA
constexpr uint32_t kSpineIp = 0x0A000201u;   // 10.0.2.1: the spine's FPGA
}  // namespace

namespace {
// A ring's ranks are a rack's hosts, the leaves under the spine, or the
// machines (Parallel NetReduce): each at most an aggregator's ranks.
void check_counts(int racks, int hosts_per_rack) {
  constexpr int kMax = netreduce::AggregatorArray::kMaxRanks;
  if (racks < 1 || racks > kMax)
    throw UserError("the number of racks or machines must be between 1 and " + std::to_string(kMax) + ", not " +
                    std::to_string(racks));
  if (hosts_per_rack < (racks == 1 ? 2 : 1) || hosts_per_rack > kMax || racks * hosts_per_rack > 4096)
    throw UserError("a NetReduce rack or machine holds " + std::string(racks == 1 ? "2" : "1") + " to " +
                    std::to_string(kMax) + " hosts, and all racks together at most 4096, not " +
                    std::to_string(hosts_per_rack) + " x " + std::to_string(racks));
}
}  // namespace

NetReduceShape netreduce_shape(NetReduceShape::Layout layout, int racks, int hosts_per_rack, bool with_fpga,
                               Config& cfg) {
  check_counts(racks, hosts_per_rack);
  NetReduceShape s;
  s.layout = layout;
  s.racks = racks;
  s.hosts_per_rack = hosts_per_rack;
  s.with_fpga = with_fpga;
  s.line_GBps = cfg.get(kLinkGBps, kEthernetLinkGBps);
  const bool multigpu = layout == NetReduceShape::Layout::MultiGpu;
  s.host_GBps = multigpu ? cfg.get(kIntraGBps) : s.line_GBps;
  s.uplink_GBps = multigpu ? s.line_GBps : racks == 1 ? 0.0 : cfg.get(kUplinkGBps, s.line_GBps * hosts_per_rack);
  s.wire_ns = sc_core::sc_time(cfg.get(kLinkLatency, kEthernetLatencyNs), sc_core::SC_NS) / sc_core::sc_time(1, sc_core::SC_NS);
  return s;
}

topo::Topology netreduce_topology(const NetReduceShape& s) {
  const bool multigpu = s.layout == NetReduceShape::Layout::MultiGpu;
  const int H = s.hosts_per_rack, R = s.racks, hosts = s.hosts();
  const int fpga_ports = s.leaf_fpga_ports(), uplink = s.uplink_port();
  const bool leaf_fpgas = fpga_ports > 0;
  topo::Topology t;
  t.name = multigpu ? "multigpu" : R > 1 ? "spineleaf" : "rack";
  t.family = multigpu ? topo::Topology::kNetReduceMultiGpu : topo::Topology::kNetReduce;
  for (int r = 0; r < R; ++r)
    t.add_switch(R == 1 ? "switch" : (multigpu ? "machine" : "leaf") + std::to_string(r), uplink + (R > 1 ? 1 : 0),
                 topo::kinds::kEthernetSwitch);
  const int spine = R > 1 ? t.add_switch(multigpu ? "tor" : "spine", R + (s.with_fpga ? R : 0),
                                         topo::kinds::kEthernetSwitch)
                          : -1;
  const int host0 = static_cast<int>(t.nodes().size());
  for (int i = 0; i < hosts; ++i) t.add_endpoint("host" + std::to_string(i), 1, topo::kinds::kRoceHost);
  for (int r = 0; r < R && leaf_fpgas; ++r)
    t.add_endpoint(R == 1 ? "fpga" : "leaf" + std::to_string(r) + "_fpga", fpga_ports, topo::kinds::kFpgaAggregator);
  const int spine_fpga =
      R > 1 && s.with_fpga ? t.add_endpoint(multigpu ? "fpga" : "spine_fpga", R, topo::kinds::kFpgaAggregator) : -1;
  for (int r = 0; r < R && R > 1; ++r) t.connect({r, uplink}, {spine, r}, s.uplink_GBps, s.wire_ns);
  for (int i = 0; i < hosts; ++i) t.connect({i / H, i % H}, {host0 + i, 0}, s.host_GBps, s.wire_ns);
  for (int r = 0; r < R && leaf_fpgas; ++r)
    for (int i = 0; i < fpga_ports; ++i) t.connect({r, H + i}, {host0 + hosts + r, i}, s.line_GBps, s.wire_ns);
  for (int q = 0; q < R && spine_fpga >= 0; ++q) t.connect({spine, R + q}, {spine_fpga, q}, s.line_GBps, s.wire_ns);
  t.finalize();
  return t;
}

NetReduceShape netreduce_shape(const topo::Topology& g, const std::string& source) {
  const std::string what = source + " is not a NetReduce machine incsim can elaborate (a rack, a spine-leaf or "
                                    "multi-GPU machines, as --dump-platform writes them): ";
  NetReduceShape s;
  const bool multigpu = g.family == topo::Topology::kNetReduceMultiGpu;
  const int S = static_cast<int>(g.switches().size());
  int hosts = 0, fpgas = 0;
  for (int e : g.endpoints()) {
    const auto& n = g.node(e);
    if (n.block == topo::kinds::kRoceHost) {
      if (fpgas) throw UserError(what + "host " + n.name + " comes after an FPGA; list the hosts first");
      ++hosts;
    } else if (n.block == topo::kinds::kFpgaAggregator) {
      ++fpgas;
    } else {
      throw UserError(what + "endpoint " + n.name + " is a " + n.block + ", not a roce_host or fpga_aggregator");
    }
  }
  s.racks = S == 1 ? 1 : S - 1;
  if (S == 0 || (multigpu && S < 3)) throw UserError(what + "it has " + std::to_string(S) + " switches");
  if (hosts % s.racks) throw UserError(what + std::to_string(hosts) + " hosts do not split evenly over " +
                                       std::to_string(s.racks) + " leaves");
  s.hosts_per_rack = hosts / s.racks;
  s.layout = S == 1 ? NetReduceShape::Layout::Rack
             : multigpu ? NetReduceShape::Layout::MultiGpu
                        : NetReduceShape::Layout::SpineLeaf;
  s.with_fpga = fpgas > 0;
  check_counts(s.racks, s.hosts_per_rack);
  // Rates and latency from the links the layout has: a host's, a leaf's uplink.
  const auto& host_link = g.links()[g.link_at({g.endpoints()[0], 0})];
  s.host_GBps = host_link.bw_GBps;
  s.wire_ns = host_link.latency_ns;
  if (S > 1) {
    const auto& sw0 = g.node(g.switches()[0]);
    const int up = g.link_at({g.switches()[0], sw0.ports - 1});
    if (up < 0) throw UserError(what + "port " + sw0.name + "." + std::to_string(sw0.ports - 1) + " is not linked up");
    s.uplink_GBps = g.links()[up].bw_GBps;
  }
  s.line_GBps = multigpu ? s.uplink_GBps : s.host_GBps;
  // The same machine built from that shape must be the graph, up to names
  // and the order of links (and with its rates: host links alike, uplinks alike).
  const std::string diff = topo::netlist_difference(g, netreduce_topology(s), true);
  if (!diff.empty()) throw UserError(what + diff);
  return s;
}

NetReduceRack::NetReduceRack(topo::Topology graph, const NetReduceShape& shape, bool in_network, Config& cfg,
                             uint64_t seed, std::vector<int> ring)
    : topo_(std::move(graph)), layout_(shape.layout), ring_(std::move(ring)) {
  const Layout layout = shape.layout;
  const int racks = shape.racks, hosts_per_rack = shape.hosts_per_rack, hosts = shape.hosts();
  const bool multigpu = layout == Layout::MultiGpu;
  if (in_network && !shape.with_fpga)
    throw UserError("platform " + topo_.name + " has no fpga_aggregator to run NetReduce on; add one, or run ring");
  const bool with_fpga = in_network;
  link_GBps_ = shape.line_GBps;
  const sc_core::sc_time wire(shape.wire_ns, sc_core::SC_NS);
  const double loss = cfg.get(kLinkLoss);
  const double corruption = cfg.get(kLinkCorruption);
  loss_ = loss;
  corruption_ = corruption;
  // Links a packet crosses from a sender to its receiver: host to switch and
  // out; the uplinks of spine-leaf or of a machine; an FPGA and back (on
  // spine-leaf the sender's leaf, the spine and the receiver's leaf). The
  // ACK comes back the same way.
  const int one_way = 2 + (racks > 1 ? 2 : 0) + (with_fpga ? (layout == Layout::SpineLeaf ? 6 : 2) : 0);
  loop_links_ = 2 * one_way;
  mtu_ = cfg.get(roce::kMtuPayload);
  if (mtu_ % 4)
    throw UserError("roce.mtu_payload must be a multiple of 4 between 4 and 4096 bytes, not " + std::to_string(mtu_));
  const uint32_t ack_every = cfg.get(roce::kAckEvery);
  const double rto_us = cfg.get(roce::kRto);
  rto_ = sc_core::sc_time(rto_us, sc_core::SC_US);
  const uint32_t buffer = cfg.get(eth::kEthBufferBytes);
  // Credits: a frame leaves only when the whole of it fits in the next
  // buffer, so a buffer smaller than the largest frame (a message's first
  // packet, with RETH and INA headers) never lets it go.
  const uint32_t largest_frame = eth::kEthWireOverhead + eth::kRoceOverhead + mtu_ + eth::kRethBytes + eth::kInaBytes;
  if (buffer < largest_frame)
    throw UserError("switch.buffer_bytes must hold at least one " + std::to_string(largest_frame) +
                    "-byte frame (roce.mtu_payload " + std::to_string(mtu_) + " plus headers), not " +
                    std::to_string(buffer));
  const sc_core::sc_time sw_latency(cfg.get(nvswitch::kSwitchLatency, 400.0), sc_core::SC_NS);
  const sc_core::sc_time tx_latency(cfg.get(roce::kTxLatency), sc_core::SC_NS);
  const sc_core::sc_time rx_latency(cfg.get(roce::kRxLatency), sc_core::SC_NS);
  host_GBps_ = shape.host_GBps;
  if (ring_.empty())
    for (int i = 0; i < hosts; ++i) ring_.push_back(i);
  else if (layout != Layout::Rack)
    throw UserError("--ring orders the hosts of platform rack; spineleaf and multigpu build their rings themselves");
  std::vector<bool> seen(hosts);
  for (int h : ring_) {
    if (h < 0 || h >= hosts)
      throw UserError("--ring names host " + std::to_string(h) + ", but the rack has hosts 0 to " +
                      std::to_string(hosts - 1));
    if (seen[h]) throw UserError("--ring names host " + std::to_string(h) + " twice");
    seen[h] = true;
  }
  if (ring_.size() < 2) throw UserError("--ring needs at least 2 hosts, not " + std::to_string(ring_.size()));

  // Everything that can be refused is read and checked before the first
  // module is built (a module cannot be unmade).
  netreduce::FpgaConfig fc;
  fc.bw_GBps = link_GBps_;
  fc.link_latency = wire;
  fc.buffer_bytes = buffer;
  fc.mtu_payload = mtu_;
  if (shape.with_fpga) fc.latency = sc_core::sc_time(cfg.get(netreduce::kFpgaLatency), sc_core::SC_NS);
  if (shape.with_fpga) fc.clt_entries = cfg.get(netreduce::kCltEntries);
  if (with_fpga) {
    // A connection takes a CLT entry at its first packet and a full table
    // drops it (§3.2), which would stall the job: refuse it here.
    const int connections =
        multigpu ? hosts : racks == 1 ? static_cast<int>(ring_.size()) : std::max(hosts_per_rack, racks);
    if (static_cast<uint32_t>(connections) > fc.clt_entries)
      throw UserError("an FPGA's CLT holds " + std::to_string(fc.clt_entries) + " connections, but its rings have " +
                      std::to_string(connections) + "; raise fpga.clt.entries");
  }

  pool_ = std::make_unique<net::PacketPool>(net::PacketFormat{0, 1, eth::kPayloadOffset + mtu_});
  const int H = hosts_per_rack, R = racks;
  const int fpga_ports = shape.leaf_fpga_ports(), uplink = shape.uplink_port();
  const bool leaf_fpgas = fpga_ports > 0;
  const uint32_t spine_ep = static_cast<uint32_t>(hosts + R);
  const int spine = R > 1 ? topo_.switches().back() : -1;

  // A module per node, by its kind: the switches, then the endpoints (as
  // the built-in graph has them, whatever order a file lists them in).
  eth::SwitchConfig sc{link_GBps_, wire, sw_latency, buffer};
  roce::NicConfig nc{host_GBps_, wire, buffer, mtu_, ack_every, rto_, tx_latency, rx_latency};
  hop_latency_ = tx_latency + rx_latency + 2 * wire + sw_latency;
  std::vector<int> module_of(topo_.nodes().size());
  std::vector<int> order = topo_.switches();
  order.insert(order.end(), topo_.endpoints().begin(), topo_.endpoints().end());
  for (const int id : order) {
    const auto& node = topo_.node(id);
    const NodeModule m = node_module(node.block);
    if (m == NodeModule::EthernetSwitch) {
      module_of[id] = static_cast<int>(leaves_.size());
      leaves_.push_back(std::make_unique<eth::EthernetSwitch>(node.name.c_str(), node.ports, sc, pool_.get()));
    } else if (m == NodeModule::RoceNic) {
      module_of[id] = static_cast<int>(nics_.size());
      const int i = static_cast<int>(nics_.size());
      nics_.push_back(std::make_unique<roce::RoceNic>(node.name.c_str(), i, ip_of(i), nc, pool_.get()));
    } else {  // netreduce_shape() allows no other kinds
      module_of[id] = static_cast<int>(fpgas_.size());
      fpgas_.push_back(std::make_unique<netreduce::FpgaAggregator>(node.name.c_str(), node.ports, fc, pool_.get()));
    }
  }
  if (R > 1) {  // the last switch is the spine
    spine_ = std::move(leaves_.back());
    leaves_.pop_back();
  }
  // Each link as two one-way channels, each with its own faults (drawn per
  // link and direction from the seed, in link order).
  struct End {
    net::InPort* in;
    net::OutPort* out;
    eth::LinkFaults* faults;  // of the link into this end
    std::string name;         // in link_ends(): an FPGA's ends by port, each faces one peer
  };
  auto end_of = [&](topo::PortRef p) -> End {
    const auto& node = topo_.node(p.node);
    const int k = module_of[p.node];
    switch (node_module(node.block)) {
      case NodeModule::EthernetSwitch: {
        eth::EthernetSwitch& sw = p.node == spine ? *spine_ : *leaves_[k];
        return {&sw.in(p.port), &sw.out(p.port), &sw.faults(p.port), node.name};
      }
      case NodeModule::RoceNic:
        return {&nics_[k]->in, &nics_[k]->out, &nics_[k]->faults(), node.name};
      default:
        return {&fpgas_[k]->in(p.port), &fpgas_[k]->out(p.port), &fpgas_[k]->faults(p.port),
                node.name + std::to_string(p.port)};
    }
  };
  uint64_t link = 0;
  for (const auto& l : topo_.links()) {
    const End a = end_of(l.a), b = end_of(l.b);
    a.out->socket.bind(b.in->socket);
    b.out->socket.bind(a.in->socket);
    // A switch's port takes the link's bandwidth: an uplink's or a machine's GPU links differ from the line rate.
    for (const topo::PortRef& e : {l.a, l.b})
      if (topo_.node(e.node).kind == topo::NodeKind::Switch && l.bw_GBps != sc.bw_GBps)
        (e.node == spine ? *spine_ : *leaves_[module_of[e.node]]).set_port_bandwidth(e.port, l.bw_GBps);
    *a.faults = eth::LinkFaults(loss, corruption, seed, link++);
    *b.faults = eth::LinkFaults(loss, corruption, seed, link++);
    add_end(a.name, b.name, a.out, b.faults);
    add_end(b.name, a.name, b.out, a.faults);
  }
  // Forwarding: own hosts down, everything else up; the spine by rack.
  for (int r = 0; r < R; ++r) {
    for (int i = 0; i < hosts; ++i) leaves_[r]->set_route(i, i / H == r ? i % H : uplink);
    if (leaf_fpgas)
      for (int q = 0; q < R; ++q) leaves_[r]->set_route(hosts + q, q == r ? H + fpga_ports - 1 : uplink);
    if (R > 1) leaves_[r]->set_route(spine_ep, uplink);
  }
  if (R > 1) {
    for (int i = 0; i < hosts; ++i) spine_->set_route(i, i / H);
    for (int q = 0; q < R; ++q) spine_->set_route(hosts + q, q);
    if (with_fpga) spine_->set_route(spine_ep, R);
  }
  // The ring: rank k's qp 0 sends to rank k+1's qp 1. Initial PSNs differ per
  // connection, as a NIC picks them, so PSN0 is never 0 by accident.
  const auto psn0_of = [seed](int sender) {
    return static_cast<uint32_t>((seed * 7919 + static_cast<uint64_t>(sender) * 104729) % (1u << 20));
  };
  for (int k = 0; k < ring_size(); ++k) {
    const int host = ring_[k], next = ring_next(k);
    nics_[host]->create_qp(next, ip_of(next), roce::RoceNic::qpn_of(recv_qp()), psn0_of(host));
  }
  for (int k = 0; k < ring_size(); ++k) {
    const int host = ring_[k], prev = ring_[(k + ring_size() - 1) % ring_size()];
    nics_[host]->create_qp(prev, ip_of(prev), roce::RoceNic::qpn_of(send_qp()), psn0_of(prev));
  }
  if (multigpu)
    for (int g = 0; g < hosts; ++g) {
      const int m = g / H, i = g % H;
      const int up = m * H + (i + 1) % H, down = m * H + (i + H - 1) % H;
      const int next = ((m + 1) % R) * H + i, prev = ((m + R - 1) % R) * H + i;
      const uint32_t psn0 = static_cast<uint32_t>((seed * 7919 + static_cast<uint64_t>(g) * 15485863) % (1u << 20));
      nics_[g]->create_qp(up, ip_of(up), roce::RoceNic::qpn_of(intra_recv_qp()), psn0);
      const uint32_t psn_down = static_cast<uint32_t>((seed * 7919 + static_cast<uint64_t>(down) * 15485863) % (1u << 20));
      nics_[g]->create_qp(down, ip_of(down), roce::RoceNic::qpn_of(intra_send_qp()), psn_down);
      nics_[g]->create_qp(next, ip_of(next), roce::RoceNic::qpn_of(inter_recv_qp()), psn0 ^ 0x5555);
      const uint32_t psn_prev = static_cast<uint32_t>((seed * 7919 + static_cast<uint64_t>(prev) * 15485863) % (1u << 20));
      nics_[g]->create_qp(prev, ip_of(prev), roce::RoceNic::qpn_of(inter_send_qp()), psn_prev ^ 0x5555);
    }
  if (!with_fpga) return;

  netreduce::Hierarchy hier;
  hier.leaf_ep0 = static_cast<uint32_t>(hosts);
  hier.leaf_ip0 = kLeafIp0;
  hier.host_ip0 = ip_of(0);
  hier.hosts_per_rack = H;
  hier.racks = R;
  hier.parent_ep = spine_ep;
  hier.parent_ip = kSpineIp;
  for (int r = 0; r < R && leaf_fpgas; ++r) {
    eth::EthernetSwitch& l = *leaves_[r];
    hier.role = R == 1 ? netreduce::Hierarchy::Flat : netreduce::Hierarchy::Leaf;
    hier.self_ep = static_cast<uint32_t>(hosts + r);
    hier.self_ip = kLeafIp0 + r;
    hier.rack = r;
    hier.uplink_port = R > 1 ? H : -1;
    fpgas_[r]->set_hierarchy(hier);
    // One ACL rule per worker (§4): its ring connection goes through the
    // FPGA port facing the host.
    for (int k = 0; k < ring_size(); ++k)
      if (ring_[k] / H == r)
        l.add_acl({ip_of(ring_[k]), ip_of(ring_next(k)), roce::RoceNic::qpn_of(recv_qp()), H + ring_[k] % H});
  }
  if (R == 1) return;
  hier.role = multigpu ? netreduce::Hierarchy::Flat : netreduce::Hierarchy::Spine;
  hier.self_ep = spine_ep;
  hier.self_ip = kSpineIp;
  hier.rack = -1;
  fpgas_.back()->set_hierarchy(hier);
  for (int q = 0; q < R; ++q) {
    const int port = R + q;
    if (!multigpu) {
      // Leaf q's partials enter the spine FPGA by port q.
      spine_->add_acl({kLeafIp0 + q, kSpineIp, hier.virtual_qp, port});
      continue;
    }
    // Parallel NetReduce: the n rings' connections leaving machine q enter
    // the FPGA by port q (one rule per GPU, §4).
    for (int i = 0; i < H; ++i) {
      const int g = q * H + i, next = ((q + 1) % R) * H + i;
      spine_->add_acl({ip_of(g), ip_of(next), roce::RoceNic::qpn_of(inter_recv_qp()), port});
    }
  }
}

void NetReduceRack::add_ring(uint32_t window, uint32_t msg_len, collectives::DType dtype, collectives::RedOp op) {
  const int R = racks(), H = hosts() / R;
  if (layout_ == Layout::MultiGpu) {  // one ring per GPU index, the machines its ranks
    for (int i = 0; i < H; ++i) fpgas_[0]->add_ring(static_cast<uint16_t>(i), R, window, msg_len, mtu_, dtype, op);
    return;
  }
  for (int r = 0; r < static_cast<int>(fpgas_.size()); ++r) {
    const bool spine = R > 1 && r == R;
    fpgas_[r]->add_ring(0, spine ? R : R == 1 ? ring_size() : H, window, msg_len, mtu_, dtype, op, spine ? 0 : r * H);
  }
}

NetReduceRack::~NetReduceRack() = default;

uint64_t NetReduceRack::progress() const {
  uint64_t n = 0;
  for (const auto& nic : nics_) n += nic->progress();
  for (const auto& f : fpgas_) n += f->progress();
  return n;
}

sc_core::sc_time NetReduceRack::default_stall_timeout() const {
  const double through = std::pow((1 - loss_) * (1 - corruption_), loop_links_);
  double rtos = 10;
  // Retransmission rounds each get through with probability `through`: the
  // chance that n rounds in a row fail is (1 - through)^n. Capped at 10^4
  // rounds (50% loss on a rack needs 7066): beyond, a run would not finish
  // in any useful time, and a stall report says more than a silent hour.
  if (through > 0 && through < 1) rtos = std::max(rtos, std::ceil(std::log(1e-12) / std::log1p(-through)));
  return rto_ * std::min(rtos, 1e4);
}

std::string NetReduceRack::stall_cause() const {
  const double through = std::pow((1 - loss_) * (1 - corruption_), loop_links_);
  if (std::log(1e-12) / std::log1p(-through) <= 1e4) return {};
  std::ostringstream os;
  os << "link.loss " << loss_ << " and link.corruption " << corruption_ << " let a retransmission through the "
     << loop_links_ << " links there and back once in " << std::setprecision(2) << 1 / through
     << " tries, too rarely to finish; lower them";
  return os.str();
}

void NetReduceRack::add_end(std::string from, std::string to, const net::OutPort* port, eth::LinkFaults* faults) {
  ends_.push_back({std::move(from), std::move(to), port});
  faults_.push_back(faults);
}

eth::LinkFaults& NetReduceRack::link_faults(const std::string& from, const std::string& to) {
  for (size_t k = 0; k < ends_.size(); ++k)
    if (ends_[k].from == from && ends_[k].to == to) return *faults_[k];
  throw UserError("no link " + from + " -> " + to + " on this platform");
}

uint64_t NetReduceRack::lost() const {
  uint64_t n = spine_ ? spine_->lost() : 0;
  for (const auto& l : leaves_) n += l->lost();
  for (const auto& nic : nics_) n += nic->lost();
  for (const auto& f : fpgas_) n += f->counters().lost;
  return n;
}

void NetReduceRack::trace(sc_core::sc_trace_file* tf) const {
  for (const auto& l : leaves_) l->trace(tf);
  if (spine_) spine_->trace(tf);
  for (const auto& n : nics_) n->trace(tf);
  for (const auto& f : fpgas_) f->trace(tf);
}

uint64_t NetReduceRack::report_held(std::ostream& os) const {
  uint64_t n = spine_ ? spine_->report_held(os) : 0;
  for (const auto& l : leaves_) n += l->report_held(os);
  for (const auto& nic : nics_) n += nic->report_held(os);
  for (const auto& f : fpgas_) n += f->report_held(os);
  return n;
}

}  // namespace incsim::platforms
