#include "nvswitch.h"

#include <algorithm>
#include "core/process.h"

namespace incsim::nvswitch {

using sc_core::sc_time;

NvSwitch::NvSwitch(sc_core::sc_module_name name, int ports, std::vector<int16_t> route, const SwitchConfig& cfg)
    : sc_module(name), route_(std::move(route)), cfg_(cfg), inputs_(ports) {
  for (int p = 0; p < ports; ++p) {
    inputs_[p].port = std::make_unique<net::InPort>(("in" + std::to_string(p)).c_str(), this, p);
    outputs_.push_back(std::make_unique<Output>(("out" + std::to_string(p)).c_str()));
    outputs_.back()->requests.assign((ports * net::kNumVcs + 63) / 64, 0);
    spawn_method(("out" + std::to_string(p) + "_proc").c_str(), [this, p] { output_process(p); },
                 &outputs_[p]->wake);
  }
}

void NvSwitch::configure_port(int p, double bw, sc_time latency, uint32_t peer_buffer_bytes) {
  outputs_[p]->link.configure(bw, latency, peer_buffer_bytes, &outputs_[p]->wake);
  outputs_[p]->xbar_ps_per_byte = 1000.0 / (bw * cfg_.speedup);
}

void NvSwitch::wake_at(int o, const sc_time& at) {
  const sc_time now = sc_core::sc_time_stamp();
  outputs_[o]->wake.notify(at > now ? at - now : sc_core::SC_ZERO_TIME);
}

void NvSwitch::receive(int port, net::Packet* p) {
  Input& in = inputs_[port];
  p->out_port = route_[p->dst];
  sc_assert(p->out_port >= 0);
  in.bytes[p->vc] += p->wire_bytes;
  sc_assert(in.bytes[p->vc] <= cfg_.in_buffer_bytes);  // credits make overflow impossible
  in.fifo[p->vc].push(p);
  if (in.fifo[p->vc].front() == p) request(p, port);
}

void NvSwitch::request(net::Packet* head, int input) {
  const unsigned bit = static_cast<unsigned>(input) * net::kNumVcs + head->vc;
  outputs_[head->out_port]->requests[bit / 64] |= 1ull << (bit % 64);
  wake_at(head->out_port, std::max(head->t_head + cfg_.latency, inputs_[input].xbar_free));
}

namespace {
// First set bit at or after `from` and before `end`, or `end`.
unsigned next_bit(const std::vector<uint64_t>& bits, unsigned from, unsigned end) {
  while (from < end) {
    const uint64_t w = bits[from / 64] >> (from % 64);
    if (w) return std::min(end, from + static_cast<unsigned>(__builtin_ctzll(w)));
    from = (from / 64 + 1) * 64;
  }
  return end;
}
}  // namespace

// Moves one eligible head packet into output o's queue, round-robin over the
// (input, VC) pairs; `next` learns when a blocked candidate could go.
bool NvSwitch::crossbar_move(int o, const sc_time& now, sc_time& next) {
  Output& out = *outputs_[o];
  const unsigned n = static_cast<unsigned>(inputs_.size()) * net::kNumVcs;
  const unsigned start = out.xbar_rr % n;
  // Requesters in round-robin order: [start, n) then [0, start).
  for (unsigned pass = 0; pass < 2; ++pass) {
    const unsigned end = pass == 0 ? n : start;
    for (unsigned idx = next_bit(out.requests, pass == 0 ? start : 0, end); idx < end;
         idx = next_bit(out.requests, idx + 1, end)) {
      Input& in = inputs_[idx / net::kNumVcs];
      const int vc = static_cast<int>(idx % net::kNumVcs);
      net::Packet* h = in.fifo[vc].front();
      // It may cross once it is eligible and both crossbar ports are free.
      const sc_time ready = std::max(h->t_head + cfg_.latency, std::max(in.xbar_free, out.xbar_free));
      if (ready > now) {
        next = std::min(next, ready);
        continue;
      }
      if (out.bytes[vc] + h->wire_bytes > cfg_.out_queue_bytes) continue;  // the link frees space
      in.fifo[vc].pop();
      in.bytes[vc] -= h->wire_bytes;
      out.requests[idx / 64] &= ~(1ull << (idx % 64));
      const sc_time done =
          now + sc_time::from_value(static_cast<sc_dt::uint64>(h->wire_bytes * out.xbar_ps_per_byte + 0.5));
      out.xbar_free = in.xbar_free = done;
      h->t_tail = std::max(h->t_tail, done);  // cut-through: the tail is here no earlier than this
      out.queue[vc].push(h);
      out.bytes[vc] += h->wire_bytes;
      in.port->release(h, h->t_tail - now);
      if (net::Packet* nh = in.fifo[vc].front()) request(nh, static_cast<int>(idx / net::kNumVcs));
      out.xbar_rr = idx + 1;
      return true;
    }
  }
  return false;
}

// Starts the next packet on output o's wire, now if it is free or, picked
// ahead, the moment it frees (OutPort::can_pick).
bool NvSwitch::transmit(int o, const sc_time& now) {
  Output& out = *outputs_[o];
  if (!out.link.can_pick(now)) return false;
  const sc_time start = out.link.next_start(now);
  for (int k = 0; k < net::kNumVcs; ++k) {
    const int vc = static_cast<int>((out.vc_rr + k) % net::kNumVcs);
    net::Packet* h = out.queue[vc].front();
    if (!h || !out.link.has_credit(vc, h->wire_bytes)) continue;
    out.queue[vc].pop();
    out.bytes[vc] -= h->wire_bytes;
    out.vc_rr = vc + 1;
    out.link.send(h, start, h->t_tail);
    return true;
  }
  if (start == now)
    for (int vc = 0; vc < net::kNumVcs; ++vc)
      if (!out.queue[vc].empty()) out.link.wait_for_credit(now);
  return false;
}

void NvSwitch::output_process(int o) {
  Output& out = *outputs_[o];
  const sc_time now = sc_core::sc_time_stamp();
  out.link.absorb_credits(now);
  static const sc_time never = sc_core::sc_max_time();
  sc_time next = never;
  bool moved = true;
  while (moved) {
    moved = crossbar_move(o, now, next);
    moved = transmit(o, now) || moved;
  }
  bool queued = false;
  for (int vc = 0; vc < net::kNumVcs; ++vc) queued = queued || !out.queue[vc].empty();
  if (queued && !out.link.link_free(now)) next = std::min(next, out.link.busy_until());
  if (next != never) out.wake.notify(next - now);
}

void NvSwitch::trace(sc_core::sc_trace_file* tf) const {
  const std::string me = name();
  for (size_t p = 0; p < outputs_.size(); ++p) {
    const std::string port = me + ".port" + std::to_string(p);
    for (int vc = 0; vc < net::kNumVcs; ++vc) {
      sc_core::sc_trace(tf, inputs_[p].bytes[vc], port + ".in_bytes_vc" + std::to_string(vc));
      sc_core::sc_trace(tf, outputs_[p]->bytes[vc], port + ".out_bytes_vc" + std::to_string(vc));
    }
    outputs_[p]->link.trace(tf, port);
  }
}

uint64_t NvSwitch::report_held(std::ostream& os) const {
  uint64_t total = 0;
  auto line = [&](const char* where, size_t p, int vc, const net::PacketFifo& f) {
    if (f.empty()) return;
    const net::Packet* h = f.front();
    os << "  " << name() << " " << where << " port " << p << " vc" << vc << ": " << f.size()
       << " packets, head #" << h->id << " " << net::op_name(h->op) << " from endpoint " << h->src
       << " to endpoint " << h->dst << "\n";
    total += f.size();
  };
  for (size_t p = 0; p < inputs_.size(); ++p)
    for (int vc = 0; vc < net::kNumVcs; ++vc) {
      line("input", p, vc, inputs_[p].fifo[vc]);
      line("output", p, vc, outputs_[p]->queue[vc]);
    }
  return total;
}

}  // namespace incsim::nvswitch
