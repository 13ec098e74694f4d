#include "nic.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

#include "core/error.h"

namespace incsim::nic {

using collectives::Entry;
using collectives::kNil;
using collectives::Op;

int Layout::flow_at(uint64_t offset) const {
  const auto it = std::upper_bound(starts.begin(), starts.end(), offset);
  return starts_flow[static_cast<size_t>(it - starts.begin()) - 1];
}

// One message (or its share on one port): the DMA engine reads it out of
// memory packet by packet as the port takes them.
struct Table::Stream : gpu::TxStream {
  Table* table;
  int flow;
  net::Op op;
  uint32_t dst;
  uint16_t dst_table;     // the table that takes the message there
  int port;
  int part, parts;        // this stream's share of the message
  uint32_t share;         // its index among the table's (TableView::shares)
  int tree = -1;          // the tree of its flow
  bool from_buffer;       // the flow's buffer, or the node's own input
  int interface = -1;     // first-free: the interface it was given
  mutable bool parked = false;  // it has left the port until its interface's channel is free (Table::held_back)
  bool told = false;  // first-free: whole in its interface's buffer, the decoder told it is sent (Table::tell_buffered)
  uint64_t pos = 0, end = 0;
  bool head = true;       // the next packet opens the message

  uint32_t next_payload(const net::PacketFormat& f) const {
    return static_cast<uint32_t>(std::min<uint64_t>(end - pos, f.max_payload_bytes));
  }
  uint32_t wire_bytes(const net::PacketFormat& f) const {
    const uint32_t n = next_payload(f);
    if (n == 0) return 0;
    // Message-based flow control: only the first sub-packet carries a head
    // flit; the rest are body flits closed by a sub-tail flit, all data.
    if (!head && table->params_.flow_control == FlowControl::Message)
      return (n + f.flit_bytes - 1) / f.flit_bytes * f.flit_bytes;
    return f.wire_bytes(n);
  }
  uint32_t next_wire_bytes(const net::PacketFormat& f) const override {
    const uint32_t w = wire_bytes(f);
    return w != 0 && interface >= 0 && table->held_back(*this) ? 0 : w;
  }
  void fill(net::Packet* p) override {
    Table& t = *table;
    const net::PacketFormat& f = t.nic_.gpu_.pool().format();
    const uint32_t n = next_payload(f);
    const uint32_t wire = interface >= 0 ? wire_bytes(f) : 0;  // its interface's pacing (first-free only)
    const collectives::ByteRange& r = t.layout_->flows[flow];
    p->dst = dst;
    p->addr = pos;
    p->op = op;
    p->table = dst_table;
    p->payload_bytes = static_cast<uint16_t>(n);
    if (from_buffer) std::memcpy(p->data, t.buffers_[t.flows_[flow].buffer].data() + (pos - r.offset), n);
    else t.job_.data->fill(t.job_.dtype, t.job_.rank, pos / t.elem_bytes(), n / t.elem_bytes(), p->data);
    pos += n;
    head = false;
    if (t.params_.dataflow) t.port_tree_[port] = tree;
    if (interface >= 0) t.sent(*this, n, wire);
    if (pos != end) return;
    // Its last byte has left: the decoder hears of it now, or (first-free)
    // was told once the stream was whole in its interface's buffer, at the
    // latest with one packet left; its flow's buffer is read no more.
    if (interface < 0) return t.decoder_.sent(share);
    sc_assert(told);
    t.read_out(share);
  }
  void on_response(net::Packet*) override {
    SC_REPORT_ERROR("incsim/nic", "a NIC message was answered, but messages are posted");
  }
};

Nic::Nic(sc_core::sc_module_name name, gpu::Gpu& gpu) : sc_module(name), gpu_(gpu), log_(this->name()), alu_(log_.name()) {}

Nic::~Nic() = default;

uint16_t Nic::free_table() const {
  for (size_t i = 0; i < tables_.size(); ++i)
    if (!tables_[i]->loaded()) return static_cast<uint16_t>(i);
  if (tables_.size() > UINT16_MAX)
    throw UserError(std::string(name()) + " holds " + std::to_string(tables_.size()) +
                    " schedule tables, as many as a message header can name");
  return static_cast<uint16_t>(tables_.size());
}

int Nic::tables_loaded(int job) const {
  int n = 0;
  for (const auto& t : tables_) n += t->loaded() && t->tenant() == job;
  return n;
}

Table& Nic::load(NicJob job) {
  const uint16_t id = job.table_of[job.rank];
  sc_assert(id <= tables_.size() && (id == tables_.size() || !tables_[id]->loaded()));
  if (id == tables_.size()) tables_.push_back(std::make_unique<Table>(*this, id));
  if (loaded_++ == 0) {
    gpu_.attach(*this);
    gpu_.take_messages(this);
  }
  tables_[id]->load(std::move(job));
  return *tables_[id];
}

void Nic::unload(Table& t) {
  if (!t.loaded()) return;
  t.unload();
  if (--loaded_ == 0) gpu_.detach(*this);
}

// A lockstep timer of a table since unloaded finds it idle; advancing an idle
// or a reloaded table's decoder only checks its conditions again.
void Nic::on_timer(uint64_t tag) {
  if (tag & kResume) return tables_[(tag & ~kResume) >> 32]->resume(static_cast<uint32_t>(tag));
  if (tag & kHeard) return tables_[(tag & ~kHeard) >> 32]->heard(static_cast<uint32_t>(tag));
  Table& t = *tables_[tag];
  if (t.layout_ != nullptr) t.on_timer();
}

void Nic::on_message(const net::Packet& p) { tables_[p.table]->on_message(p); }

void Nic::report(std::ostream& os, const std::string& prefix) const {
  for (const auto& t : tables_)
    if (t->loaded()) t->report(os, prefix);
}

Table::Table(Nic& nic, uint16_t id) : nic_(nic), id_(id), port_tree_(nic.gpu_.num_ports(), -1) {}

Table::~Table() = default;

void Table::unload() {
  remove_streams();
  job_ = {};
  layout_ = nullptr;
  on_done_ = nullptr;
}

void Table::remove_streams() {
  if (!streams_added_) return;
  for (auto& s : streams_) nic_.gpu_.remove_stream(s.get());
  streams_added_ = false;
}

void Table::load(NicJob job) {
  job_ = std::move(job);
  params_ = job_.params;
  const collectives::Schedule& schedule = *job_.schedule;
  const int rank = job_.rank;
  flows_.assign(schedule.flows.size(), FlowState{});
  streams_.clear();
  buffers_.clear();
  free_buffers_.clear();
  owner_ = -1;
  // What each flow asks of this node, and a stream per message and port.
  view_ = collectives::table_view(schedule, rank, job_.ports_to, job_.tree_ports);
  if (schedule.broadcast_root != kNil) owner_ = schedule.broadcast_root;  // its results are its input
  for (uint32_t k = 0; k < view_.shares.size(); ++k) {
    const collectives::TableView::Share& x = view_.shares[k];
    FlowState& f = flows_[x.flow];
    auto s = std::make_unique<Stream>();
    s->table = this;
    s->flow = x.flow;
    s->op = x.reduce ? net::Op::ReduceMsg : net::Op::GatherMsg;
    s->dst = job_.endpoint_of[x.dst];
    s->dst_table = job_.table_of[x.dst];
    s->port = x.port;
    s->part = x.part;
    s->parts = x.parts;
    s->share = k;
    s->from_buffer = !x.reduce || view_.flows[x.flow].reduce_children > 0;
    s->tree = x.tree;
    (x.reduce ? f.reduce_readers : f.gather_readers) += s->from_buffer;
    streams_.push_back(std::move(s));
  }
}

void Table::start(const Layout& layout, const NicParams& params, std::function<void()> on_done) {
  layout_ = &layout;
  params_ = params;
  on_done_ = std::move(on_done);
  remove_streams();  // none stays active from the last size
  for (size_t f = 0; f < flows_.size(); ++f) release(static_cast<int>(f));
  for (auto& s : streams_) {
    // Parts end on element boundaries.
    const collectives::ByteRange& r = layout.flows[s->flow];
    const uint64_t elems = r.length / elem_bytes();
    s->pos = r.offset + elems * s->part / s->parts * elem_bytes();
    s->end = r.offset + elems * (s->part + 1) / s->parts * elem_bytes();
    s->head = true;
    s->interface = -1;
    s->parked = false;
    s->told = false;
    nic_.gpu_.add_stream(s.get());
  }
  interfaces_.assign(params_.interfaces.first_free ? static_cast<size_t>(job_.interfaces) : 0, {});
  unassigned_.clear();
  streams_added_ = true;
  lockstep_cycles_ = 0;
  lockstep_end_ = sim_now();
  messages_sent_ = 0;
  wrong_ = checked_ = 0;
  expect_checked_ = 0;
  if (job_.rank != owner_)
    for (const auto& r : layout.flows) expect_checked_ += r.length / elem_bytes();
  std::fill(port_tree_.begin(), port_tree_.end(), -1);
  decoder_.start(table(), view_, layout.flows, params_.dataflow, *this);
  decoder_.advance();
}

void Table::issued(const Entry& e, int index) {
  INCSIM_LOG(nic_.log_, Debug, "issue entry {}: {} flow {} step {}, {} slices from {}", index, collectives::op_name(e.op),
             e.flow, e.step, e.size, e.start);
  if (e.sends()) messages_sent_ += e.op == Op::Reduce ? 1 : e.children.size();
}

void Table::lockstep() {
  lockstep_end_ = sim_now() + params_.step_time;
  lockstep_cycles_ = static_cast<int>(params_.step_cycles);
  nic_.gpu_.call_after(nic_, params_.step_time, id_);
}

void Table::holds(uint32_t k) {
  const Stream& s = *streams_[k];
  if (s.from_buffer) hold(s.flow, s.op == net::Op::ReduceMsg || view_.flows[s.flow].root);
}

bool Table::empty(uint32_t k) const { return streams_[k]->pos == streams_[k]->end; }

void Table::activate(uint32_t k) {
  if (interfaces_.empty()) return send(k);
  unassigned_.push_back(k);
  assign_interfaces();
}

// The port drops a stream whose interface's channel is still busy; the
// resume its last packet set (sent) brings it back once the channel is free.
bool Table::held_back(const Stream& s) const {
  if (interfaces_[static_cast<size_t>(s.interface)].ready <= sim_now()) return false;
  s.parked = true;
  return true;
}

void Table::resume(uint32_t k) {
  if (k >= streams_.size() || !streams_[k]->parked) return;  // still on the port, or another size's
  Stream& s = *streams_[k];
  s.parked = false;
  nic_.gpu_.activate(s.port, &s, sc_core::SC_ZERO_TIME);
}

void Table::send(uint32_t k) {
  // The DMA engine's first read returns one memory latency later; its
  // offset and destination tell the stream apart from others on the port.
  // A first-free interface's next stream starts once its channel is free.
  Stream& s = *streams_[k];
  sc_core::sc_time delay = nic_.gpu_.first_read(s.port, s.pos ^ static_cast<uint64_t>(s.dst) << 48);
  if (s.interface >= 0) {
    const sc_core::sc_time ready = interfaces_[static_cast<size_t>(s.interface)].ready;
    if (ready > sim_now()) delay = std::max(delay, ready - sim_now());
  }
  nic_.gpu_.activate(s.port, &s, delay);
}

// An interface is free once the messages it holds fit its buffer (the
// authors' NI takes its next flow once the last one's last message is in,
// which takes a cycle at least: messages issued at once go to different NIs).
void Table::assign_interfaces() {
  while (!unassigned_.empty()) {
    const auto free = std::find_if(interfaces_.begin(), interfaces_.end(), [&](const Interface& i) {
      return i.backlog <= params_.interfaces.buffer_bytes && i.given != sim_now();
    });
    if (free == interfaces_.end()) return;
    const uint32_t k = unassigned_.front();
    unassigned_.pop_front();
    Stream& s = *streams_[k];
    s.interface = static_cast<int>(free - interfaces_.begin());
    free->backlog += s.end - s.pos;
    free->given = sim_now();
    free->queue.push_back(k);
    if (free->queue.size() == 1) send(k);
    tell_buffered(*free);
  }
}

// The authors' NI is done with a flow once its last message is in the NI's
// buffer, and their schedule's step moves on then (MultiTree §IV-A: the
// timestep counter moves once the all-reduce units are idle, its data
// handed to the NI): the decoder hears that a stream is sent once what is
// queued on its interface up to its end fits the buffer.
void Table::tell_buffered(Interface& i) {
  // Told streams are the queue's first ones: with its last told, all are.
  if (i.queue.empty() || streams_[i.queue.back()]->told) return;
  uint64_t ahead = 0;
  for (size_t q = 0; q < i.queue.size(); ++q) {
    Stream& s = *streams_[i.queue[q]];
    ahead += s.end - s.pos;
    if (ahead > params_.interfaces.buffer_bytes) return;
    if (!s.told && s.pos < s.end) {
      // Heard from a timer: this may run inside the decoder's own issue.
      s.told = true;
      nic_.gpu_.call_after(nic_, sc_core::SC_ZERO_TIME, Nic::kHeard | uint64_t{id_} << 32 | s.share);
    }
  }
}

// The interface's channel carries one network link's rate: its next
// packet waits until this one's wire bytes have gone at that rate.
void Table::sent(Stream& s, uint32_t n, uint32_t wire) {
  Interface& i = interfaces_[static_cast<size_t>(s.interface)];
  i.backlog -= n;
  i.ready = std::max(i.ready, sim_now()) + sc_core::sc_time(wire / job_.interface_GBps, sc_core::SC_NS);
  if (s.pos < s.end) nic_.gpu_.call_after(nic_, i.ready - sim_now(), Nic::kResume | uint64_t{id_} << 32 | s.share);
  if (s.pos == s.end) {
    i.queue.pop_front();
    if (!i.queue.empty()) send(i.queue.front());
  }
  tell_buffered(i);
  if (i.backlog <= params_.interfaces.buffer_bytes) assign_interfaces();
}

void Table::heard(uint32_t k) { decoder_.sent(k); }

// A first-free stream is heard sent before its last byte leaves: its flow's
// buffer is read until then (Stream::fill).
void Table::released(uint32_t k) {
  if (streams_[k]->interface < 0) read_out(k);
}

void Table::read_out(uint32_t k) {
  const Stream& s = *streams_[k];
  if (s.from_buffer && --flows_[s.flow].readers_left == 0) release(s.flow);
}

void Table::on_timer() {
  if (sim_now() >= lockstep_end_) lockstep_cycles_ = 0;
  decoder_.advance();
}

// The endpoint's reduction logic adds a Reduce message into the flow's
// partial sum; a Gather message is the flow's result, kept if this node
// passes it on.
void Table::on_message(const net::Packet& p) {
  const int flow = layout_->flow_at(p.addr);
  FlowState& f = flows_[flow];
  const bool root = view_.flows[flow].root;
  const collectives::ByteRange& r = layout_->flows[flow];
  const uint64_t off = p.addr - r.offset;
  if (p.op == net::Op::ReduceMsg) {
    sc_assert(decoder_.left(flow, true) >= p.payload_bytes);
    nic_.alu_.reduce(job_.dtype, job_.redop, hold(flow, true) + off, p.data, p.payload_bytes);
    const bool all_in = decoder_.arrived(flow, true, p.payload_bytes);
    INCSIM_LOG(nic_.log_, Trace, "flow {}: reduce message from {}, {} B at {:#x}, {} B to go", flow, p.src, p.payload_bytes,
               p.addr, decoder_.left(flow, true));
    if (all_in) {
      INCSIM_LOG(nic_.log_, Debug, "flow {}: every reduce message is in{}", flow, root ? ", the result is complete" : "");
      if (root) {
        check(buffers_[f.buffer].data(), r.offset, r.length);
        if (f.gather_readers == 0) release(flow);
      }
      decoder_.advance();
    }
    return;
  }
  sc_assert(decoder_.left(flow, false) >= p.payload_bytes);
  check(p.data, p.addr, p.payload_bytes);
  if (f.gather_readers > 0) std::memcpy(hold(flow, false) + off, p.data, p.payload_bytes);
  const bool all_in = decoder_.arrived(flow, false, p.payload_bytes);
  INCSIM_LOG(nic_.log_, Trace, "flow {}: gather message from {}, {} B at {:#x}, {} B to go", flow, p.src, p.payload_bytes,
             p.addr, decoder_.left(flow, false));
  if (all_in) {
    INCSIM_LOG(nic_.log_, Debug, "flow {}: the whole result is in", flow);
    decoder_.advance();
  }
}

uint8_t* Table::hold(int flow, bool own_data) {
  FlowState& f = flows_[flow];
  const collectives::ByteRange& r = layout_->flows[flow];
  if (f.buffer < 0) {
    if (free_buffers_.empty()) {
      f.buffer = static_cast<int>(buffers_.size());
      buffers_.emplace_back();
    } else {
      f.buffer = free_buffers_.back();
      free_buffers_.pop_back();
    }
    auto& b = buffers_[f.buffer];
    b.resize(r.length);
    // A partial sum starts as this node's own input; a result as nothing.
    if (own_data) job_.data->fill(job_.dtype, job_.rank, r.offset / elem_bytes(), r.length / elem_bytes(), b.data());
    f.readers_left = own_data && !view_.flows[flow].root ? f.reduce_readers : f.gather_readers;
  }
  return buffers_[f.buffer].data();
}

void Table::release(int flow) {
  FlowState& f = flows_[flow];
  if (f.buffer < 0) return;
  free_buffers_.push_back(f.buffer);
  f.buffer = -1;
}

void Table::check(const uint8_t* bytes, uint64_t offset, uint64_t len) {
  wrong_ += job_.data->mismatches(job_.dtype, job_.redop, bytes, offset / elem_bytes(), len / elem_bytes(), owner_);
  checked_ += len / elem_bytes();
}

// Every element of the result is checked once, where it arrives (or, at a
// flow's root, where its reduction completes): elements checked too few or
// too many times count as wrong too.
uint64_t Table::wrong() const {
  return wrong_ + (checked_ > expect_checked_ ? checked_ - expect_checked_ : expect_checked_ - checked_);
}

void Table::report(std::ostream& os, const std::string& prefix) const {
  if (decoder_.finished()) return;
  const int head = decoder_.head();
  os << prefix << ".nic";
  if (id_ > 0) os << " table " << id_;
  os << ": timestep " << decoder_.timestep() << ", entry " << head << " of " << table().size();
  if (head < static_cast<int>(table().size())) {
    const Entry& e = table()[head];
    os << " (" << collectives::op_name(e.op) << " flow " << e.flow << ", step " << e.step << ")";
  }
  const collectives::TableDecoder::Awaited a = decoder_.awaited();
  os << ", " << decoder_.sending() << " message streams injecting; waits for " << a.reduce << " B of Reduce and "
     << a.gather << " B of Gather messages over " << a.flows << " flows";
  for (size_t i = 0; i < interfaces_.size(); ++i)
    os << (i == 0 ? "; interfaces' messages queued: " : ", ") << interfaces_[i].queue.size();
  if (!interfaces_.empty()) os << ", " << unassigned_.size() << " waiting for one";
  os << "\n";
}

void Table::trace(sc_core::sc_trace_file* tf) const {
  const std::string me = nic_.name() + (id_ > 0 ? ".table" + std::to_string(id_) : std::string());
  sc_core::sc_trace(tf, decoder_.timestep(), me + ".timestep");
  sc_core::sc_trace(tf, lockstep_cycles_, me + ".lockstep");
  sc_core::sc_trace(tf, decoder_.head(), me + ".entry");
  sc_core::sc_trace(tf, decoder_.head_flow(), me + ".flow");
  for (size_t p = 0; p < port_tree_.size() && params_.dataflow; ++p)
    sc_core::sc_trace(tf, port_tree_[p], me + ".port" + std::to_string(p) + "_tree");
}

}  // namespace incsim::nic
