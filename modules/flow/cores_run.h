#pragma once
// One size's run of CoresFlows (cores_flows.h): every rank's queues and
// connections as the packet-level executor has them (gpu/cores_rank.h).
// Private to the flow module: cores_flows.cpp runs the point-to-point
// transfers, cores_innet.cpp the in-network operations.
#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "collectives/cores_turn.h"
#include "flow/cores_flows.h"

namespace incsim::flow {

using collectives::Buffer;
using collectives::ChunkRef;
using collectives::OpKind;
using collectives::Operation;
using collectives::Protocol;
using collectives::passive;
using collectives::receives_landing;

// The key of what a rank receives of in-network group g: message chunk m.
inline uint64_t received(int g, int64_t m) { return static_cast<uint64_t>(g) << 32 | static_cast<uint32_t>(m); }

// One size's run: every rank's queues and connections, as CoresRank has them.
class CoresFlows::Run : public RunFlows {
 public:
  // The plan's message less `drop` whole passes of every part, on `on` (a
  // shared network or its replica) or on a network of its own.
  Run(CoresFlows& f, const Plan& plan, uint64_t drop, Network* on);
  ~Run() override;
  // On a network of its own: runs to the end. tick: Network::run's, now and then.
  Result go(const Network::Callback& tick = {});
  // Starts every rank at the network's now; `done` (if any) gets the result at the last rank's end.
  void begin(Done done);
  double now() const { return net_->now(); }
  // The share of the run's operations its queues have issued.
  double issued() const;

 private:
  struct Queue;
  struct Conn {
    int channel, peer, port;
    Queue* queue = nullptr;
    Conn* remote = nullptr;
    const Route* route = nullptr;  // to its peer: the data's, or the head flags' back
    // Its route's times, which every transfer reads (the route's hops only
    // its uses): kept here, not a pointer's miss away.
    double latency_ns = 0, ack_ns = 0;
    // With another node: NCCL's proxies' time per step (send) or on a slot's way back (receive; CoresCosts::net).
    double proxied_ns = 0;
    bool acked_by_memory = true;
    uint64_t claimed = 0, done = 0, seen = 0;
    std::vector<uint64_t> slot_len;  // receive: elements in each slot
    // send: its data's uses for operations whose classes have `uses_for`
    // parts (the only way they differ), kept for its every transfer.
    std::vector<Network::Use> uses;
    int uses_for = -1;
  };
  using Pending = collectives::PendingReceive;
  struct Rank;
  struct Queue {
    Rank* rank;
    int index;
    std::vector<int> ops;
    uint64_t passes = 1, next = 0, total = 0, transfers = 0, sent = 0;
    bool sending = false, finished = false;
    // The send in flight (a queue sends one at a time), which its callbacks
    // read: what they capture then fits in a std::function without a heap
    // allocation.
    struct Send {
      int op = 0;
      uint64_t pass = 0, len = 0;
      Conn *in = nullptr, *out = nullptr;
      double began = 0;
    } send;
    Fifo<Pending> pending;
    int acks_due = 0;  // fences waiting for their stores' acknowledgements
    // When the last acknowledgement of a store it made (ack_after) lands:
    // the queue ends only after, and one event ends it then.
    double acked_by = 0;
    bool ending = false;  // that event is due
    // Its reducing writes' credits (CoresCosts::push_credits) as a link of
    // their rate by Little's law, which every such flow of the queue crosses.
    int credits_link = -1;
  };
  struct Rank : collectives::RankExecutor {
    int r;
    std::vector<std::unique_ptr<Conn>> send, recv;
    std::vector<std::unique_ptr<Queue>> queues;
    // Per operation, what a queue's progress reads of it together, in one
    // place rather than four arrays: its connections, its queue (an index
    // into queues, -1: passive) and its passes done.
    struct Op {
      Conn* in = nullptr;
      Conn* out = nullptr;
      uint64_t done_passes = 0;
      int queue = -1;
    };
    std::vector<Op> ops;
    Dependents dependents;
    std::unordered_map<uint64_t, uint64_t> scratch;  // (chunk, pass): elements written
    // (group, message chunk): the operation that receives the group's
    // multicast or sum of that chunk here; only the chunks it receives, as
    // groups and message chunks both grow with the cluster.
    std::unordered_map<uint64_t, int> receiver;
    // (receiving operation, pass): elements landed, while the pass is not
    // complete. A few at a time, so a list: no node to allocate per pass.
    using Landed = std::vector<std::pair<uint64_t, uint64_t>>;
    Landed landed;
    int unfinished = 0;  // queues, and operations that receive what lands
    // Its reducing reads' table entries at its switch ports as a link of
    // their rate by Little's law (Shape::table_rate), which every such flow
    // of the rank crosses: the ports' tables are the GPU's, whatever the
    // channel. On a shared network, the network's link for the GPU.
    int table_link = -1;
    uint64_t wrong() const override { return 0; }  // no element values travel
    Progress progress() const override { return collectives::transfers_sent(queues); }
  };
  const Operation& op(int r, int i) const { return p_.op(r, i); }
  static const ChannelClasses* classes_for(const CoresFlows& f, const collectives::PassLayout& l, std::string& why);
  Conn& add_conn(Rank& k, std::vector<std::unique_ptr<Conn>>& v, int channel, int peer, Queue& q, bool sending);
  void progress(Queue& q);
  // collectives::take_turn's view of rank k.
  struct Turn {
    Run& run;
    Rank& k;
    Conn& conn_in(int i) { return *k.ops[static_cast<size_t>(i)].in; }
    Conn& conn_out(int i) { return *k.ops[static_cast<size_t>(i)].out; }
    uint64_t done_passes(int i) const { return k.ops[static_cast<size_t>(i)].done_passes; }
    void complete_receive(Queue& q, const Pending& pd) { run.complete_receive(q, pd); }
    void start_innet(Queue& q, int i, uint64_t pass) { run.start_innet(q, i, pass); }
    void run_local(int i, uint64_t pass) { run.run_local(k, i, pass); }
    void start_send(Queue& q, int i, uint64_t pass) { run.start_send(q, i, pass); }
  };
  void complete_receive(Queue& q, const Pending& pd);
  void run_local(Rank& k, int i, uint64_t pass);
  void start_send(Queue& q, int i, uint64_t pass);
  void finish_send(Queue& q, int i, uint64_t pass);
  void consume(Queue& q, Conn& c);
  void op_done(Rank& k, int i, uint64_t pass);
  void part_done(Rank& k);  // a queue or a receiving operation has finished
  uint64_t passes_of(const Operation& o) const {
    return layout_->parts > 1 ? layout_->passes[o.channel % layout_->parts] : layout_->passes[0];
  }
  const std::vector<int>& ports_to(int r, int peer);  // rank r's ports on a shortest path to peer

  // In-network operations (cores_innet.cpp): NVLS's multimem loads and
  // stores through the first switch, and SHARP's reducing writes, joined
  // once every member has issued its pass, through the group's home switches.
  void start_innet(Queue& q, int i, uint64_t pass);
  // A reader's last rounds of requests (a block on each port), served one
  // read after another (start_reduce_read): the front one's flow is in flight.
  using LastRounds = Fifo<Network::Callback>;
  void start_reduce_read(Queue& q, int i, uint64_t pass, uint64_t len);
  // Starts `read` once the reads queued before it are done; read_done starts the next.
  static void last_round(LastRounds& l, Network::Callback read);
  static void read_done(LastRounds& l);
  void start_multicast(Queue& q, int i, uint64_t pass, uint64_t len);
  void join_reduce_write(Queue& q, int i, uint64_t pass, uint64_t len);
  void issued_innet(Queue& q, int i, uint64_t pass, bool done);
  // A multicast or a sum of rank `from`'s operation i's chunks lands at every member of its group.
  void land(int from, int i, uint64_t pass, int member);
  // Rank r's operation i's pass lands at its group's members [begin, end)
  // but r, `delay` from now: one event, as their events would follow each
  // other (same time, made one after another). Its record is in landings_,
  // so the event's callback holds an index, not a heap allocation.
  struct Landing {
    int from, i;
    uint64_t pass;
    uint32_t begin, end;
  };
  void land_after(double delay, const Landing& l);
  void land_passes(Rank& k, int i);  // completes receiving operation i's passes that have landed, in order
  // Rank k's landed count of key (receiving operation, pass), or end().
  static Rank::Landed::iterator landed_at(Rank& k, uint64_t key) {
    return std::find_if(k.landed.begin(), k.landed.end(), [key](const auto& x) { return x.first == key; });
  }
  void landed(Conn& c, double delay);  // the receiver sees a transfer `delay` from now
  void ack_after(Queue& q, double delay);
  uint64_t elements(Rank& k, ChunkRef ref, uint64_t pass) const;
  void wrote(Rank& k, ChunkRef ref, uint64_t pass, uint64_t len);
  // A memory access's mean time, and the expected last of `packets`
  // accesses issued evenly over `spread` ns (each its own jitter): a fence
  // waits for the slowest acknowledgement, a receiver polls every line.
  // A watched write is stored one access after it lands and seen one polling
  // load later (gpu/gpu.cpp, serve_request): two accesses.
  double mem() const { return f_.costs_.mem_ns + f_.costs_.jitter_ns / 2; }
  // One access's time, its jitter drawn from the seed as packet level draws
  // it (the draws desynchronise the channels, as they do there).
  double access() { return memory_access(f_.costs_.mem_ns, f_.costs_.jitter_ns, f_.seed_, draws_++); }
  double last_mem(double spread, uint64_t packets, int accesses) const {
    return last_access(f_.costs_.mem_ns, f_.costs_.jitter_ns, spread, packets, accesses);
  }
  // A single store's acknowledgement on connection c's route, from the store.
  double acked(const Conn& c) const { return c.ack_ns + (c.acked_by_memory ? mem() : 0); }
  uint64_t packets(uint64_t len) const { return (len * f_.elem_ + data_ - 1) / data_; }
  // The weights of a flow of protocol proto_'s data over route r, for rank r's operation i.
  std::vector<Network::Use> uses(const Route& route, int r, int i) const;
  // uses() of connection c's route for rank r's operation i, kept on c.
  const std::vector<Network::Use>& uses(Conn& c, int r, int i) const;
  // Uses u of rank r's operation i, under channel classes on its class's
  // links, for every part of its class.
  std::vector<Network::Use> classed(std::vector<Network::Use> u, int r, int i) const;
  // The transfers rank r's operation i stands for: its class's parts.
  uint64_t stands_for(int r, int i) const {
    return classes_ ? static_cast<uint64_t>(classes_->members[p_.rank_begin[static_cast<size_t>(r)] +
                                                              static_cast<uint32_t>(i)])
                    : 1;
  }

  CoresFlows& f_;
  Done done_;
  Protocol proto_;
  CoresCosts::Slots slots_;
  std::unique_ptr<collectives::PassLayout> layout_;
  // The classes whose first parts run for them (null: every part runs,
  // for the reason in no_classes_), and the program this run runs.
  std::string no_classes_;
  const ChannelClasses* classes_;
  mutable std::vector<int> at_;  // classed's: [2 x flow link + limits]: its use's place, -1 between calls
  const collectives::Program& p_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::unordered_map<uint64_t, std::vector<int>> ports_;  // (rank, peer): ports on a shortest path, found at first use
  double fwd_[8] = {}, ack_[8] = {};                  // [format]: wire and ack bytes per data byte
  uint64_t data_ = 1;                                 // data bytes per GPU packet
  uint64_t draws_ = 0;
  double end_ = 0;
  int running_ = 0;
  uint64_t transfers_ = 0;
  // Reducing writes waiting for their group: (group, first chunk, pass) -> the members' (queue, operation).
  std::map<std::tuple<int, int64_t, uint64_t>, std::vector<std::pair<Queue*, int>>> joins_;
  std::unordered_map<const InNetwork::Shape*, LastRounds> last_rounds_;  // a reducing read's shape: its reader's
  std::vector<int> receivers_;  // land's scratch
  std::vector<Landing> landings_;
  std::vector<int> free_landings_;
};

}  // namespace incsim::flow
