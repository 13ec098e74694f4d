#include "nvswitch.h"

#include <algorithm>
#include <cstring>

namespace incsim::nvswitch {

using sc_core::sc_time;
using credit_switch::Spread;

NvSwitch::NvSwitch(sc_core::sc_module_name name, int ports, credit_switch::SwitchWiring wiring,
                   const credit_switch::SwitchConfig& cfg,
                   const TableConfig& tables, net::PacketPool& pool, const topo::MulticastFabric* fabric)
    : CreditSwitch(name, ports, std::move(wiring), cfg, pool, ports,
                   [](sc_core::sc_module_name n, CreditSwitch* sw, int p) { return std::make_unique<TablePort>(n, sw, p); }),
      tables_(tables), log_(basename()) {
  if (fabric) mcr_ = std::make_unique<McrTable>("mcr_table", *fabric, wiring_.index);
  for (int p = 0; p < ports; ++p) {
    set_table_bytes(p, tables.table_bytes);
    port_of(p).table.share(tables.sharing.get());
    port_of(p).table.watch_emitted(&injector_bytes(p, net::kRequestVc));
    if (!tables.holds) port_of(p).timers = &port_of(p).table.push_entries;  // push entries time out
  }
}

void NvSwitch::set_table_bytes(int p, uint32_t bytes) {
  port_of(p).table.configure(tables_.entry_bytes ? bytes / tables_.entry_bytes : 0, tables_.entry_bytes);
}

int NvSwitch::pull_port(uint32_t src, uint64_t addr) const {
  const int o = wiring_.route[src];
  if (cfg_.spread == Spread::Destination || wiring_.port_endpoint[o] != static_cast<int32_t>(src)) return o;
  const uint32_t first = wiring_.routes_first[src];
  const uint32_t n = wiring_.routes_first[src + 1] - first;
  return wiring_.routes[first + addr / tables_.entry_bytes % n];
}

// The MCR table lookup (Klenk Fig. 2, markers 5-7): the outputs of the
// block's tree at this switch, less the port it came in on and, if the
// region says so, the source. A pull request first takes an entry in the
// table of the port its responses will leave by; at the requester's first
// hop it waits for one (Klenk §IV-B), elsewhere it goes on without.
void NvSwitch::replicate(net::Packet* h, int input) {
  sc_assert(mcr_);
  const int r = mcr_->lookup(h->addr);
  sc_assert(r >= 0);  // GPUs store only to registered regions
  const bool pull = h->op == net::Op::PullRead;
  const int pivot = pull                              ? static_cast<int>(h->src)
                    : h->src == net::kNoEndpoint ? mcr_->result_pivot(r, h->addr)
                                                 : mcr_->home_gpu(r, h->addr);
  if (pull) {
    const int o = pull_port(h->src, h->addr);
    TablePort& out = port_of(o);
    const int job = tenant(h->addr);
    const int e = out.table.alloc(h->addr, h->src, static_cast<uint16_t>(mcr_->subtree_targets(r, pivot)),
                                  sim_now().value(), job);
    if (e >= 0) {
      ReductionTable::Entry& en = out.table.entry(e);
      en.bytes = h->payload_bytes;
      en.dtype = h->dtype;
      en.redop = h->redop;
      INCSIM_LOG(out.table.log, Debug, "allocate {:#x} for pull by gpu {}, {} responses expected, {} of {} entries used",
                 h->addr, h->src, en.expected, out.table.size(), out.table.capacity());
    } else if (input < ports_ && wiring_.port_endpoint[input] == static_cast<int32_t>(h->src)) {
      ++out.table.stalls;
      if (auto* c = counters_of(job)) ++c->stalls;
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
  const sc_time ready = std::max(h->t_head + cfg_.latency, head_ready(input));
  uint16_t pending = 0;
  for (auto f = mcr_->fanout_begin(r, pivot); f != mcr_->fanout_end(r, pivot); ++f) {
    // Not back up the tree edge it came by; to GPUs, all but an excluded source.
    if (f->endpoint < 0 ? f->port == input : static_cast<uint32_t>(f->endpoint) == excluded) continue;
    // A copy for a GPU may take any link of the trunk to it; a tree edge stays (the tree is the routes').
    const int o = f->endpoint >= 0 && cfg_.spread != Spread::Destination ? spread(h, static_cast<uint32_t>(f->endpoint))
                                                                         : f->port;
    request_output(o, input, h->vc, ready);
    ++pending;
  }
  h->mc_pending = pending;
  INCSIM_LOG(log_, Debug, "multicast {:#x} from port {} replicates to {} ports", h->addr, input, pending);
  if (pending == 0) pool_.put(pop_head(input, h->vc, sim_now()));  // nothing beyond here needs it
}

// Every ReduceWrite toward one block takes the same link at every holding
// switch (the fabric manager's tree); where the tree's branches meet, the
// port's table reduces them, except the partial that table itself emits.
int16_t NvSwitch::reduce_route(net::Packet* p, int input) {
  if (!tables_.holds || !mcr_) return CreditSwitch::reduce_route(p, input);
  p->merge = input < ports_ && mcr_->merge_count(mcr_->region_of(p->addr), p->addr) > 0;
  return toward_switch(p->home_switch, static_cast<uint32_t>(p->home_port));
}

// A push write at its home port goes into the table, which never stalls
// (Klenk's evicts); one that holds keeps a write that would need a new
// entry while it is full (or its job holds its share), until one frees;
// the first refusal is its job's stall.
bool NvSwitch::can_absorb(int o, const net::Packet* h) {
  TablePort& port = port_of(o);
  const int job = tenant(h->addr);
  if (!tables_.holds || port.table.room(job) || port.table.find(h->addr, net::kNoEndpoint) >= 0) return true;
  if (auto* c = counters_of(job); c && std::find(port.waiting.begin(), port.waiting.end(), h->id) == port.waiting.end()) {
    ++c->stalls;
    port.waiting.push_back(h->id);
  }
  return false;
}

net::Packet* NvSwitch::pass_response(int o, net::Packet* p) {
  return port_of(o).table.capacity() ? pull_reduce(o, p) : p;
}

// Push (Klenk §IV-C, Fig. 4): the table behaves as a fully associative cache.
// A hit reduces; a miss takes a free entry or, on a full table, evicts the
// least recently used one to its home GPU (or, under the timeout policy,
// sends the packet itself on as a partial). The entry completes when its
// count reaches the group size, and the result is multicast to the group.
void NvSwitch::absorb(int o, net::Packet* p, const sc_time& now) {
  ReductionTable& t = port_of(o).table;
  const uint64_t now_ps = now.value();
  sc_time at = std::max(now, p->t_tail);  // what it makes leaves once its last flit is in
  if (tables_.alu_ps_per_byte > 0) {  // and once the ALU has added it, in turn
    sc_time& alu = port_of(o).alu_free;
    alu = std::max(at, alu) + rounded_ps(p->payload_bytes * tables_.alu_ps_per_byte);
    at = alu;
  }
  if (!port_of(o).waiting.empty()) {  // it waited for an entry (can_absorb)
    auto& w = port_of(o).waiting;
    w.erase(std::remove(w.begin(), w.end(), p->id), w.end());
  }
  int e = t.find(p->addr, net::kNoEndpoint);
  if (e >= 0) {
    ++t.hits;
    ReductionTable::Entry& en = t.entry(e);
    port_of(o).table.alu.reduce(static_cast<elements::DType>(en.dtype), static_cast<elements::RedOp>(en.redop),
                            t.data(e), p->data, en.bytes);
    en.count = static_cast<uint16_t>(en.count + p->count);
    t.touch(e, now_ps);
    INCSIM_LOG(port_of(o).table.log, Debug, "hit {:#x}: {} of {} contributions", p->addr, en.count, en.expected);
  } else {
    ++t.misses;
    const int job = tenant(p->addr);
    TableSharing::Counters* mine = counters_of(job);
    if (mine) ++mine->misses;
    // The victim, by the eviction policy (Klenk §IV-C: LRU): of the job's own
    // entries if it holds its share (TableSharing), else of the full table;
    // pull entries wait for responses and are never evicted.
    static_assert(EvictionPolicy::kPushOwner == net::kNoEndpoint, "push entries are owned by no endpoint");
    const bool room = t.room(job);
    sc_assert(!(tables_.holds && !room));  // crossbar_move held it
    const int victim = evict_for(*tables_.eviction, t, job);
    sc_assert(victim < 0 || t.entry(victim).owner == net::kNoEndpoint);
    if (!room && victim < 0) {
      ++t.evictions;
      if (mine) ++mine->evictions_suffered;
      INCSIM_LOG(port_of(o).table.log, Debug, "full: push {:#x} goes on as a partial to gpu {}", p->addr,
                 mcr_->home_gpu(mcr_->region_of(p->addr), p->addr));
      p->op = net::Op::Partial;
      p->dst = static_cast<uint32_t>(mcr_->home_gpu(mcr_->region_of(p->addr), p->addr));
      inject(o, p, at, false);
      return;
    }
    if (victim >= 0) {
      if (mine) ++mine->evictions_caused;
      if (auto* theirs = counters_of(t.entry(victim).job)) ++theirs->evictions_suffered;
      emit(o, victim, false, at, false);
    }
    const int r = mcr_->region_of(p->addr);
    const int expected = p->home_switch == wiring_.index ? static_cast<int>(mcr_->region(r).targets.size())
                                                         : mcr_->merge_count(r, p->addr);
    e = t.alloc(p->addr, net::kNoEndpoint, static_cast<uint16_t>(expected), now_ps, job);
    ++port_of(o).table.push_entries;
    ReductionTable::Entry& en = t.entry(e);
    en.bytes = p->payload_bytes;
    en.dtype = p->dtype;
    en.redop = p->redop;
    en.count = p->count;
    INCSIM_LOG(port_of(o).table.log, Debug, "miss {:#x}: allocate, {} of {} contributions, {} of {} entries used", p->addr,
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
  ReductionTable& t = port_of(o).table;
  const int e = t.find(p->addr, p->dst);
  if (e < 0) {
    ++t.misses;
    if (auto* c = counters_of(tenant(p->addr))) ++c->misses;
    INCSIM_LOG(port_of(o).table.log, Debug, "miss: response {:#x} for gpu {} bypasses", p->addr, p->dst);
    return p;
  }
  ++t.hits;
  INCSIM_LOG(port_of(o).table.log, Debug, "hit: response {:#x} for gpu {}", p->addr, p->dst);
  ReductionTable::Entry& en = t.entry(e);
  if (en.count == 0) std::memcpy(t.data(e), p->data, en.bytes);
  else
    port_of(o).table.alu.reduce(static_cast<elements::DType>(en.dtype), static_cast<elements::RedOp>(en.redop),
                            t.data(e), p->data, en.bytes);
  en.count = static_cast<uint16_t>(en.count + p->count);
  if (en.count < en.expected) {
    pool_.put(p);
    return nullptr;
  }
  std::memcpy(p->data, t.data(e), en.bytes);
  p->count = en.count;
  ++t.completions;
  INCSIM_LOG(port_of(o).table.log, Debug, "complete {:#x}: {} contributions go to gpu {}", p->addr, en.count, p->dst);
  release_entry(o, e, true);
  return p;
}

void NvSwitch::emit(int o, int e, bool complete, const sc_time& now, bool retry) {
  ReductionTable& t = port_of(o).table;
  const ReductionTable::Entry& en = t.entry(e);
  net::Packet* p = pool_.get(en.bytes);  // a block: on InfiniBand a small packet
  p->addr = en.addr;
  p->src = net::kNoEndpoint;
  p->vc = net::kRequestVc;
  p->payload_bytes = en.bytes;
  p->count = en.count;
  p->dtype = en.dtype;
  p->redop = en.redop;
  std::memcpy(p->data, t.data(e), en.bytes);
  const int r = mcr_->region_of(en.addr);
  const topo::MulticastFabric::HomePort home = mcr_->home_port(r, en.addr);
  if (complete && home.sw != wiring_.index) {
    ++t.completions;
    p->op = net::Op::ReduceWrite;  // the merged contributions go on toward the home port
    p->dst = 0;
    p->home_switch = home.sw;
    p->home_port = static_cast<int16_t>(home.port);
    INCSIM_LOG(port_of(o).table.log, Debug, "merge {:#x}: {} contributions go on to switch {} port {}", en.addr,
               en.count, home.sw, home.port);
  } else if (complete) {
    ++t.completions;
    p->op = net::Op::Write;  // a multicast write of the final result
    p->dst = 0;
    INCSIM_LOG(port_of(o).table.log, Debug, "complete {:#x}: {} contributions, result multicast", en.addr, en.count);
  } else {
    ++t.evictions;
    if (retry) ++t.timeouts;
    p->op = net::Op::Partial;
    p->dst = static_cast<uint32_t>(mcr_->home_gpu(r, en.addr));
    INCSIM_LOG(port_of(o).table.log, Debug, "evict {:#x} ({}): {} of {} contributions go to gpu {}", en.addr,
               retry ? "timeout" : "lru", en.count, en.expected, p->dst);
  }
  p->wire_bytes = pool_.format().wire_bytes(p->op, p->payload_bytes);
  release_entry(o, e, retry);
  inject(o, p, now, true);
}

void NvSwitch::release_entry(int o, int e, bool retry) {
  TablePort& out = port_of(o);
  if (out.table.entry(e).owner == net::kNoEndpoint) --out.table.push_entries;
  out.table.release(e);
  if (retry) retry_stalled(o);
}

// Pull requests stalled at port o retry now that an entry is free.
void NvSwitch::retry_stalled(int o) {
  std::vector<int> waiting;
  waiting.swap(port_of(o).table.stalled);
  for (int i : waiting) request(input_queue(i, net::kRequestVc).front(), i);
}

// Push entries idle for the timeout go to their home GPU (Klenk §IV-C:
// after an eviction a count alone cannot tell that an entry is final).
void NvSwitch::tick(int o, const sc_time& now, sc_time& next) {
  ReductionTable& t = port_of(o).table;
  const uint64_t timeout = tables_.table_timeout.value();
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
  CreditSwitch::trace(tf);
}

void NvSwitch::TablePort::trace(sc_core::sc_trace_file* tf) const {
  Port::trace(tf);
  table.trace(tf);
}

uint64_t NvSwitch::TablePort::report_held(std::ostream& os) const {
  const uint64_t total = Port::report_held(os);
  table.report(os);
  return total;
}

uint64_t NvSwitch::progress() const {
  uint64_t n = 0;
  for (int p = 0; p < ports_; ++p) n += port_of(p).table.completions;
  return n;
}

}  // namespace incsim::nvswitch
