#include "gpu.h"

#include <algorithm>
#include "core/process.h"
#include "gpu/compute_engine.h"
#include "gpu/cores.h"
#include "gpu/copy_engine.h"

namespace incsim::gpu {

using sc_core::sc_time;
namespace {
// Timer entries are program timers, flag observations (address), stream
// activations (port << 32 | stream id), or the copy engine's.
constexpr uint64_t kFlagTag = 1ull << 63;
constexpr uint64_t kActivateTag = 1ull << 62;
constexpr uint64_t kEngineTag = 1ull << 61;
constexpr uint64_t kTagMask = ~(kFlagTag | kActivateTag | kEngineTag);
// Operations the memory system answers (and whose answers it holds).
bool answered(const net::Packet* p) {
  return (p->op == net::Op::Write && !net::is_multicast(p->addr)) || p->op == net::Op::Read || p->op == net::Op::PullRead;
}
// Multicast writes, partials, posted writes and NIC messages are posted: the
// program takes them.
bool message(const net::Packet* p) { return p->op == net::Op::ReduceMsg || p->op == net::Op::GatherMsg; }
bool posted(const net::Packet* p) {
  return p->op == net::Op::Partial || p->op == net::Op::PostedWrite ||
         (p->op == net::Op::Write && net::is_multicast(p->addr)) || message(p);
}
}  // namespace

void EventHandler::read_region(uint64_t, uint32_t, uint8_t*) {
  SC_REPORT_ERROR("incsim/gpu", "a pull request reached a GPU whose program registered no multicast region");
}
void EventHandler::on_region_write(const net::Packet&) {
  SC_REPORT_ERROR("incsim/gpu", "a multicast write reached a GPU whose program registered no multicast region");
}
void EventHandler::on_message(const net::Packet&) {
  SC_REPORT_ERROR("incsim/gpu", "a NIC message reached a GPU whose program runs no schedule table");
}

Gpu::Gpu(sc_core::sc_module_name name, int index, int ports, const GpuConfig& cfg, net::PacketPool& pool,
         const Attach& attach)
    : sc_module(name),
      index_(index),
      cfg_(cfg),
      pool_(pool),
      memory_(cfg.clock_ghz, cfg.mem_latency_cycles, cfg.mem_jitter_cycles, cfg.seed * 0x9E3779B97F4A7C15ull + index),
      log_(this->name()) {
  for (int p = 0; p < ports; ++p) {
    ports_.push_back(std::make_unique<Port>(("out" + std::to_string(p)).c_str()));
    ports_[p]->rx_port = std::make_unique<net::InPort>(("in" + std::to_string(p)).c_str(), this, p);
    spawn_method(("tx" + std::to_string(p)).c_str(), [this, p] { tx_process(p); }, ports_[p]->wake);
  }
  spawn_method("rx", [this] { rx_process(); }, rx_wake_);
  spawn_method("timers", [this] { timer_process(); }, timer_wake_);
  cores_ = std::make_unique<Cores>("cores", basename());
  copy_engine_ = std::make_unique<CopyEngine>("copy_engine", *this);
  compute_ = std::make_unique<ComputeEngine>("compute");
  if (attach) attached_ = attach(*this);
}

Gpu::~Gpu() = default;

// Packets received and kernel time computed: a long kernel is progress.
uint64_t Gpu::progress() const { return packets_received_ + compute_->progress(); }

void Gpu::configure_port(int p, double bw, sc_time latency, uint32_t peer_buffer_bytes) {
  ports_[p]->link.configure(bw, latency, peer_buffer_bytes, &ports_[p]->wake);
}

uint32_t Gpu::add_stream(TxStream* s) {
  if (free_ids_.empty()) {
    s->id = static_cast<uint32_t>(streams_.size());
    streams_.push_back(s);
  } else {
    s->id = free_ids_.back();
    free_ids_.pop_back();
    streams_[s->id] = s;
  }
  return s->id;
}

void Gpu::remove_stream(TxStream* s) {
  sc_assert(s->id < streams_.size() && streams_[s->id] == s);
  for (auto& p : ports_) {
    auto& a = p->active;
    a.erase(std::remove(a.begin(), a.end(), s), a.end());
  }
  const uint64_t id = s->id;
  drop_timers([id](const Timed& t) { return (t.value & kActivateTag) && (t.value & 0xffffffffu) == id; });
  streams_[id] = nullptr;
  free_ids_.push_back(s->id);
  s->port = -1;
}

template <class Pred>
void Gpu::drop_timers(Pred drop) {
  const size_t before = timers_.size();
  std::vector<Timed> keep;
  keep.reserve(before);
  for (; !timers_.empty(); timers_.pop())
    if (!drop(timers_.top())) keep.push_back(timers_.top());
  for (const Timed& t : keep) timers_.push(t);
  if (keep.size() == before) return;
  // No wake for a dropped timer stays pending: a later collective's events
  // would otherwise interleave with it and their order depend on this one.
  timer_wake_.cancel();
  if (!timers_.empty()) timer_wake_.at(timers_.top().at);
}

void Gpu::attach(EventHandler& p) {
  sc_assert(std::find(programs_.begin(), programs_.end(), &p) == programs_.end());
  programs_.push_back(&p);
}

void Gpu::detach(EventHandler& p) {
  programs_.erase(std::remove(programs_.begin(), programs_.end(), &p), programs_.end());
  drop_timers([&p](const Timed& t) { return t.owner == &p; });
  const auto mine = [&p](const Range& r) { return r.p == &p; };
  watches_.erase(std::remove_if(watches_.begin(), watches_.end(), mine), watches_.end());
  regions_.erase(std::remove_if(regions_.begin(), regions_.end(), mine), regions_.end());
  if (messages_ == &p) messages_ = nullptr;
}

void Gpu::activate(int port, TxStream* s, const sc_time& delay) {
  // A stream sends on one port at a time. A program's queue whose next
  // transfer goes to a peer behind another port leaves the port of its last
  // one, which need not have found it empty yet (LL and LL128 start the next
  // transfer as soon as the last is issued, with no fence between).
  if (s->port >= 0 && s->port != port) {
    Port& pt = *ports_[s->port];
    for (size_t i = 0; i < pt.active.size();) {
      if (pt.active[i] != s) {
        ++i;
        continue;
      }
      pt.active.erase(pt.active.begin() + static_cast<std::ptrdiff_t>(i));
      if (i < pt.stream_rr) --pt.stream_rr;
    }
  }
  s->port = port;
  push_timer(sim_now() + delay, kActivateTag | static_cast<uint64_t>(port) << 32 | s->id, nullptr);
}

sc_time Gpu::first_read(int port, uint64_t stream) const {
  return memory_.latency(static_cast<uint64_t>(index_), static_cast<uint64_t>(port) ^ stream << 8,
                         sim_now());
}

void Gpu::store_word(int port, uint32_t dst, uint64_t addr, uint64_t value, uint32_t ack_to) {
  net::Packet* p = pool_.get();
  p->src = static_cast<uint32_t>(index_);
  p->dst = dst;
  p->addr = addr;
  p->op = net::Op::Write;
  p->vc = net::kRequestVc;
  p->stream = ack_to;
  p->payload_bytes = sizeof(value);
  p->wire_bytes = pool_.format().wire_bytes(sizeof(value));
  std::memcpy(p->data, &value, sizeof(value));
  ports_[port]->control.push(p);
  ports_[port]->wake.after(sc_core::SC_ZERO_TIME);
}

void Gpu::post(int port, net::Packet* p) {
  p->src = static_cast<uint32_t>(index_);
  p->vc = net::kRequestVc;
  p->wire_bytes = pool_.format().wire_bytes(p->op, p->payload_bytes);
  ports_[port]->control.push(p);
  ports_[port]->wake.after(sc_core::SC_ZERO_TIME);
}

void Gpu::watch(EventHandler& p, uint64_t addr, uint64_t bytes) { watches_.push_back({addr, addr + bytes, &p}); }

void Gpu::serve_region(EventHandler& p, uint64_t lo, uint64_t hi) { regions_.push_back({lo, hi, &p}); }

EventHandler* Gpu::region_program(uint64_t addr) const {
  for (const Range& r : regions_)
    if (addr >= r.lo && addr < r.hi) return r.p;
  return nullptr;
}

void Gpu::push_timer(const sc_time& at, uint64_t value, EventHandler* owner) {
  timers_.push({at, seq_++, value, owner});
  timer_wake_.after(at - sim_now());
}

void Gpu::call_after(EventHandler& p, const sc_time& delay, uint64_t tag) {
  push_timer(sim_now() + delay, tag, &p);
}

void Gpu::call_engine_after(const sc_time& delay, uint64_t tag) {
  push_timer(sim_now() + delay, kEngineTag | tag, nullptr);
}

void Gpu::cancel_engine_timers() {
  drop_timers([](const Timed& t) { return (t.value & kEngineTag) != 0; });
}

void Gpu::timer_process() {
  timer_wake_.fired();
  const sc_time now = sim_now();
  while (!timers_.empty() && timers_.top().at <= now) {
    const uint64_t v = timers_.top().value;
    EventHandler* owner = timers_.top().owner;
    timers_.pop();
    if (v & kActivateTag) {
      Port& pt = *ports_[(v & kTagMask) >> 32];
      pt.active.push_back(streams_[v & 0xffffffffu]);
      pt.wake.after(sc_core::SC_ZERO_TIME);
    } else if (v & kEngineTag) {
      copy_engine_->on_timer(v & kTagMask);
    } else if (v & kFlagTag) {
      owner->on_flag(v & kTagMask);
    } else {
      owner->on_timer(v);
    }
  }
  if (!timers_.empty()) timer_wake_.after(timers_.top().at - now);
}

void Gpu::receive(int port, net::Packet* p) {
  Port& pt = *ports_[port];
  const sc_time now = sim_now();
  INCSIM_LOG(log_, Trace, "port {} receives {} {:#x} from {}, {} B, last flit at {}", port, net::op_name(p->op), p->addr,
             p->src, p->payload_bytes, p->t_tail.to_string());
  ++packets_received_;
  latency_sum_ += (p->t_tail - p->t_inject).value();
  sc_assert(p->vc == net::class_first_vc(p->vc));  // rx_process serves only these
  const bool request = answered(p);
  if (request && pt.rx[p->vc].empty() && pt.responses.size() < cfg_.max_responses) {
    // The memory system takes the request when its last flit is in. Its
    // effects are all timed from then (credit, response, flag visibility);
    // only the store itself is applied now, which nothing can observe: a
    // reader waits for a flag written after this store was acknowledged.
    // This saves one process activation per request.
    pt.rx_port->release(p, p->t_tail - now);
    serve_request(pt, p, p->t_tail);
    return;
  }
  pt.rx_bytes[p->vc] += p->wire_bytes;
  sc_assert(pt.rx_bytes[p->vc] <= cfg_.rx_buffer_bytes);
  pt.rx[p->vc].push(p);
  if (pt.rx[p->vc].front() == p) rx_wake_.after(p->t_tail - now);
}

// A write is stored, a read is answered, and the packet turns into its own
// response, which leaves one memory latency after `at` (when the request's
// last flit is in).
void Gpu::serve_request(Port& pt, net::Packet* p, const sc_time& at) {
  const sc_time now = sim_now();
  const sc_time lat = memory_.latency(p->src, p->addr, at);
  if (p->op == net::Op::Write) {
    std::memcpy(memory_.at(p->addr, p->payload_bytes), p->data, p->payload_bytes);
    for (const Range& w : watches_)
      if (p->addr >= w.lo && p->addr < w.hi) {
        // The write is performed after `lat`; a polling load sees it one load later.
        push_timer(at + lat + memory_.latency(p->src, p->addr, at + lat), p->addr | kFlagTag, w.p);
        break;
      }
    p->op = net::Op::WriteAck;
    p->payload_bytes = 0;
  } else if (p->op == net::Op::PullRead) {
    EventHandler* owner = region_program(p->addr);
    if (!owner) SC_REPORT_FATAL("incsim/gpu", "a pull request reached a GPU with no program serving its multicast region");
    owner->read_region(p->addr, p->payload_bytes, p->data);
    p->dst = static_cast<uint32_t>(index_);  // it was multicast: the response comes from here
    p->op = net::Op::PullResp;
    p->count = 1;
  } else {
    std::memcpy(p->data, memory_.at(p->addr, p->payload_bytes), p->payload_bytes);
    p->op = net::Op::ReadResp;
  }
  std::swap(p->src, p->dst);
  p->vc = net::kResponseVc;
  p->wire_bytes = pool_.format().wire_bytes(p->op, p->payload_bytes);
  pt.responses.push({at + lat, seq_++, reinterpret_cast<uint64_t>(p)});
  pt.wake.after(at + lat - now);
}

void Gpu::rx_process() {
  rx_wake_.fired();
  const sc_time now = sim_now();
  rx_blocked_ = false;
  sc_time next = sim_never();
  for (auto& ptr : ports_) {
    Port& pt = *ptr;
    // One queue per class, so a request held back never blocks a response.
    // Packets reach a GPU on their class's first VC (the last hop resets it).
    for (const int vc : {int{net::kRequestVc}, int{net::kResponseVc}}) {
      net::PacketFifo& rx = pt.rx[vc];
      while (!rx.empty() && rx.front()->t_tail <= now) {
        net::Packet* p = rx.front();
        const bool request = answered(p);
        // A full memory pipeline holds requests in the buffer, withholding
        // credits; the port wakes us when a response leaves.
        if (request && pt.responses.size() >= cfg_.max_responses) {
          rx_blocked_ = true;
          break;
        }
        rx.pop();
        pt.rx_bytes[p->vc] -= p->wire_bytes;
        pt.rx_port->release(p, sc_core::SC_ZERO_TIME);
        if (request) {
          serve_request(pt, p, now);
          continue;
        }
        if (!posted(p)) streams_[p->stream]->on_response(p);
        else if (message(p) && messages_) messages_->on_message(*p);
        else if (EventHandler* owner = message(p) ? nullptr : region_program(p->addr)) owner->on_region_write(*p);
        else SC_REPORT_ERROR("incsim/gpu", "a posted, multicast or NIC message write reached a GPU with no program for it");
        pool_.put(p);
      }
      if (!rx.empty() && rx.front()->t_tail > now) next = std::min(next, rx.front()->t_tail);
    }
  }
  if (next != sim_never()) rx_wake_.after(next - now);
}

// Whether the port's next pick stays with w's stream: toward an adapter,
// until its NIC has read a packet of it (the MTU, or the message's last
// write; writes of no message, flags and the copy engine's, leave alone).
bool Gpu::keep_reading(Port& pt, const net::Packet& w) {
  if (pt.packet_reads == 0) return false;
  if (pt.read_stream != w.stream) pt.read_bytes = 0;
  pt.read_stream = w.stream;
  pt.read_bytes += w.payload_bytes;
  if (w.more && !w.last && net::lines_wire_payload(w.lines, pt.read_bytes) < pt.packet_reads) return true;
  pt.read_stream = ~0u;
  return false;
}

// Request VC: flag stores first (rare and on the critical path), then the
// active streams in turn. Response VC: acks and read data whose memory
// latency has passed. The two classes alternate. The port picks up to one packet
// ahead of the one on the wire (OutPort::can_pick).
void Gpu::tx_process(int port) {
  Port& pt = *ports_[port];
  pt.wake.fired();
  const sc_time now = sim_now();
  pt.link.absorb_credits(now);
  while (pt.link.can_pick(now)) {
    const sc_time start = pt.link.next_start(now);
    net::Packet* chosen = nullptr;
    // The two message classes in turn, each on its first VC (the network's
    // switches move packets to a class's second VC where a route needs it).
    for (int k = 0; k < 2 && !chosen; ++k) {
      const int cls = static_cast<int>((pt.vc_rr + k) % 2);
      const int vc = cls == 0 ? net::kRequestVc : net::kResponseVc;
      if (vc == net::kResponseVc) {
        if (pt.responses.empty() || pt.responses.top().at > start) continue;
        auto* p = reinterpret_cast<net::Packet*>(pt.responses.top().value);
        const int on = inject_vc(pt, vc, p->wire_bytes);
        if (on < 0) continue;
        p->vc = static_cast<uint8_t>(on);
        pt.responses.pop();
        if (rx_blocked_) rx_wake_.after(sc_core::SC_ZERO_TIME);  // a request waits for room
        chosen = p;
      } else if (!pt.control.empty()) {
        const int on = inject_vc(pt, vc, pt.control.front()->wire_bytes);
        if (on < 0) continue;
        chosen = pt.control.pop();
        chosen->vc = static_cast<uint8_t>(on);
      } else {
        // Active streams in turn; a stream with nothing more leaves the list.
        for (size_t tries = 0; tries < pt.active.size() && !chosen;) {
          if (pt.stream_rr >= pt.active.size()) pt.stream_rr = 0;
          TxStream* s = pt.active[pt.stream_rr];
          const uint32_t bytes = s->next_wire_bytes(pool_.format());
          if (bytes == 0) {
            pt.active.erase(pt.active.begin() + pt.stream_rr);
            continue;
          }
          ++tries;
          const int on = inject_vc(pt, vc, bytes);
          if (on < 0) break;
          chosen = pool_.get();
          chosen->src = static_cast<uint32_t>(index_);
          chosen->stream = s->id;
          chosen->vc = static_cast<uint8_t>(on);
          s->fill(chosen);
          chosen->wire_bytes = static_cast<uint16_t>(bytes);  // the stream's framing (a sub-packet may lack a head flit)
          if (!keep_reading(pt, *chosen)) ++pt.stream_rr;
        }
      }
      if (chosen) pt.vc_rr = cls + 1;
    }
    if (!chosen) {
      const bool pending = !pt.control.empty() || !pt.active.empty() || !pt.responses.empty();
      if (pending && start == now) pt.link.wait_for_credit(now);  // a pick ahead retries when the wire frees
      break;
    }
    chosen->t_inject = start;
    INCSIM_LOG(log_, Trace, "port {} sends {} {:#x} to {}, {} B, at {}", port, net::op_name(chosen->op), chosen->addr,
               chosen->dst, chosen->payload_bytes, start.to_string());
    pt.link.send(chosen, start, start);
  }
  sc_time next = sim_never();
  const bool pending = !pt.control.empty() || !pt.active.empty() || !pt.responses.empty();
  if (pending && !pt.link.link_free(now)) next = pt.link.busy_until();
  if (!pt.responses.empty() && pt.responses.top().at > now) next = std::min(next, pt.responses.top().at);
  if (next != sim_never()) pt.wake.after(next - now);
}

int Gpu::inject_vc(const Port& pt, int first, uint32_t bytes) const {
  int best = -1;
  for (int k = 0; k < cfg_.inject_vcs; ++k)
    if (const int vc = net::allocated_vc(first, k);
        pt.link.has_credit(vc, bytes) && (best < 0 || pt.link.credits(vc) > pt.link.credits(best)))
      best = vc;
  return best;
}

void Gpu::trace(sc_core::sc_trace_file* tf) const {
  const std::string me = name();
  cores_->trace(tf);
  copy_engine_->trace(tf);
  compute_->trace(tf);
  for (size_t p = 0; p < ports_.size(); ++p) {
    const std::string port = me + ".port" + std::to_string(p);
    const int vcs = cfg_.inject_vcs > 1 ? net::kNumVcs : net::kClassVcs;
    for (int vc = 0; vc < vcs; ++vc)
      sc_core::sc_trace(tf, ports_[p]->rx_bytes[vc], port + ".in_bytes_vc" + std::to_string(vc));
    ports_[p]->link.trace(tf, port, vcs);
  }
}

uint64_t Gpu::report_held(std::ostream& os) const {
  uint64_t total = 0;
  for (size_t p = 0; p < ports_.size(); ++p) {
    const Port& pt = *ports_[p];
    uint64_t arrived = 0;
    for (const auto& rx : pt.rx) arrived += rx.size();
    const uint64_t held = arrived + pt.responses.size() + pt.control.size();
    if (held == 0 && pt.active.empty()) continue;
    os << "  " << name() << " port " << p << ": " << arrived << " packets arrived and not taken, "
       << pt.responses.size() << " responses waiting, " << pt.control.size() << " flag stores waiting, "
       << pt.active.size() << " streams sending\n";
    total += held;
  }
  copy_engine_->report(os);
  compute_->report(os);
  for (EventHandler* p : programs_) p->report(os, std::string("  ") + name());
  return total;
}

}  // namespace incsim::gpu
