#pragma once
// One rank's schedule-table decoder (MultiTree §IV-A, Fig. 6) as both
// fidelities run it, nic::Table at packet level and flow::NicFlows as
// flows: the timestep counter; the head entry, issued when its step has
// come and its dependencies are met; the timestep moving on once a NOP's
// lockstep count is over and no issued message is still sending; dataflow
// issue (Blink §4.1-4.2), any entry whose dependencies are met, each
// (port, destination, tree) lane's messages one after another; and the
// bytes each flow still awaits. What moves a message is the engine's
// (Engine): the NIC's DMA streams and the GPU's ports, or flows. Plain C++,
// no SystemC.
#include <cstdint>
#include <vector>

#include "collectives/schedule.h"

namespace incsim::collectives {

class TableDecoder {
 public:
  // What runs the decoder's messages: a message share (TableView::Share,
  // by index) is read and sent by the engine, which calls sent(s) once its
  // last byte has left and arrived() for what comes in.
  class Engine {
   public:
    // Entry `index` issues, before its NOP count or its shares.
    virtual void issued(const Entry& e, int index) {}
    // A NOP issued: its lockstep count runs; the engine calls advance()
    // once it is over, which lockstep_over() then says.
    virtual void lockstep() = 0;
    virtual bool lockstep_over() const = 0;
    // Share s of an issuing entry will read its data.
    virtual void holds(uint32_t s) {}
    // Share s has nothing to send (its part of the flow is empty).
    virtual bool empty(uint32_t s) const = 0;
    // Share s starts: its message's first read, then its bytes to its peer.
    virtual void activate(uint32_t s) = 0;
    // Share s has sent all it reads (or was empty).
    virtual void released(uint32_t s) {}
    // Every entry issued, every message sent, every expected byte in.
    virtual void finished() = 0;

   protected:
    ~Engine() = default;
  };

  // Resets for one run of `table`, whose shape is `view` (both outlive the
  // run), over flows of flows[f].length bytes; advance() then starts it.
  void start(const std::vector<Entry>& table, const TableView& view, const std::vector<ByteRange>& flows,
             bool dataflow, Engine& engine);
  // Issues what may issue now, and finishes once all is done.
  void advance();
  // Share s's last byte has left: the lane's next message starts, and the
  // decoder looks again.
  void sent(uint32_t s);
  // `bytes` of flow f have arrived, a partial sum (reduce) or the sum: true
  // once the last of them is in, when the caller has the decoder advance().
  bool arrived(int flow, bool reduce, uint64_t bytes);

  // The counters of Fig. 6: the timestep, the entry the decoder inspects
  // (in dataflow mode, how many have issued) and its flow (kNil: none), for
  // the waveform.
  const int& timestep() const { return timestep_; }
  const int& head() const { return head_; }
  const int& head_flow() const { return head_flow_; }
  uint32_t sending() const { return sending_; }  // shares of issued entries still sending
  bool finished() const { return finished_; }
  // Bytes flow f still awaits: of partial sums (reduce), or of the sum.
  uint64_t left(int flow, bool reduce) const {
    return (reduce ? reduce_left_ : gather_left_)[static_cast<size_t>(flow)];
  }
  // Over every flow: the bytes still awaited, and the flows that await any.
  struct Awaited {
    uint64_t reduce = 0, gather = 0;
    int flows = 0;
  };
  Awaited awaited() const;

 private:
  bool ready(const Entry& e) const;
  void issue(const Entry& e, int index);
  void maybe_finish();

  struct Lane {
    std::vector<uint32_t> queue;  // its shares in issue order
    size_t head = 0;              // the one sending
  };
  const std::vector<Entry>* table_ = nullptr;
  const TableView* view_ = nullptr;
  Engine* engine_ = nullptr;
  bool dataflow_ = false;
  std::vector<uint64_t> reduce_left_, gather_left_;  // [flow]
  // Dataflow mode: the lanes, and the entries not issued, in table order.
  // Kept across runs, so that a run allocates nothing.
  std::vector<Lane> lanes_;
  std::vector<int> pending_;
  int timestep_ = 0, head_ = 0, head_flow_ = kNil;
  uint32_t sending_ = 0;
  bool finished_ = false;
};

}  // namespace incsim::collectives
