#include "nvswitch.h"

#include <algorithm>
#include "collectives/data_pattern.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/process.h"

namespace incsim::nvswitch {

using sc_core::sc_time;

Spread parse_spread(const std::string& name, const std::string& key) {
  if (name == "destination") return Spread::Destination;
  if (name == "rotate") return Spread::Rotate;
  if (name == "adaptive") return Spread::Adaptive;
  if (name == "flow") return Spread::Flow;
  throw UserError(key + " must be destination, rotate, adaptive or flow, not '" + name + "'");
}

NvSwitch::Port::Port(sc_core::sc_module_name name, NvSwitch* sw, int index)
    : sc_module(name), table("reduction_table"), in("in", sw, index), link("out") {}

NvSwitch::NvSwitch(sc_core::sc_module_name name, int ports, SwitchWiring wiring, const SwitchConfig& cfg,
                   net::PacketPool& pool, const topo::MulticastFabric* fabric)
    : sc_module(name), wiring_(std::move(wiring)), cfg_(cfg), log_(basename()), pool_(pool), ports_(ports),
      inputs_(2 * ports), turn_(wiring_.route.size(), 0) {
  if (fabric) mcr_ = std::make_unique<McrTable>("mcr_table", *fabric, wiring_.index);
  for (int p = 0; p < ports; ++p) {
    outputs_.push_back(std::make_unique<Port>(("port" + std::to_string(p)).c_str(), this, p));
    Port& out = *outputs_.back();
    inputs_[p].port = &out.in;
    inputs_[p].capacity = cfg.in_buffer_bytes;
    out.limit = cfg.out_queue_bytes;
    out.requests.assign((inputs_.size() * net::kNumVcs + 63) / 64, 0);
    out.table.configure(cfg.entry_bytes ? cfg.table_bytes / cfg.entry_bytes : 0, cfg.entry_bytes);
    out.table.watch_emitted(&inputs_[ports + p].bytes[net::kRequestVc]);
    spawn_method(("out" + std::to_string(p) + "_proc").c_str(), [this, p] { output_process(p); }, &out.wake.event);
  }
}

void NvSwitch::configure_port(int p, double bw, sc_time latency, uint32_t peer_buffer_bytes) {
  outputs_[p]->link.configure(bw, latency, peer_buffer_bytes, &outputs_[p]->wake);
  // Speedup 0 is an output-queued switch: every input can reach an output at once.
  const double speedup = cfg_.speedup > 0 ? cfg_.speedup : static_cast<double>(ports_);
  outputs_[p]->xbar_ps_per_byte = 1000.0 / (bw * speedup);
}

void NvSwitch::set_table_bytes(int p, uint32_t bytes) {
  outputs_[p]->table.configure(cfg_.entry_bytes ? bytes / cfg_.entry_bytes : 0, cfg_.entry_bytes);
}

void NvSwitch::size_port(int p, uint32_t in_buffer_bytes, uint32_t out_queue_bytes) {
  inputs_[p].capacity = in_buffer_bytes;
  outputs_[p]->limit = out_queue_bytes;
}

void NvSwitch::wake_at(int o, const sc_time& at) {
  outputs_[o]->wake.at(at);
}

void NvSwitch::receive(int port, net::Packet* p) {
  Input& in = inputs_[port];
  in.bytes[p->vc] += p->wire_bytes;
  sc_assert(in.bytes[p->vc] <= in.capacity);  // credits make overflow impossible
  enqueue(port, p);
}

void NvSwitch::enqueue(int input, net::Packet* p) {
  switch (p->op) {
    case net::Op::ReduceWrite:  // to its home port (Klenk §IV-C)
      if (p->home_switch == wiring_.index) {
        p->out_port = p->home_port;
      } else {
        // Over the equal-cost links toward that switch, spread by home port
        // and source: the group's writes to one block converge on its home
        // by different links instead of queueing on one.
        const uint32_t first = wiring_.route_to_switch_first[p->home_switch];
        const uint32_t n = wiring_.route_to_switch_first[p->home_switch + 1] - first;
        p->out_port = wiring_.route_to_switch[first + (static_cast<uint32_t>(p->home_port) + p->src) % n];
      }
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
                    : p->op == net::Op::PullResp         ? static_cast<int16_t>(pull_port(p->dst, p->addr))
                                                         : kSpread;
  }
  sc_assert(p->out_port >= 0 || p->out_port == kMulticast || p->out_port == kSpread);
  Input& in = inputs_[input];
  in.fifo[p->vc].push(p);
  if (in.fifo[p->vc].front() == p) request(p, input);
}

void NvSwitch::request(net::Packet* head, int input) {
  if (head->out_port == kMulticast) {
    multicast_request(head, input);
    return;
  }
  // A spread packet picks its port as it reaches the head, when the queues it compares are current.
  if (head->out_port == kSpread) head->out_port = static_cast<int16_t>(spread(head, head->dst));
  const unsigned bit = static_cast<unsigned>(input) * net::kNumVcs + head->vc;
  Port& out = *outputs_[head->out_port];
  out.requests[bit / 64] |= 1ull << (bit % 64);
  out.claimed += head->wire_bytes;
  wake_at(head->out_port, std::max(head->t_head + cfg_.latency, inputs_[input].xbar_free));
}

int NvSwitch::spread(const net::Packet* p, uint32_t dst) {
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

int NvSwitch::pull_port(uint32_t src, uint64_t addr) const {
  const int o = wiring_.route[src];
  if (cfg_.spread == Spread::Destination || wiring_.port_endpoint[o] != static_cast<int32_t>(src)) return o;
  const uint32_t first = wiring_.routes_first[src];
  const uint32_t n = wiring_.routes_first[src + 1] - first;
  return wiring_.routes[first + addr / cfg_.entry_bytes % n];
}

// The MCR table lookup (Klenk Fig. 2, markers 5-7): the outputs of the
// block's tree at this switch, less the port it came in on and, if the
// region says so, the source. A pull request first takes an entry in the
// table of the port its responses will leave by; at the requester's first
// hop it waits for one (Klenk §IV-B), elsewhere it goes on without.
void NvSwitch::multicast_request(net::Packet* h, int input) {
  sc_assert(mcr_);
  const int r = mcr_->lookup(h->addr);
  sc_assert(r >= 0);  // GPUs store only to registered regions
  const bool pull = h->op == net::Op::PullRead;
  const int pivot = pull                              ? static_cast<int>(h->src)
                    : h->src == net::kNoEndpoint ? mcr_->result_pivot(r, h->addr)
                                                 : mcr_->home_gpu(r, h->addr);
  if (pull) {
    const int o = pull_port(h->src, h->addr);
    Port& out = *outputs_[o];
    const int e = out.table.alloc(h->addr, h->src, static_cast<uint16_t>(mcr_->subtree_targets(r, pivot)),
                                  sc_core::sc_time_stamp().value());
    if (e >= 0) {
      ReductionTable::Entry& en = out.table.entry(e);
      en.bytes = h->payload_bytes;
      en.dtype = h->dtype;
      en.redop = h->redop;
      INCSIM_LOG(out.table.log, Debug, "allocate {:#x} for pull by gpu {}, {} responses expected, {} of {} entries used",
                 h->addr, h->src, en.expected, out.table.size(), out.table.capacity());
    } else if (input < ports_ && wiring_.port_endpoint[input] == static_cast<int32_t>(h->src)) {
      ++out.table.stalls;
      INCSIM_LOG(out.table.log, Debug, "full: pull {:#x} by gpu {} stalls at input {}", h->addr, h->src, input);
      out.table.stalled.push_back(input);
      return;
    }
  }
  // Every switch on a tree has an edge or a target; the fabric manager
  // leaves out only parts of the fabric that cannot reach every member.
  if (mcr_->fanout_begin(r, pivot) == mcr_->fanout_end(r, pivot))
    SC_REPORT_ERROR("incsim/nvswitch", (std::string(name()) + ": a multicast to " + std::to_string(h->addr) +
                                        " entered a switch its group's trees leave out (the group's members are "
                                        "reached through another part of the fabric)")
                                           .c_str());
  const uint32_t excluded = mcr_->region(r).exclude_source ? h->src : net::kNoEndpoint;
  const unsigned bit = static_cast<unsigned>(input) * net::kNumVcs + h->vc;
  const sc_time ready = std::max(h->t_head + cfg_.latency, inputs_[input].xbar_free);
  uint16_t pending = 0;
  for (auto f = mcr_->fanout_begin(r, pivot); f != mcr_->fanout_end(r, pivot); ++f) {
    // Not back up the tree edge it came by; to GPUs, all but an excluded source.
    if (f->endpoint < 0 ? f->port == input : static_cast<uint32_t>(f->endpoint) == excluded) continue;
    // A copy for a GPU may take any link of the trunk to it; a tree edge stays (the tree is the routes').
    const int o = f->endpoint >= 0 && cfg_.spread != Spread::Destination ? spread(h, static_cast<uint32_t>(f->endpoint))
                                                                         : f->port;
    outputs_[o]->requests[bit / 64] |= 1ull << (bit % 64);
    wake_at(o, ready);
    ++pending;
  }
  h->mc_pending = pending;
  INCSIM_LOG(log_, Debug, "multicast {:#x} from port {} replicates to {} ports", h->addr, input, pending);
  if (pending == 0) pool_.put(pop_head(input, h->vc, sc_core::sc_time_stamp()));  // nothing beyond here needs it
}

// The head of an input queue has left (its last copy, for a multicast).
net::Packet* NvSwitch::pop_head(int input, int vc, const sc_time& now) {
  Input& in = inputs_[input];
  net::Packet* h = in.fifo[vc].pop();
  in.bytes[vc] -= h->wire_bytes;
  in.mc_started[vc] = false;
  if (in.port) in.port->release(h, h->t_tail > now ? h->t_tail - now : sc_core::SC_ZERO_TIME);
  if (net::Packet* nh = in.fifo[vc].front()) request(nh, input);
  return h;
}

net::Packet* NvSwitch::clone(const net::Packet* p) {
  net::Packet* c = pool_.get();
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
bool NvSwitch::crossbar_move(int o, const sc_time& now, sc_time& next) {
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
      // A push write at its home port goes into the table, which never stalls
      // (Klenk's evicts); one that holds keeps a write that would need a new
      // entry while it is full, until one frees.
      const bool absorbed = h->op == net::Op::ReduceWrite && h->home_switch == wiring_.index;
      if (absorbed && cfg_.holds && out.table.full() && out.table.find(h->addr, net::kNoEndpoint) < 0) continue;
      // The VC it takes on the next link (a dateline moves it to its class's second VC).
      const int ovc = out_vc(static_cast<int>(idx / net::kNumVcs), o, vc);
      if (!absorbed && out.bytes[ovc] + h->wire_bytes > out.limit) continue;  // the link frees space
      const sc_time done =
          now + sc_time::from_value(static_cast<sc_dt::uint64>(h->wire_bytes * out.xbar_ps_per_byte + 0.5));
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
      deliver(o, moving, ovc, now);
      return true;
    }
  }
  return false;
}

// Starts the next packet on output o's wire, now if it is free or, picked
// ahead, the moment it frees (OutPort::can_pick).
bool NvSwitch::transmit(int o, const sc_time& now) {
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

void NvSwitch::output_process(int o) {
  Port& out = *outputs_[o];
  out.wake.fired();
  const sc_time now = sc_core::sc_time_stamp();
  out.link.absorb_credits(now);
  static const sc_time never = sc_core::sc_max_time();
  sc_time next = never;
  bool moved = true;
  while (moved) {
    moved = crossbar_move(o, now, next);
    moved = transmit(o, now) || moved;
  }
  if (out.queued && !out.link.link_free(now)) next = std::min(next, out.link.busy_until());
  if (out.table.push_entries && !cfg_.holds) expire(o, now, next);
  if (next != never) out.wake.at(next);
}

void NvSwitch::deliver(int o, net::Packet* p, int vc, const sc_time& now) {
  Port& out = *outputs_[o];
  if (p->op == net::Op::ReduceWrite && p->home_switch == wiring_.index) {
    push_reduce(o, p, now);
    return;
  }
  if (p->op == net::Op::PullResp && out.table.capacity() && !(p = pull_reduce(o, p))) return;
  out.queue[vc].push(p);
  out.bytes[vc] += p->wire_bytes;
  ++out.queued;
}

// Push (Klenk §IV-C, Fig. 4): the table behaves as a fully associative cache.
// A hit reduces; a miss takes a free entry or, on a full table, evicts the
// least recently used one to its home GPU (or, under the timeout policy,
// sends the packet itself on as a partial). The entry completes when its
// count reaches the group size, and the result is multicast to the group.
void NvSwitch::push_reduce(int o, net::Packet* p, const sc_time& now) {
  ReductionTable& t = outputs_[o]->table;
  const uint64_t now_ps = now.value();
  sc_time at = std::max(now, p->t_tail);  // what it makes leaves once its last flit is in
  if (cfg_.alu_ps_per_byte > 0) {  // and once the ALU has added it, in turn
    sc_time& alu = outputs_[o]->alu_free;
    alu = std::max(at, alu) + sc_time::from_value(static_cast<sc_dt::uint64>(p->payload_bytes * cfg_.alu_ps_per_byte + 0.5));
    at = alu;
  }
  int e = t.find(p->addr, net::kNoEndpoint);
  if (e >= 0) {
    ++t.hits;
    ReductionTable::Entry& en = t.entry(e);
    outputs_[o]->table.alu.reduce(static_cast<collectives::DType>(en.dtype), static_cast<collectives::RedOp>(en.redop),
                            t.data(e), p->data, en.bytes);
    en.count = static_cast<uint16_t>(en.count + p->count);
    t.touch(e, now_ps);
    INCSIM_LOG(outputs_[o]->table.log, Debug, "hit {:#x}: {} of {} contributions", p->addr, en.count, en.expected);
  } else {
    ++t.misses;
    // The victim, by the eviction policy (Klenk §IV-C: LRU); pull entries
    // wait for responses and are never evicted.
    static_assert(EvictionPolicy::kPushOwner == net::kNoEndpoint, "push entries are owned by no endpoint");
    sc_assert(!(cfg_.holds && t.full()));  // crossbar_move held it
    const int victim = t.full() ? cfg_.eviction->victim(t) : -1;
    sc_assert(victim < 0 || t.entry(victim).owner == net::kNoEndpoint);
    if (t.full() && victim < 0) {
      ++t.evictions;
      INCSIM_LOG(outputs_[o]->table.log, Debug, "full: push {:#x} goes on as a partial to gpu {}", p->addr,
                 mcr_->home_gpu(mcr_->region_of(p->addr), p->addr));
      p->op = net::Op::Partial;
      p->dst = static_cast<uint32_t>(mcr_->home_gpu(mcr_->region_of(p->addr), p->addr));
      inject(o, p, at, false);
      return;
    }
    if (victim >= 0) emit(o, victim, false, at, false);
    const int r = mcr_->region_of(p->addr);
    e = t.alloc(p->addr, net::kNoEndpoint, static_cast<uint16_t>(mcr_->region(r).targets.size()), now_ps);
    ++outputs_[o]->table.push_entries;
    ReductionTable::Entry& en = t.entry(e);
    en.bytes = p->payload_bytes;
    en.dtype = p->dtype;
    en.redop = p->redop;
    en.count = p->count;
    INCSIM_LOG(outputs_[o]->table.log, Debug, "miss {:#x}: allocate, {} of {} contributions, {} of {} entries used", p->addr,
               en.count, en.expected, t.size(), t.capacity());
    std::memcpy(t.data(e), p->data, p->payload_bytes);
    if (victim >= 0) retry_stalled(o);  // only now: the freed entry went to this write
  }
  pool_.put(p);
  if (t.entry(e).count >= t.entry(e).expected) emit(o, e, true, at);
}

// Pull (Klenk §IV-B, Fig. 3): a response that hits is reduced into its entry;
// the entry's last expected response leaves carrying the result and the
// count. A miss (no entry was free when the request passed) bypasses.
net::Packet* NvSwitch::pull_reduce(int o, net::Packet* p) {
  ReductionTable& t = outputs_[o]->table;
  const int e = t.find(p->addr, p->dst);
  if (e < 0) {
    ++t.misses;
    INCSIM_LOG(outputs_[o]->table.log, Debug, "miss: response {:#x} for gpu {} bypasses", p->addr, p->dst);
    return p;
  }
  ++t.hits;
  INCSIM_LOG(outputs_[o]->table.log, Debug, "hit: response {:#x} for gpu {}", p->addr, p->dst);
  ReductionTable::Entry& en = t.entry(e);
  if (en.count == 0) std::memcpy(t.data(e), p->data, en.bytes);
  else
    outputs_[o]->table.alu.reduce(static_cast<collectives::DType>(en.dtype), static_cast<collectives::RedOp>(en.redop),
                            t.data(e), p->data, en.bytes);
  en.count = static_cast<uint16_t>(en.count + p->count);
  if (en.count < en.expected) {
    pool_.put(p);
    return nullptr;
  }
  std::memcpy(p->data, t.data(e), en.bytes);
  p->count = en.count;
  ++t.completions;
  INCSIM_LOG(outputs_[o]->table.log, Debug, "complete {:#x}: {} contributions go to gpu {}", p->addr, en.count, p->dst);
  release_entry(o, e, true);
  return p;
}

void NvSwitch::emit(int o, int e, bool complete, const sc_time& now, bool retry) {
  ReductionTable& t = outputs_[o]->table;
  const ReductionTable::Entry& en = t.entry(e);
  net::Packet* p = pool_.get();
  p->addr = en.addr;
  p->src = net::kNoEndpoint;
  p->vc = net::kRequestVc;
  p->payload_bytes = en.bytes;
  p->count = en.count;
  p->dtype = en.dtype;
  p->redop = en.redop;
  std::memcpy(p->data, t.data(e), en.bytes);
  if (complete) {
    ++t.completions;
    p->op = net::Op::Write;  // a multicast write of the final result
    p->dst = 0;
    INCSIM_LOG(outputs_[o]->table.log, Debug, "complete {:#x}: {} contributions, result multicast", en.addr, en.count);
  } else {
    ++t.evictions;
    p->op = net::Op::Partial;
    p->dst = static_cast<uint32_t>(mcr_->home_gpu(mcr_->region_of(en.addr), en.addr));
    INCSIM_LOG(outputs_[o]->table.log, Debug, "evict {:#x} ({}): {} of {} contributions go to gpu {}", en.addr,
               retry ? "timeout" : "lru", en.count, en.expected, p->dst);
  }
  p->wire_bytes = pool_.format().wire_bytes(p->op, p->payload_bytes);
  release_entry(o, e, retry);
  inject(o, p, now, true);
}

void NvSwitch::release_entry(int o, int e, bool retry) {
  Port& out = *outputs_[o];
  if (out.table.entry(e).owner == net::kNoEndpoint) --out.table.push_entries;
  out.table.release(e);
  if (retry) retry_stalled(o);
}

// Pull requests stalled at port o retry now that an entry is free.
void NvSwitch::retry_stalled(int o) {
  Port& out = *outputs_[o];
  std::vector<int> waiting;
  waiting.swap(out.table.stalled);
  for (int i : waiting) request(inputs_[i].fifo[net::kRequestVc].front(), i);
}

// The table's output joins the crossbar (Klenk Fig. 5): eligible at once,
// its switch latency already paid on the way in.
void NvSwitch::inject(int o, net::Packet* p, const sc_time& now, bool fresh) {
  p->t_head = now > cfg_.latency ? now - cfg_.latency : sc_time();
  p->t_tail = now;
  if (fresh) p->t_inject = now;  // a GPU's packet sent on as a partial keeps its own
  const int input = ports_ + o;
  inputs_[input].bytes[p->vc] += p->wire_bytes;
  enqueue(input, p);
}

// Push entries idle for the timeout go to their home GPU (Klenk §IV-C:
// after an eviction a count alone cannot tell that an entry is final).
void NvSwitch::expire(int o, const sc_time& now, sc_time& next) {
  ReductionTable& t = outputs_[o]->table;
  const uint64_t timeout = cfg_.table_timeout.value();
  for (int e = t.lru(); e >= 0;) {
    const ReductionTable::Entry& en = t.entry(e);
    const int after = en.next;
    if (en.owner == net::kNoEndpoint) {
      if (en.touched + timeout > now.value()) {
        next = std::min(next, sc_time::from_value(en.touched + timeout));
        return;
      }
      emit(o, e, false, now);
    }
    e = after;
  }
}

void NvSwitch::trace(sc_core::sc_trace_file* tf) const {
  if (mcr_) mcr_->trace(tf);
  for (int p = 0; p < ports_; ++p) {
    // The input buffers are the switch's; they show under their port's scope.
    const std::string port = outputs_[p]->name();
    for (int vc = 0; vc < net::kNumVcs; ++vc)
      sc_core::sc_trace(tf, inputs_[p].bytes[vc], port + ".in_bytes_vc" + std::to_string(vc));
    outputs_[p]->trace(tf);
  }
}

void NvSwitch::Port::trace(sc_core::sc_trace_file* tf) const {
  const std::string me = name();
  for (int vc = 0; vc < net::kNumVcs; ++vc) sc_core::sc_trace(tf, bytes[vc], me + ".out_bytes_vc" + std::to_string(vc));
  link.trace(tf, me);
  table.trace(tf);
}

namespace {
// "  <who> <what> vc<k>: n packets, head #id ..." for a queue that holds packets; returns n.
uint64_t held_line(std::ostream& os, const char* who, const char* what, int vc, const net::PacketFifo& f) {
  if (f.empty()) return 0;
  const net::Packet* h = f.front();
  os << "  " << who << " " << what << " vc" << vc << ": " << f.size() << " packets, head #" << h->id << " "
     << net::op_name(h->op) << " from endpoint " << h->src << " to endpoint " << h->dst << "\n";
  return f.size();
}
}  // namespace

uint64_t NvSwitch::Port::report_held(std::ostream& os) const {
  uint64_t total = 0;
  for (int vc = 0; vc < net::kNumVcs; ++vc) total += held_line(os, name(), "output", vc, queue[vc]);
  table.report(os);
  return total;
}

uint64_t NvSwitch::progress() const {
  uint64_t n = 0;
  for (const auto& o : outputs_) n += o->table.completions;
  return n;
}

uint64_t NvSwitch::report_held(std::ostream& os) const {
  uint64_t total = 0;
  for (int p = 0; p < ports_; ++p) {
    const Port& port = *outputs_[p];
    for (int vc = 0; vc < net::kNumVcs; ++vc) {
      total += held_line(os, port.name(), "input", vc, inputs_[p].fifo[vc]);
      total += held_line(os, port.table.name(), "output", vc, inputs_[ports_ + p].fifo[vc]);
    }
    total += port.report_held(os);
  }
  return total;
}

}  // namespace incsim::nvswitch
