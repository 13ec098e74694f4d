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
  int lane = -1;          // dataflow mode: its (port, destination, tree) lane
  int tree = -1;          // the tree of its flow
  bool from_buffer;       // the flow's buffer, or the node's own input
  uint64_t pos = 0, end = 0;
  bool head = true;       // the next packet opens the message

  uint32_t next_payload(const net::PacketFormat& f) const {
    return static_cast<uint32_t>(std::min<uint64_t>(end - pos, f.max_payload_bytes));
  }
  uint32_t next_wire_bytes(const net::PacketFormat& f) const override {
    const uint32_t n = next_payload(f);
    if (n == 0) return 0;
    // Message-based flow control: only the first sub-packet carries a head
    // flit; the rest are body flits closed by a sub-tail flit, all data.
    if (!head && table->params_.flow_control == FlowControl::Message)
      return (n + f.flit_bytes - 1) / f.flit_bytes * f.flit_bytes;
    return f.wire_bytes(n);
  }
  void fill(net::Packet* p) override {
    Table& t = *table;
    const uint32_t n = next_payload(t.nic_.gpu_.pool().format());
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
    if (pos == end) t.stream_done(*this);
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
  for (auto& streams : entry_streams_)
    for (auto& s : streams) nic_.gpu_.remove_stream(s.get());
  streams_added_ = false;
}

void Table::load(NicJob job) {
  job_ = std::move(job);
  params_ = job_.params;
  const collectives::Schedule& schedule = *job_.schedule;
  const int rank = job_.rank;
  flows_.assign(schedule.flows.size(), FlowState{});
  entry_streams_.clear();
  buffers_.clear();
  free_buffers_.clear();
  lanes_.clear();
  pending_.clear();
  owner_ = -1;
  finished_ = false;
  // What each flow asks of this node, and a stream per message and port.
  const collectives::TableView view = collectives::table_view(schedule, rank, job_.ports_to, job_.tree_ports);
  for (size_t f = 0; f < flows_.size(); ++f) {
    flows_[f].reduce_children = view.flows[f].reduce_children;
    flows_[f].root = view.flows[f].root;
    flows_[f].gathers = view.flows[f].gathers;
  }
  if (schedule.broadcast_root != kNil) owner_ = schedule.broadcast_root;  // its results are its input
  entry_streams_.resize(table().size());
  lanes_.resize(static_cast<size_t>(view.lanes));
  for (size_t i = 0; i < table().size(); ++i)
    for (uint32_t k = view.first_share[i]; k < view.first_share[i + 1]; ++k) {
      const collectives::TableView::Share& x = view.shares[k];
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
      s->from_buffer = !x.reduce || f.reduce_children > 0;
      s->tree = x.tree;
      s->lane = x.lane;
      lanes_[s->lane].queue.reserve(lanes_[s->lane].queue.capacity() + 1);
      (x.reduce ? f.reduce_readers : f.gather_readers) += s->from_buffer;
      entry_streams_[i].push_back(std::move(s));
    }
}

void Table::start(const Layout& layout, const NicParams& params, std::function<void()> on_done) {
  layout_ = &layout;
  params_ = params;
  on_done_ = std::move(on_done);
  remove_streams();  // none stays active from the last size
  for (size_t f = 0; f < flows_.size(); ++f) {
    FlowState& s = flows_[f];
    const uint64_t len = layout.flows[f].length;
    s.reduce_left = s.reduce_children * len;
    s.gather_left = s.gathers ? len : 0;
    release(static_cast<int>(f));
  }
  for (auto& streams : entry_streams_)
    for (auto& s : streams) {
      // Parts end on element boundaries.
      const collectives::ByteRange& r = layout.flows[s->flow];
      const uint64_t elems = r.length / elem_bytes();
      s->pos = r.offset + elems * s->part / s->parts * elem_bytes();
      s->end = r.offset + elems * (s->part + 1) / s->parts * elem_bytes();
      s->head = true;
      nic_.gpu_.add_stream(s.get());
    }
  streams_added_ = true;
  timestep_ = 1;
  lockstep_cycles_ = 0;
  lockstep_end_ = sim_now();
  head_ = 0;
  sending_ = 0;
  finished_ = false;
  messages_sent_ = 0;
  wrong_ = checked_ = 0;
  expect_checked_ = 0;
  if (job_.rank != owner_)
    for (const auto& r : layout.flows) expect_checked_ += r.length / elem_bytes();
  for (Lane& l : lanes_) {
    l.queue.clear();
    l.head = 0;
  }
  pending_.clear();
  std::fill(port_tree_.begin(), port_tree_.end(), -1);
  if (params_.dataflow)
    for (int i = 0; i < static_cast<int>(table().size()); ++i)
      if (table()[i].op != Op::Nop) pending_.push_back(i);
  if (params_.dataflow) head_ = static_cast<int>(table().size() - pending_.size());  // NOPs do not hold anything
  advance();
}

bool Table::ready(const Entry& e) const {
  const FlowState& f = flows_[e.flow == kNil ? 0 : e.flow];
  if (e.op == Op::Reduce && e.parent != kNil) return f.reduce_left == 0;  // children's partial sums are in
  if (e.op == Op::Gather && !e.children.empty()) return f.root ? f.reduce_left == 0 : f.gather_left == 0;
  return true;  // a NOP, or an entry that only records what arrives
}

// The decoder (Fig. 6): issues the head entry when its step is the timestep
// counter's and its dependencies are cleared; moves the timestep counter on
// when the lockstep counter is zero and every issued message has left.
void Table::advance() {
  if (params_.dataflow) {
    advance_dataflow();
    return;
  }
  const sc_core::sc_time now = sim_now();
  while (!finished_ && head_ < static_cast<int>(table().size())) {
    const Entry& e = table()[head_];
    head_flow_ = e.flow;
    if (e.step > timestep_) {
      if (sending_ > 0 || now < lockstep_end_) return;  // stream_done or the lockstep timer calls again
      timestep_ = e.step;
      continue;
    }
    if (!ready(e)) return;  // on_message calls again
    issue(e, static_cast<size_t>(head_));
    ++head_;
  }
  if (head_ == static_cast<int>(table().size())) head_flow_ = kNil;
  maybe_finish();
}

// Dataflow mode: every pending entry whose dependencies are met issues now.
void Table::advance_dataflow() {
  size_t keep = 0;
  for (size_t i = 0; i < pending_.size() && !finished_; ++i) {
    const int index = pending_[i];
    if (ready(table()[index])) {
      head_flow_ = table()[index].flow;
      issue(table()[index], static_cast<size_t>(index));
      ++head_;
    } else {
      pending_[keep++] = index;
    }
  }
  pending_.resize(keep);
  maybe_finish();
}

void Table::activate(Stream& s) {
  // The DMA engine's first read returns one memory latency later; its
  // offset and destination tell the stream apart from others on the port.
  nic_.gpu_.activate(s.port, &s, nic_.gpu_.first_read(s.port, s.pos ^ static_cast<uint64_t>(s.dst) << 48));
}

void Table::issue(const Entry& e, size_t index) {
  INCSIM_LOG(nic_.log_, Debug, "issue entry {}: {} flow {} step {}, {} slices from {}", index, collectives::op_name(e.op),
             e.flow, e.step, e.size, e.start);
  if (e.op == Op::Nop) {
    lockstep_end_ = sim_now() + params_.step_time;
    lockstep_cycles_ = static_cast<int>(params_.step_cycles);
    nic_.gpu_.call_after(nic_, params_.step_time, id_);
    return;
  }
  if (!e.sends()) return;
  messages_sent_ += e.op == Op::Reduce ? 1 : e.children.size();
  for (auto& s : entry_streams_[index]) {
    if (s->from_buffer) hold(s->flow, s->op == net::Op::ReduceMsg || flows_[s->flow].root);
    ++sending_;
    if (s->pos == s->end) {
      finish_stream(*s);  // an empty share: nothing to read
      continue;
    }
    if (params_.dataflow) {
      Lane& l = lanes_[s->lane];
      l.queue.push_back(s.get());
      if (l.queue.size() - l.head == 1) activate(*s);  // the lane was idle
      continue;
    }
    activate(*s);
  }
}

void Table::finish_stream(Stream& s) {
  --sending_;
  if (s.from_buffer && --flows_[s.flow].readers_left == 0) release(s.flow);
}

void Table::stream_done(Stream& s) {
  finish_stream(s);
  if (params_.dataflow) {
    // The lane's next message starts.
    Lane& l = lanes_[s.lane];
    ++l.head;
    while (l.head < l.queue.size()) {
      Stream& next = *l.queue[l.head];
      if (next.pos != next.end) {
        activate(next);
        break;
      }
      ++l.head;  // an empty share was finished at issue
    }
  }
  advance();
}

void Table::on_timer() {
  if (sim_now() >= lockstep_end_) lockstep_cycles_ = 0;
  advance();
}

// The endpoint's reduction logic adds a Reduce message into the flow's
// partial sum; a Gather message is the flow's result, kept if this node
// passes it on.
void Table::on_message(const net::Packet& p) {
  const int flow = layout_->flow_at(p.addr);
  FlowState& f = flows_[flow];
  const collectives::ByteRange& r = layout_->flows[flow];
  const uint64_t off = p.addr - r.offset;
  if (p.op == net::Op::ReduceMsg) {
    sc_assert(f.reduce_left >= p.payload_bytes);
    nic_.alu_.reduce(job_.dtype, job_.redop, hold(flow, true) + off, p.data, p.payload_bytes);
    f.reduce_left -= p.payload_bytes;
    INCSIM_LOG(nic_.log_, Trace, "flow {}: reduce message from {}, {} B at {:#x}, {} B to go", flow, p.src, p.payload_bytes,
               p.addr, f.reduce_left);
    if (f.reduce_left == 0) {
      INCSIM_LOG(nic_.log_, Debug, "flow {}: every reduce message is in{}", flow, f.root ? ", the result is complete" : "");
      if (f.root) {
        check(buffers_[f.buffer].data(), r.offset, r.length);
        if (f.gather_readers == 0) release(flow);
      }
      advance();
    }
    return;
  }
  sc_assert(f.gather_left >= p.payload_bytes);
  check(p.data, p.addr, p.payload_bytes);
  if (f.gather_readers > 0) std::memcpy(hold(flow, false) + off, p.data, p.payload_bytes);
  f.gather_left -= p.payload_bytes;
  INCSIM_LOG(nic_.log_, Trace, "flow {}: gather message from {}, {} B at {:#x}, {} B to go", flow, p.src, p.payload_bytes,
             p.addr, f.gather_left);
  if (f.gather_left == 0) {
    INCSIM_LOG(nic_.log_, Debug, "flow {}: the whole result is in", flow);
    advance();
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
    f.readers_left = own_data && !f.root ? f.reduce_readers : f.gather_readers;
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

void Table::maybe_finish() {
  if (finished_ || head_ < static_cast<int>(table().size()) || sending_ > 0) return;
  for (const FlowState& f : flows_)
    if (f.reduce_left > 0 || f.gather_left > 0) return;
  finished_ = true;
  if (on_done_) on_done_();
}

void Table::report(std::ostream& os, const std::string& prefix) const {
  if (finished_) return;
  os << prefix << ".nic";
  if (id_ > 0) os << " table " << id_;
  os << ": timestep " << timestep_ << ", entry " << head_ << " of " << table().size();
  if (head_ < static_cast<int>(table().size())) {
    const Entry& e = table()[head_];
    os << " (" << collectives::op_name(e.op) << " flow " << e.flow << ", step " << e.step << ")";
  }
  os << ", " << sending_ << " message streams injecting";
  uint64_t reduce = 0, gather = 0;
  int flows_waiting = 0;
  for (const FlowState& f : flows_) {
    reduce += f.reduce_left;
    gather += f.gather_left;
    flows_waiting += f.reduce_left > 0 || f.gather_left > 0;
  }
  os << "; waits for " << reduce << " B of Reduce and " << gather << " B of Gather messages over " << flows_waiting
     << " flows\n";
}

void Table::trace(sc_core::sc_trace_file* tf) const {
  const std::string me = nic_.name() + (id_ > 0 ? ".table" + std::to_string(id_) : std::string());
  sc_core::sc_trace(tf, timestep_, me + ".timestep");
  sc_core::sc_trace(tf, lockstep_cycles_, me + ".lockstep");
  sc_core::sc_trace(tf, head_, me + ".entry");
  sc_core::sc_trace(tf, head_flow_, me + ".flow");
  for (size_t p = 0; p < port_tree_.size() && params_.dataflow; ++p)
    sc_core::sc_trace(tf, port_tree_[p], me + ".port" + std::to_string(p) + "_tree");
}

}  // namespace incsim::nic
