#pragma once
// A flow network (docs/flow.md): links of a capacity, flows of a byte count
// over weighted link uses, and the rates max-min fairness gives them by
// progressive filling, recomputed only for the flows connected to a start
// or an end through links that bound a flow (a link with room to spare
// couples no rates; fill() checks that) and only once per instant. A flow
// is done its path's latency after its last byte left: time = latency +
// bytes / rate while its rate holds. Time is in ns, capacity in bytes per
// ns (= GB/s). Plain C++, no SystemC: --fidelity flow runs on this alone.
//
// Flows over the same uses (links, weights, limits) always get the same
// rate, so the filling works on such paths with a count of flows, not on
// each flow: the chunks of a program's many channels that take one route
// are one path, which is what keeps a component of thousands of flows in
// flight cheap to refill.
//
// Links of one capacity that every path in flight uses alike (at the same
// weight and limits) or not at all always fill at the same level, so the
// filling works on such a bundle of links as on one: a flow spread over
// the spines and cores of a folded Clos meets a few bundles, not hundreds
// of links. Links start in one bundle per capacity, and a path that uses a
// bundle in part splits it; bundles never join again, since which paths
// are in flight changes at every event while splits are rare.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <vector>

namespace incsim::flow {

// FNV-1a: hash h with value v folded in; start from kFnvBasis. The flow
// module's keys (paths by their uses, walks by their endpoints) are built so.
constexpr uint64_t kFnvBasis = 1469598103934665603ull;
constexpr uint64_t fnv1a(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ull; }

// An index of `all` free for use: one freed before (pushed on `free`), or
// a new element's. Pools of records that events name by index, so a
// callback's capture stays small enough for std::function to hold in place.
template <class T>
int free_slot(std::vector<T>& all, std::vector<int>& free) {
  if (free.empty()) {
    all.emplace_back();
    return static_cast<int>(all.size()) - 1;
  }
  const int i = free.back();
  free.pop_back();
  return i;
}

class Network {
 public:
  // A flow's use of a link: `weight` bytes cross the link per byte of the
  // flow (a packet's header over its payload, a fraction of a flow spread
  // over equal-cost links, the acknowledgements on the way back).
  // limits: whether the link can bound the flow's rate. A flow's write
  // acknowledgements on the way back take the capacity they need there,
  // but a port's round robin never holds them back for a data stream, so
  // they do not freeze the flow at that link's fair level.
  struct Use {
    int link;
    double weight;
    bool limits = true;
  };
  using Callback = std::function<void()>;

  int add_link(double bytes_per_ns);
  // Link l carries no flow and is free for add_link to reuse (a run's own
  // links on a network runs share).
  void remove_link(int l);
  // A flow's mark: `at` runs once no more than `bytes` of the flow are still
  // to leave (at once if it has no more): a sender done with a message whose
  // rest the switches' buffers hold. Marks are due at the rates of the time
  // and change none.
  struct Mark {
    double bytes;
    Callback at;
  };
  // Starts a flow of `bytes` over `uses` now; `done` runs latency_ns after
  // its last byte has left. A flow with no uses or no bytes takes its latency only.
  // pending, if given, counts the flow (and its marks) until `done` has been
  // called: what a run on a shared network waits for before it frees what the
  // callbacks use.
  void start(std::vector<Use> uses, double bytes, double latency_ns, Callback done, uint64_t* pending = nullptr,
             std::vector<Mark> marks = {});
  // Runs `f` delay_ns from now; pending as start's.
  void after(double delay_ns, Callback f, uint64_t* pending = nullptr);
  // Runs `f` at t_ns (now, if that has passed); pending as start's.
  void at(double t_ns, Callback f, uint64_t* pending = nullptr);
  // Processes events in time order (same time: in the order they were made)
  // until none is left; `tick`, if given, runs after every kTickEvents of
  // them (a progress report: it must not start flows).
  static constexpr uint64_t kTickEvents = 1 << 16;
  void run(const Callback& tick = {});
  // Processes the events due at or before t_ns, then stands at t_ns (or
  // later, if it was already): a network whose time follows another
  // simulator's. The rates are current when it returns.
  void run_until(double t_ns);
  // When the next event is due (infinity: none); refills the rates a
  // start changed first.
  double next_event();

  double now() const { return now_; }
  // An empty network with this one's links (the same indices, capacities
  // and free indices) standing at t_ns: where a run replays its past
  // before adopt() moves it here.
  Network replica(double t_ns) const;
  // Takes over every flow, mark and callback of `from`, a replica of this
  // network standing at its now, leaving it empty; links `from` added or
  // removed since it was made are added or removed here, at their indices.
  void adopt(Network& from);
  // Bytes each link carried (every flow started over it, by its weight).
  double carried(int link) const { return carried_[static_cast<size_t>(link)]; }
  size_t links() const { return links_.size(); }
  // The most flows in flight at once.
  size_t most_active() const { return most_active_; }
  // The paths in flight: flows over the same uses share one.
  size_t paths() const { return paths_.size() - free_paths_.size(); }
  // The bundles links are in: links that every path in flight uses alike.
  size_t bundles() const { return bundles_.size() - free_bundles_.size(); }

 private:
  // A link: its bundle and its place among the bundle's links.
  struct Link {
    int bundle;
    uint32_t at;
    uint64_t seen = 0;  // the last join that met it
  };
  // A path on a bundle, with what the filling reads of its use there: kept
  // beside the bundle, so a recomputation reads no path's list of uses to
  // sum a bundle's weights or to skip a use that does not limit.
  struct OnBundle {
    int path;
    uint32_t use : 31;  // its index in the path's parts
    uint32_t limits : 1;
    double weight;
  };
  // What the filling reads of a bundle, in one cache line (a filling meets
  // bundles scattered over the network; what it asks of every bundle it
  // meets is in met_). Its capacity is each of its links'.
  struct alignas(64) Bundle {
    double cap = 0;
    std::vector<OnBundle> paths;
    // Progressive filling's state, valid while the bundle's met_ is the current epoch.
    double left = 0, weights = 0;
    double key = 0;   // its key in the filling's heap, at most its level
    uint32_t at = 0;  // its place in the heap, or kOut
  };
  // Whether a filling has met a bundle, and how: asked for every part of
  // every path it meets.
  struct Met {
    uint64_t epoch : 62;      // the last filling that met it
    uint64_t edge : 1;        // then as a bundle bounding the filled paths from outside (recompute)
    uint64_t bottleneck : 1;  // it froze a flow in the last filling that included it
  };
  // A flow in flight on a path: it has sent its last byte when the path
  // has sent `end` bytes per flow.
  struct Member {
    double end;
    uint64_t seq;
    int flow;
    bool operator>(const Member& o) const { return end != o.end ? end > o.end : seq > o.seq; }
  };
  // The flows in flight over one list of uses. They all send at one rate,
  // so they end in the order of `end` and the path needs one drain event.
  // Laid out for the filling, which meets paths scattered over memory: what
  // it reads of every path it meets (its parts, its flows' count, whether
  // it met it) in the first cache line, what it reads of those it fills (the
  // rate, the bytes sent) in the second.
  struct alignas(64) Path {
    std::vector<Use> parts;  // its uses of bundles (link: a bundle), what the filling reads
    std::priority_queue<Member, std::vector<Member>, std::greater<Member>> flows;
    uint64_t epoch = 0;
    double rate = 0, old_rate = 0;
    double sent = 0, since = 0;  // bytes per flow sent until `since`
    uint64_t fill = 0;           // the last recomputation (fills_) that advanced it
    bool frozen = false, moved = false;  // moved: its first flow to end may have changed
    int next_same = -1;                  // the next path in flight with its key (index_)
    uint64_t key = 0;                    // hash of `uses`
    std::vector<Use> uses;      // as started: its key, and the bytes each link carried
    std::vector<uint32_t> pos;  // [part]: its place in the bundle's paths
    // Its flows' marks (start's at_mark), `flow` an index into marks_: due
    // like a flow's end, they change no rate.
    std::priority_queue<Member, std::vector<Member>, std::greater<Member>> marks;
  };
  static_assert(offsetof(Path, epoch) < 64 && offsetof(Path, frozen) < 128);  // the lines the comment names
  struct Flow {
    double latency = 0;
    Callback done;
    uint64_t* pending = nullptr;
  };
  struct Call {
    Callback f;
    uint64_t* pending = nullptr;
  };
  // Progressive filling's heap of bundles, least key first (ties: lower
  // bundle), each knowing its place, so a key moves in place and a bundle
  // with nothing left to fill leaves without being popped. A filling of
  // at most kScan bundles (nearly all of them) keeps every key at its level
  // and scans for the least instead: fewer steps than the heap's sifts,
  // and the same order.
  static constexpr uint32_t kOut = ~0u;
  static constexpr size_t kScan = 32;
  bool higher(int a, int b) const;  // a after b
  void heap_place(size_t i, int l);
  void sift_up(size_t i);
  void sift_down(size_t i);
  void take_out(size_t i);
  int least() const;  // a scan's next link to fill
  // A callback's event (paths' drains are in due_).
  struct Event {
    double t;
    uint64_t seq;
    size_t call;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  // The paths' drains: a binary heap of paths by when their first flows to
  // end will have sent their last byte (same time: in the order scheduled),
  // each knowing its place, so a path whose rate changes moves its one
  // event rather than leaving a stale one behind. An entry holds its key
  // and the places are apart from the paths: a sift reads no path.
  struct Due {
    double t;
    uint64_t seq;
    int path;
    bool operator<(const Due& o) const { return t != o.t ? t < o.t : seq < o.seq; }
  };
  void place(size_t i, const Due& d);
  void sift(size_t i);
  void schedule(int p, double t);
  void unschedule(int p);
  // The path's first flows to end have sent their last byte, or its first
  // marks are due.
  void drain(int p);
  // Where the path's per-flow count of bytes sent next reaches a flow's end or a mark.
  static double first_end(const Path& x) {
    return x.marks.empty() ? x.flows.top().end : std::min(x.flows.top().end, x.marks.top().end);
  }
  // Its next drain at its rate from now.
  void reschedule(int p);
  // The path's bytes per flow sent until now, at its rate.
  void advance(Path& p);
  // The path of these uses, made (and put on its bundles) if none is in flight.
  int path_of(std::vector<Use>&& uses);
  // Puts new path p on its links' bundles: a bundle it uses in part splits
  // into the sets of its links it uses alike and the rest.
  void join(int p);
  // Path p's parts on bundle b, which it uses in part or unalike: each set
  // of b's links it uses alike becomes a bundle, b keeping the rest.
  void join_part(int p, int b);
  // Puts link l, out of any bundle, in one of capacity cap (add_link's).
  void place_link(int l, double cap);
  // A new bundle of links of capacity cap, or one freed before.
  int new_bundle(double cap);
  // Link l leaves its bundle (freed once it has no link) for bundle b, if any.
  void move_link(int l, int b);
  // Moves links (of one bundle) into a new bundle that every path of
  // theirs is on too.
  int split(const std::vector<int>& links);
  // index_'s slot for key: where its probe begins; the slot holding it, or
  // the empty one where it would go. unindex: path p is no longer in flight.
  size_t home(uint64_t key) const { return (key ^ key >> 32) & (index_.size() - 1); }
  size_t slot_of(uint64_t key) const;
  void unindex(int p);
  // Marks a path's bundles: their flows changed this instant.
  void touch(const Path& p);
  // Max-min rates for every flow connected to the dirty bundles, and their drain events.
  void recompute();
  // Progressive filling over the paths reachable from the dirty bundles
  // through bundles that were a flow's bottleneck, the other bundles
  // bounding it with what the paths outside leave them. False where such a
  // bundle filled below the rate of a path outside: those are left in
  // edges_filled_, to be filled from too.
  bool fill();
  // Queues callback c at time t (after's, with its pending count taken).
  void post(double t, Call c);
  // The next event's time, or infinity; whether it is a path's drain.
  double next(bool& drain) const;
  // Processes the events due at or before `limit` (run's and run_until's loop).
  void run_to(double limit, const Callback& tick);

  std::vector<Link> links_;
  std::vector<double> carried_;  // [link]: carried()
  std::vector<int> free_links_;
  std::vector<Bundle> bundles_;
  std::vector<Met> met_;                   // [bundle]
  std::vector<std::vector<int>> members_;  // [bundle]: its links
  std::vector<int> free_bundles_;
  // The bundle that add_link puts a link of each capacity in while it has no
  // path: one whole until paths split it.
  std::map<double, int> fresh_;
  // join's scratch. Per bundle the path meets: how many uses it has there,
  // the first, and whether they differ or repeat a link.
  struct Tally {
    uint64_t seen = 0;  // the last join that met it
    uint32_t uses = 0, first = 0;
    bool mixed = false;
  };
  std::vector<Tally> tally_;  // [bundle]
  std::vector<int> met_bundles_;
  uint64_t joins_ = 0;
  // A bundle used in part: the path's uses there in order of link, and per
  // link its first use there and how many it has.
  struct Run {
    int link;
    uint32_t first, n;
  };
  std::vector<uint32_t> order_;
  std::vector<Run> runs_;
  std::vector<int> group_;
  std::vector<Path> paths_;
  std::vector<int> free_paths_;
  // The paths in flight by key: open addressing, each slot the first path
  // of its key (-1: empty), the others chained by next_same. A transfer
  // whose connection's last has drained makes its path anew: no
  // allocation per path made or freed.
  struct Slot {
    uint64_t key;
    int path;
  };
  std::vector<Slot> index_ = std::vector<Slot>(1024, Slot{0, -1});  // a power of two, at most half full
  size_t indexed_ = 0;
  std::vector<Flow> flows_;
  std::vector<int> free_flows_;
  std::vector<Call> calls_;
  std::vector<int> free_calls_;
  std::vector<Call> marks_;
  std::vector<int> free_marks_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::vector<Due> due_;
  std::vector<int> due_at_;  // [path]: its place in due_, or -1: no drain due
  std::vector<int> dirty_;  // bundles whose flows changed this instant
  double now_ = 0;
  uint64_t seq_ = 0, epoch_ = 0, fills_ = 0;
  size_t active_ = 0, most_active_ = 0;
  std::vector<int> comp_bundles_, comp_paths_, edge_bundles_;  // recompute's scratch
  std::vector<int> refilled_;  // paths of recompute's tries before its last
  // Edge bundles that filled, at their level; after fill, those that couple.
  std::vector<std::pair<int, double>> edges_filled_;
  std::vector<int> heap_;  // bundles
  bool scan_ = false;      // this filling scans heap_ (kScan)
};

}  // namespace incsim::flow
