#include "ethernet_switch.h"

#include "ethernet/ecmp.h"

namespace incsim::eth {

EthernetSwitch::Port::Port(const std::string& name, EthernetSwitch* owner, int index)
    : in((name + "_in").c_str(), owner, index), egress(name + "_out") {}

EthernetSwitch::EthernetSwitch(sc_core::sc_module_name name, int ports, const SwitchConfig& cfg, net::PacketPool* pool)
    : sc_core::sc_module(name), cfg_(cfg), pool_(pool) {
  for (int i = 0; i < ports; ++i) {
    ports_.push_back(std::make_unique<Port>("port" + std::to_string(i), this, i));
    ingress_.push_back(&ports_.back()->in);
  }
  for (int i = 0; i < ports; ++i) {
    Egress& e = ports_[i]->egress;
    e.set_ingress(&ingress_);
    spawn_method((std::string(basename()) + "_out" + std::to_string(i)).c_str(), [&e] { e.serve(); }, e.wake);
  }
}

EthernetSwitch::~EthernetSwitch() = default;

void EthernetSwitch::set_route(uint32_t endpoint, int port) {
  if (endpoint >= fdb_.size()) fdb_.resize(endpoint + 1);
  fdb_[endpoint].assign(1, port);
}

uint64_t EthernetSwitch::lost() const {
  uint64_t n = 0;
  for (const auto& p : ports_) n += p->faults.lost();
  return n;
}

int EthernetSwitch::forward(const net::Packet* p) const {
  if (p->dst >= fdb_.size() || fdb_[p->dst].empty()) return -1;
  const std::vector<int>& ports = fdb_[p->dst];
  if (ports.size() == 1) return ports[0];
  const RoceHeader& h = header(p);
  return ports[ecmp_pick(h.src_ip, h.dst_ip, h.dst_qp, ports.size())];
}

int EthernetSwitch::redirect(int in_port, const net::Packet* p) const {
  const RoceHeader& h = header(p);
  if (is_data(h.opcode))
    for (const AclRule& r : acl_)
      if (r.src_ip == h.src_ip && r.dst_ip == h.dst_ip && r.dst_qp == h.dst_qp && in_port != r.to_port)
        return r.to_port;
  return -1;
}

void EthernetSwitch::receive(int port, net::Packet* p) {
  Port& in = *ports_[port];
  if (in.faults.lose(p, in.in, *pool_)) return;
  const int by_destination = forward(p), by_acl = redirect(port, p);
  const int out = by_acl >= 0 ? by_acl : by_destination;
  sc_assert(out >= 0 && out < num_ports());
  if (out != by_destination) ++redirected_;
  p->in_port = static_cast<int16_t>(port);  // the ingress buffer it holds until it leaves
  ports_[out]->egress.push(p);
}

void EthernetSwitch::trace(sc_core::sc_trace_file* tf) const {
  const std::string me = name();
  for (size_t i = 0; i < ports_.size(); ++i)
    sc_core::sc_trace(tf, ports_[i]->egress.depth_ref(), me + ".port" + std::to_string(i) + ".queue");
}

uint64_t EthernetSwitch::report_held(std::ostream& os) const {
  uint64_t n = 0;
  for (size_t i = 0; i < ports_.size(); ++i)
    n += ports_[i]->egress.report_held(os, std::string(name()) + " port " + std::to_string(i));
  return n;
}

}  // namespace incsim::eth
