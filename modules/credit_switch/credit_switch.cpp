#include "credit_switch.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/hash.h"

namespace incsim::credit_switch {

using sc_core::sc_time;

Spread parse_spread(const std::string& name, const std::string& key) {
  if (name == "destination") return Spread::Destination;
  if (name == "rotate") return Spread::Rotate;
  if (name == "adaptive") return Spread::Adaptive;
  if (name == "flow") return Spread::Flow;
  throw UserError(key + " must be destination, rotate, adaptive or flow, not '" + name + "'");
}

VcAlloc parse_vc_alloc(const std::string& name, const std::string& key) {
  if (name == "class") return VcAlloc::Class;
  if (name == "packet") return VcAlloc::Packet;
  throw UserError(key + " must be class or packet, not '" + name + "'");
}

CreditSwitch::Port::Port(sc_core::sc_module_name name, CreditSwitch* sw, int index)
    : sc_module(name), in("in", sw, index), link("out") {}

CreditSwitch::CreditSwitch(sc_core::sc_module_name name, int ports, SwitchWiring wiring, const SwitchConfig& cfg,
                           net::PacketPool& pool)
    : CreditSwitch(name, ports, std::move(wiring), cfg, pool, 0,
                   [](sc_core::sc_module_name n, CreditSwitch* sw, int p) { return std::make_unique<Port>(n, sw, p); }) {}

CreditSwitch::CreditSwitch(sc_core::sc_module_name name, int ports, SwitchWiring wiring, const SwitchConfig& cfg,
                           net::PacketPool& pool, int injectors, const PortMaker& make_port)
    : sc_module(name), wiring_(std::move(wiring)), cfg_(cfg), pool_(pool), ports_(ports),
      inputs_(ports + injectors), turn_(wiring_.route.size(), 0) {
  for (int p = 0; p < ports; ++p) {
    outputs_.push_back(make_port(("port" + std::to_string(p)).c_str(), this, p));
    Port& out = *outputs_.back();
    inputs_[p].port = &out.in;
    inputs_[p].capacity = cfg.in_buffer_bytes;
    out.limit = cfg.out_queue_bytes;
    if (cfg.vc_alloc == VcAlloc::Packet) out.vcs = net::kNumVcs;
    out.requests.assign((inputs_.size() * net::kNumVcs + 63) / 64, 0);
    spawn_method(("out" + std::to_string(p) + "_proc").c_str(), [this, p] { output_process(p); }, out.wake);
  }
}

void CreditSwitch::configure_port(int p, double bw, sc_time latency, uint32_t peer_buffer_bytes) {
  outputs_[p]->link.configure(bw, latency, peer_buffer_bytes, &outputs_[p]->wake);
  // Speedup 0 is an output-queued switch: every input can reach an output at once.
  const double speedup = cfg_.speedup > 0 ? cfg_.speedup : static_cast<double>(ports_);
  outputs_[p]->xbar_ps_per_byte = 1000.0 / (bw * speedup);
}

void CreditSwitch::size_port(int p, uint32_t in_buffer_bytes, uint32_t out_queue_bytes) {
  inputs_[p].capacity = in_buffer_bytes;
  outputs_[p]->limit = out_queue_bytes;
}

void CreditSwitch::receive(int port, net::Packet* p) {
  Input& in = inputs_[port];
  in.bytes[p->vc] += p->wire_bytes;
  sc_assert(in.bytes[p->vc] <= in.capacity);  // credits make overflow impossible
  enqueue(port, p);
}

void CreditSwitch::enqueue(int input, net::Packet* p) {
  switch (p->op) {
    case net::Op::ReduceWrite:  // to its home port (Klenk §IV-C)
      p->out_port = p->home_switch == wiring_.index ? p->home_port : reduce_route(p, input);
      break;
    case net::Op::Write:
    case net::Op::PullRead:
      if (net::is_multicast(p->addr)) {
        p->out_port = kMulticast;
        break;
      }
      [[fallthrough]];
    default:
      p->out_port = cfg_.spread == Spread::Destination ? wiring_.route[p->dst]
                    : p->op == net::Op::PullResp         ? static_cast<int16_t>(response_port(p))
                                                         : kSpread;
  }
  sc_assert(p->out_port >= 0 || p->out_port == kMulticast || p->out_port == kSpread);
  Input& in = inputs_[input];
  in.fifo[p->vc].push(p);
  if (in.fifo[p->vc].front() == p) request(p, input);
}

void CreditSwitch::request(net::Packet* head, int input) {
  if (head->out_port == kMulticast) {
    replicate(head, input);
    return;
  }
  // A spread packet picks its port as it reaches the head, when the queues it compares are current.
  if (head->out_port == kSpread) head->out_port = static_cast<int16_t>(spread(head, head->dst));
  outputs_[head->out_port]->claimed += head->wire_bytes;
  request_output(head->out_port, input, head->vc, std::max(head->t_head + cfg_.latency, inputs_[input].xbar_free));
}

void CreditSwitch::rewind_arbiters() {
  std::fill(turn_.begin(), turn_.end(), 0u);
  for (auto& out : outputs_) out->xbar_rr = out->vc_rr = 0;
}

int CreditSwitch::spread(const net::Packet* p, uint32_t dst) {
  const uint32_t first = wiring_.routes_first[dst];
  const uint32_t n = wiring_.routes_first[dst + 1] - first;
  const int16_t* ports = wiring_.routes.data() + first;
  if (n == 1) return ports[0];
  switch (cfg_.spread) {
    case Spread::Rotate:
      return ports[turn_[dst]++ % n];
    case Spread::Adaptive: {
      // The shortest queue, counting heads already bound for it; ties go in turn.
      const uint32_t start = turn_[dst]++;
      int best = ports[start % n];
      uint64_t least = ~0ull;
      for (uint32_t k = 0; k < n; ++k) {
        const Port& out = *outputs_[ports[(start + k) % n]];
        uint64_t load = out.claimed;
        for (uint32_t b : out.bytes) load += b;
        if (load < least) {
          least = load;
          best = ports[(start + k) % n];
        }
      }
      return best;
    }
    case Spread::Flow:
      return ports[splitmix64(uint64_t{p->src} << 42 ^ uint64_t{dst} << 21 ^ p->stream) % n];
    default:
      return wiring_.route[dst];
  }
}

// Over the equal-cost links toward the home switch, spread by home port and
// source: the group's writes to one block converge on its home by different
// links instead of queueing on one.
int16_t CreditSwitch::reduce_route(net::Packet* p, int) {
  p->merge = false;
  return toward_switch(p->home_switch, static_cast<uint32_t>(p->home_port) + p->src);
}

int16_t CreditSwitch::toward_switch(int sw, uint32_t key) const {
  const uint32_t first = wiring_.route_to_switch_first[sw];
  const uint32_t n = wiring_.route_to_switch_first[sw + 1] - first;
  return wiring_.route_to_switch[first + key % n];
}

namespace {
[[noreturn]] void no_tables(const sc_core::sc_module& sw, const net::Packet* p) {
  SC_REPORT_ERROR("incsim/switch", (std::string(sw.name()) + " has no multicast or reduction tables, but a " +
                                    net::op_name(p->op) + " to " + std::to_string(p->addr) + " needs them")
                                       .c_str());
  std::abort();  // SC_REPORT_ERROR throws
}
}  // namespace

void CreditSwitch::replicate(net::Packet* head, int) { no_tables(*this, head); }
bool CreditSwitch::can_absorb(int, const net::Packet* h) { no_tables(*this, h); }
void CreditSwitch::absorb(int, net::Packet* p, const sc_time&) { no_tables(*this, p); }
void CreditSwitch::tick(int, const sc_time&, sc_time&) {}

// The head of an input queue has left (its last copy, for a multicast).
net::Packet* CreditSwitch::pop_head(int input, int vc, const sc_time& now) {
  Input& in = inputs_[input];
  net::Packet* h = in.fifo[vc].pop();
  in.bytes[vc] -= h->wire_bytes;
  in.mc_started[vc] = false;
  if (in.port) in.port->release(h, h->t_tail > now ? h->t_tail - now : sc_core::SC_ZERO_TIME);
  if (net::Packet* nh = in.fifo[vc].front()) request(nh, input);
  return h;
}

net::Packet* CreditSwitch::clone(const net::Packet* p) {
  net::Packet* c = pool_.get(p->capacity);  // of p's kind: a small packet's clone is small, its capacity p's
  const uint64_t id = c->id;
  uint8_t* data = c->data;
  *c = *p;
  c->id = id;
  c->data = data;
  c->next = nullptr;
  std::memcpy(data, p->data, p->payload_bytes);
  return c;
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
bool CreditSwitch::crossbar_move(int o, const sc_time& now, sc_time& next) {
  Port& out = *outputs_[o];
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
      // It may cross once it is eligible and both crossbar ports are free
      // (the copies of a multicast after the first read the input again).
      const bool mc = h->out_port == kMulticast;
      const sc_time in_free = mc && in.mc_started[vc] ? sc_time() : in.xbar_free;
      const sc_time ready = std::max(h->t_head + cfg_.latency, std::max(in_free, out.xbar_free));
      if (ready > now) {
        next = std::min(next, ready);
        continue;
      }
      // A reducing write at its home port, or at a merge point on its way,
      // goes to the port's table, not its queue.
      const bool absorbed = h->op == net::Op::ReduceWrite && (h->home_switch == wiring_.index || h->merge);
      if (absorbed && !can_absorb(o, h)) continue;
      // The VC it takes on the next link (a dateline moves it to its class's
      // second VC); allocated per packet, one of those the rule allows, and
      // toward an endpoint the class's first.
      int ovc = out_vc(static_cast<int>(idx / net::kNumVcs), o, vc);
      if (cfg_.vc_alloc == VcAlloc::Packet && !absorbed) {
        const bool to_endpoint = static_cast<size_t>(o) < wiring_.port_endpoint.size() && wiring_.port_endpoint[o] >= 0;
        ovc = to_endpoint ? net::class_first_vc(ovc) : allocate_vc(o, ovc, h->wire_bytes);
        if (ovc < 0) continue;  // no VC of its set has room: the link frees space
      }
      if (!absorbed && out.bytes[ovc] + h->wire_bytes > out.limit) continue;  // the link frees space
      const sc_time done = now + rounded_ps(h->wire_bytes * out.xbar_ps_per_byte);
      out.requests[idx / 64] &= ~(1ull << (idx % 64));
      out.xbar_free = done;
      in.xbar_free = std::max(in.xbar_free, done);
      net::Packet* moving = h;
      h->t_tail = std::max(h->t_tail, done);  // cut-through: the tail is here no earlier than this
      if (mc && h->mc_pending > 1) {
        moving = clone(h);
        --h->mc_pending;
        in.mc_started[vc] = true;
      } else {
        if (!mc) out.claimed -= h->wire_bytes;
        h->mc_pending = 0;
        pop_head(static_cast<int>(idx / net::kNumVcs), vc, now);  // the last copy travels as the original
      }
      out.xbar_rr = idx + 1;
      moving->vc = static_cast<uint8_t>(ovc);  // after pop_head: the input's credit is for the VC it came on
      deliver(o, moving, ovc, absorbed, now);
      return true;
    }
  }
  return false;
}

int CreditSwitch::allocate_vc(int o, int rule_vc, uint32_t bytes) const {
  const Port& out = *outputs_[o];
  // Where a rule splits a class into sets: the rule's VC and its set's other
  // one; otherwise the class's four, the first set's first.
  const int first = cfg_.vc_sets ? rule_vc & ~net::kExtraVcBit : net::class_first_vc(rule_vc);
  int best = -1;
  int64_t most = 0;
  for (int k = 0; k < (cfg_.vc_sets ? 2 : 4); ++k) {
    const int vc = net::allocated_vc(first, k);
    if (out.bytes[vc] + bytes > out.limit) continue;
    const int64_t free = int64_t{out.link.credits(vc)} - out.bytes[vc];
    if (best < 0 || free > most) {
      best = vc;
      most = free;
    }
  }
  return best;
}

// Starts the next packet on output o's wire, now if it is free or, picked
// ahead, the moment it frees (OutPort::can_pick).
bool CreditSwitch::transmit(int o, const sc_time& now) {
  Port& out = *outputs_[o];
  if (out.queued == 0 || !out.link.can_pick(now)) return false;
  const sc_time start = out.link.next_start(now);
  for (int k = 0; k < net::kNumVcs; ++k) {
    const int vc = static_cast<int>((out.vc_rr + k) % net::kNumVcs);
    net::Packet* h = out.queue[vc].front();
    if (!h || !out.link.has_credit(vc, h->wire_bytes)) continue;
    out.queue[vc].pop();
    out.bytes[vc] -= h->wire_bytes;
    --out.queued;
    out.vc_rr = vc + 1;
    out.link.send(h, start, h->t_tail);
    return true;
  }
  if (start == now) out.link.wait_for_credit(now);
  return false;
}

void CreditSwitch::output_process(int o) {
  Port& out = *outputs_[o];
  out.wake.fired();
  const sc_time now = sim_now();
  out.link.absorb_credits(now);
  const sc_time& never = sim_never();
  sc_time next = never;
  bool moved = true;
  while (moved) {
    moved = crossbar_move(o, now, next);
    moved = transmit(o, now) || moved;
  }
  if (out.queued && !out.link.link_free(now)) next = std::min(next, out.link.busy_until());
  if (out.timers && *out.timers) tick(o, now, next);
  if (next != never) out.wake.at(next);
}

void CreditSwitch::deliver(int o, net::Packet* p, int vc, bool absorbed, const sc_time& now) {
  if (absorbed) {
    absorb(o, p, now);
    return;
  }
  if (p->op == net::Op::PullResp && !(p = pass_response(o, p))) return;
  Port& out = *outputs_[o];
  out.queue[vc].push(p);
  out.bytes[vc] += p->wire_bytes;
  ++out.queued;
}

// What a port's own hardware makes joins the crossbar (Klenk Fig. 5):
// eligible at once, its switch latency already paid on the way in.
void CreditSwitch::inject(int o, net::Packet* p, const sc_time& now, bool fresh) {
  p->t_head = now > cfg_.latency ? now - cfg_.latency : sc_time();
  p->t_tail = now;
  if (fresh) p->t_inject = now;  // a GPU's packet sent on as a partial keeps its own
  const int input = ports_ + o;
  inputs_[input].bytes[p->vc] += p->wire_bytes;
  enqueue(input, p);
}

void CreditSwitch::trace(sc_core::sc_trace_file* tf) const {
  for (int p = 0; p < ports_; ++p) {
    // The input buffers are the switch's; they show under their port's scope.
    const std::string port = outputs_[p]->name();
    for (int vc = 0; vc < outputs_[p]->vcs; ++vc)
      sc_core::sc_trace(tf, inputs_[p].bytes[vc], port + ".in_bytes_vc" + std::to_string(vc));
    outputs_[p]->trace(tf);
  }
}

void CreditSwitch::Port::trace(sc_core::sc_trace_file* tf) const {
  const std::string me = name();
  for (int vc = 0; vc < vcs; ++vc) sc_core::sc_trace(tf, bytes[vc], me + ".out_bytes_vc" + std::to_string(vc));
  link.trace(tf, me, vcs);
}

uint64_t CreditSwitch::Port::report_held(std::ostream& os) const {
  uint64_t total = 0;
  for (int vc = 0; vc < net::kNumVcs; ++vc) total += net::report_queue(os, name(), "output", vc, queue[vc]);
  return total;
}

uint64_t CreditSwitch::report_held(std::ostream& os) const {
  uint64_t total = 0;
  const bool injectors = inputs_.size() > static_cast<size_t>(ports_);
  for (int p = 0; p < ports_; ++p) {
    const Port& port = *outputs_[p];
    for (int vc = 0; vc < net::kNumVcs; ++vc) {
      total += net::report_queue(os, port.name(), "input", vc, inputs_[p].fifo[vc]);
      if (injectors) total += net::report_queue(os, port.injector_name(), "output", vc, inputs_[ports_ + p].fifo[vc]);
    }
    total += port.report_held(os);
  }
  return total;
}

}  // namespace incsim::credit_switch
