#pragma once
// The network interface of MultiTree's co-design (Huang et al., ISCA 2021,
// §IV-A, Fig. 6): an all-reduce schedule table, a timestep counter, a
// lockstep down-counter, a decoder that issues the head entry when its step
// has come and its dependencies are met, a DMA engine that reads the message
// out of memory, and the endpoint's reduction logic for arriving Reduce
// messages. Message-based flow control (§IV-B, Fig. 7-8, Table II) frames a
// whole message behind one head flit.
//
// The NIC is a module inside its node's endpoint (gpu3.nic): it sends and
// receives on the endpoint's ports and uses its memory and timers, taking
// the endpoint's messages while a table is loaded. An algorithm programs it
// with a schedule table (load()), one per collective in flight; every
// algorithm's schedule runs on it, as the paper does for fairness (§V-A).
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "elements/data_pattern.h"
#include "collectives/executor.h"
#include "collectives/schedule.h"
#include "collectives/table_decoder.h"
#include "elements/alu.h"
#include "core/log.h"
#include "core/trace.h"
#include "gpu/gpu.h"

namespace incsim::nic {

// How a message is framed (MultiTree §IV-B, Table II). Packet: every packet
// of max_payload bytes has its own head flit (Fig. 7a). Message: one head flit
// for the whole message; the sub-packets that follow are body flits ending in
// a sub-tail flit, all carrying data (Fig. 7b, 8).
enum class FlowControl { Packet, Message };

// First-free interfaces (nic.interface_choice=first-free), as the MultiTree
// authors' simulator runs its NIs: a message goes to the first of the node's
// interfaces whose backlog is within its buffer, whatever its direction,
// and each interface sends its messages one after another. Off: every
// message shares the node's link packet by packet.
struct Interfaces {
  bool first_free = false;
  uint64_t buffer_bytes = 0;  // nic.interface_buffer_messages of net.max_payload_bytes
};

struct NicParams {
  FlowControl flow_control = FlowControl::Packet;
  // A NOP loads the lockstep down-counter with the estimated step time: the
  // serialization of one step's message without contention, less what the NI
  // buffer holds (§IV-A, footnote 4). Set per run by the collective.
  sc_core::sc_time step_time;
  uint32_t step_cycles = 0;  // the same in router cycles, for the waveform
  // Dataflow issue (Blink §4.1-4.2): any entry whose dependencies are met
  // issues, in whatever order, without steps or NOPs; each link of each tree
  // (port, destination, tree) keeps one ordered stream, so a tree's messages
  // to a peer leave one after the other while different trees and peers
  // share the port packet by packet. false: the
  // lockstep decoder of MultiTree §IV-A (the default).
  bool dataflow = false;
  Interfaces interfaces;
};

// Where each flow's chunk sits in the buffer, for one message size: the byte
// range of flow f, and the flows in address order to find a packet's flow.
struct Layout {
  std::vector<collectives::ByteRange> flows;  // [flow]
  std::vector<uint64_t> starts;               // ascending offsets ...
  std::vector<int> starts_flow;               // ... and their flows
  int flow_at(uint64_t offset) const;
};

// What an algorithm programs into a NIC: its schedule table and where its
// messages go. The schedule and data pattern must outlive the job.
struct NicJob {
  int rank = 0;                               // this node's index in the schedule
  const collectives::Schedule* schedule = nullptr;  // the table is schedule->tables[rank]
  std::vector<uint32_t> endpoint_of;          // [r]: rank r's endpoint index (a packet's dst)
  // [r]: the table that runs rank r on its NIC (Nic::free_table), named in
  // the header of every message to r; this NIC loads the job into table_of[rank].
  std::vector<uint16_t> table_of;
  std::vector<std::vector<int>> ports_to;     // [r]: the ports that lead to rank r (a message is split over them)
  // [t][r], where given and not empty, replaces ports_to[r] for the flows of
  // tree t (Schedule::flow_tree), e.g. Blink's PCIe trees beside its NVLink trees.
  std::vector<std::vector<std::vector<int>>> tree_ports;
  const elements::DataPattern* data = nullptr;  // the node's input and the expected result
  elements::DType dtype = elements::DType::Float32;
  elements::RedOp redop = elements::RedOp::Sum;
  NicParams params;
  int tenant = -1;  // the job (of a jobs: list) whose collective loads it; -1: none
  // The node's interfaces in its link (nic.interfaces) and each one's rate.
  int interfaces = 1;
  double interface_GBps = 0;
};

class Nic;

// One schedule table loaded in a NIC: one collective's rank there, with its
// own flows, buffers, message streams and decoder (Fig. 6,
// collectives::TableDecoder, which flows run too), so it runs beside the
// NIC's other tables without touching them.
class Table : public Traceable, public collectives::RankExecutor, collectives::TableDecoder::Engine {
 public:
  Table(Nic& nic, uint16_t id);
  ~Table() override;
  uint16_t id() const { return id_; }
  bool loaded() const { return job_.schedule != nullptr; }
  int tenant() const { return job_.tenant; }

  // Loads the table for one all-reduce of layout's buffer and resets the
  // counters (§IV-A: "the schedule table is initialized; the timestep and
  // lockstep counters are reset"); on_done once every entry has issued, every
  // message has left and every expected message has arrived.
  void start(const Layout& layout, const NicParams& params, std::function<void()> on_done);
  uint64_t wrong() const override;
  uint64_t messages_sent() const { return messages_sent_; }
  // The table's entries issued so far and in all (none unloaded).
  Progress progress() const override {
    if (!loaded()) return {};
    return {static_cast<uint64_t>(decoder_.head()), table().size()};
  }
  // Table 0 as gpu3.nic.timestep and so on, table k as gpu3.nic.tablek.timestep.
  void trace(sc_core::sc_trace_file* tf) const override;

 private:
  friend class Nic;
  struct Stream;
  // Beside what the flow asks of this node (view_.flows).
  struct FlowState {
    uint32_t reduce_readers = 0;   // streams that send the partial sum up
    uint32_t gather_readers = 0;   // streams that send the full sum down
    // Per run.
    int buffer = -1;             // buffers_ slot holding the flow's data
    uint32_t readers_left = 0;   // streams still to read that data
  };
  void load(NicJob job);
  void unload();
  void on_timer();
  void on_message(const net::Packet& p);
  void report(std::ostream& os, const std::string& prefix) const;
  // collectives::TableDecoder::Engine: a share is a Stream (streams_).
  void issued(const collectives::Entry& e, int index) override;
  void lockstep() override;
  bool lockstep_over() const override { return sim_now() >= lockstep_end_; }
  void holds(uint32_t s) override;
  bool empty(uint32_t s) const override;
  void activate(uint32_t s) override;
  void released(uint32_t s) override;
  void finished() override {
    if (on_done_) on_done_();
  }
  void send(uint32_t s);  // the port starts pulling stream s's packets
  // First-free interfaces: streams waiting for one go to the first within
  // its buffer; stream s has sent n more bytes.
  void assign_interfaces();
  void sent(Stream& s, uint32_t n, uint32_t wire);
  struct Interface;
  void tell_buffered(Interface& i);  // streams whole in i's buffer: the decoder is told they are sent
  void heard(uint32_t s);     // the decoder hears a stream told sent
  void read_out(uint32_t s);  // stream s reads its flow's buffer no more
  bool held_back(const Stream& s) const;  // its interface's channel is busy: the port drops it for now
  void resume(uint32_t s);          // a stream its interface's channel held back may send again
  uint8_t* hold(int flow, bool own_data);  // the flow's buffer, allocated on first use
  void release(int flow);
  void check(const uint8_t* bytes, uint64_t offset, uint64_t len);
  void remove_streams();  // from the GPU, if start added them

  const std::vector<collectives::Entry>& table() const { return job_.schedule->tables[job_.rank]; }
  uint32_t elem_bytes() const { return elements::dtype_bytes(job_.dtype); }

  Nic& nic_;
  uint16_t id_;
  NicJob job_;
  NicParams params_;      // the job's, with this size's step time
  const Layout* layout_ = nullptr;
  std::function<void()> on_done_;

  std::vector<FlowState> flows_;
  collectives::TableView view_;                  // the table's flows and message shares
  std::vector<std::unique_ptr<Stream>> streams_;  // [share]
  std::vector<std::vector<uint8_t>> buffers_;
  std::vector<int> free_buffers_;
  // First-free interfaces: each one's streams in order (the first sending)
  // and its bytes not yet sent; the streams that wait for one.
  struct Interface {
    std::deque<uint32_t> queue;
    uint64_t backlog = 0;
    sc_core::sc_time ready;  // its injection channel is free again (one network link's rate)
    sc_core::sc_time given = sc_core::sc_max_time();  // when it last took a message
  };
  std::vector<Interface> interfaces_;
  std::deque<uint32_t> unassigned_;

  // The decoder and its counters (Fig. 6, traced).
  collectives::TableDecoder decoder_;
  bool streams_added_ = false;
  int lockstep_cycles_ = 0;      // loaded by a NOP, 0 once it has counted down
  sc_core::sc_time lockstep_end_;
  uint64_t messages_sent_ = 0;
  uint64_t wrong_ = 0, checked_ = 0, expect_checked_ = 0;
  int owner_ = -1;  // a broadcast's root: results are its input; -1: the reduction
  // Dataflow mode, for the waveform: per port, the tree of the last packet
  // sent (-1: none yet), so a VCD shows which tree's chunk is on each link.
  // Sized once: a VCD holds its elements' addresses.
  std::vector<int> port_tree_;
};

// The NIC holds a table per collective in flight, as an RDMA NIC holds a
// queue pair per connection: every message names its table at the
// destination in its header (net::Packet::table), and the NIC hands each
// arriving message to that table. The tables' decoders run independently;
// their message streams share the endpoint's ports, which take the active
// streams in turn, and its one reduction ALU.
class Nic : public sc_core::sc_module, public gpu::EventHandler {
 public:
  Nic(sc_core::sc_module_name name, gpu::Gpu& gpu);
  ~Nic() override;

  // The table the next load takes: the lowest not loaded.
  uint16_t free_table() const;
  // Programs the schedule table job.table_of[job.rank] (free_table()),
  // beside the tables already loaded.
  Table& load(NicJob job);
  // The table's job ended: its messages no longer come here.
  void unload(Table& t);
  // Tables loaded now: all, or job j's (nic.tables.policy).
  int tables_loaded() const { return loaded_; }
  int tables_loaded(int job) const;
  gpu::Gpu& endpoint() { return gpu_; }

  // gpu::EventHandler: a timer's tag is the table whose lockstep counter it
  // ends, (kResume) a table's stream whose interface is free again, or
  // (kHeard) one the decoder hears is sent.
  static constexpr uint64_t kResume = 1ull << 60, kHeard = 1ull << 59;
  void on_timer(uint64_t tag) override;
  void on_flag(uint64_t) override {}
  void on_message(const net::Packet& p) override;
  void report(std::ostream& os, const std::string& prefix) const override;

 private:
  friend class Table;
  gpu::Gpu& gpu_;
  log::Logger log_;       // gpu3.nic
  elements::Alu alu_;  // the endpoint reduction logic, shared by the tables
  // [id]; an unloaded table stays (a VCD may trace its counters) for the next load.
  std::vector<std::unique_ptr<Table>> tables_;
  int loaded_ = 0;
};

}  // namespace incsim::nic
