#pragma once
// The one packet type every block exchanges (STYLE.md, convention 3): a header
// flit plus up to max_payload bytes of real data, taken from a PacketPool.
#include <cstdint>
#include <ostream>
#include <systemc>

#include "core/param.h"
#include "net/lines.h"

namespace incsim::net {

// Write, WriteAck, Read and ReadResp are ordinary memory operations; a Write
// to a multicast-region address is replicated by the switches (Klenk §IV-A)
// and posted (no ack). The in-network reduction operations (Klenk §IV-B,C):
// ReduceWrite is a push contribution routed to its address's home port;
// PullRead is a load with a reduction operator multicast to a group, answered
// by PullResp; Partial is a reduction table entry evicted to the home GPU.
// Reduction packets carry a count of the contributions they hold.
// ReduceMsg and GatherMsg carry a MultiTree NIC's Reduce and Gather messages
// (MultiTree §IV-A) to the NIC named in dst, whose table named in `table`
// reduces or keeps them; they are posted (no ack) and addr is the byte offset
// in that table's all-reduce buffer.
// PostedWrite is a unicast write the receiving endpoint's program takes, with
// no ack: synthetic traffic (modules/traffic) sends these, so that, as in
// BookSim's default and Dally and Towles' traffic patterns, only the pattern's
// packets load the network.
enum class Op : uint8_t {
  Write, WriteAck, Read, ReadResp, ReduceWrite, PullRead, PullResp, Partial, ReduceMsg, GatherMsg, PostedWrite
};
const char* op_name(Op op);

// Multicast regions live above every GPU's local memory in the global
// address space (Klenk Fig. 2).
constexpr uint64_t kMulticastBase = 1ull << 48;
inline bool is_multicast(uint64_t addr) { return addr >= kMulticastBase; }
// Each in-network group of a collective in flight holds a window of that
// space (gpu/group_window.h); a switch finds an address's window, and so its
// collective's job (topo::MulticastFabric::window_tenant), by this size.
constexpr uint64_t kMulticastWindowBytes = 1ull << 46;
inline int multicast_window(uint64_t addr) {
  return is_multicast(addr) ? static_cast<int>((addr - kMulticastBase) / kMulticastWindowBytes) : -1;
}
constexpr uint32_t kNoEndpoint = ~0u;  // src of a packet a switch originates

// Virtual channels. Two message classes, requests and responses, so that
// responses always drain and no protocol deadlock can form (Klenk §IV-E2);
// each class has two VCs, so that dimension-order routing on a torus stays
// deadlock-free: a packet crossing a ring's wrap-around link (the dateline)
// moves to its class's second VC (Dally and Towles, Principles and Practices
// of Interconnection Networks, ch. 14). These are VCs 0 to 3 (kClassVcs),
// all that `switch.vc_alloc=class` uses. `packet` gives each class two VCs
// more, 4 to 7, so that a class has MultiTree Table III's 4: bit 0 of a VC is
// its set (first or second: before or after a dateline), bit 1 its class,
// bit 2 which of its set's two it is (docs/platforms.md, "Virtual channels").
// kRequestVc and kResponseVc are each class's first VC, the one every packet
// leaves the network on; switches pick the VC per hop (topo::VcRule).
enum Vc : uint8_t { kRequestVc = 0, kResponseVc = 2 };
constexpr int kVcsPerClass = 2;  // under switch.vc_alloc=class: a first and a second
constexpr int kClassVcs = 4;     // VCs 0-3: two classes of kVcsPerClass
constexpr int kNumVcs = 8;       // with the two more per class that switch.vc_alloc=packet adds
constexpr int kExtraVcBit = 4;   // vc | kExtraVcBit: the other VC of vc's set
// The k-th VC (k < 4) per-packet allocation tries for a packet whose VC
// would be `first`: first and the other of its set, then the next set's two
// (only where no rule splits the class into sets).
inline constexpr int allocated_vc(int first, int k) { return (first + (k >> 1)) | ((k & 1) ? kExtraVcBit : 0); }
// The first VC of vc's class, and the class's second VC.
inline constexpr int class_first_vc(int vc) { return vc & kResponseVc; }
inline constexpr int class_second_vc(int vc) { return class_first_vc(vc) + 1; }
static_assert(class_first_vc(kRequestVc) == kRequestVc && class_first_vc(kResponseVc) == kResponseVc &&
                  class_first_vc(kRequestVc | kExtraVcBit | 1) == kRequestVc &&
                  class_first_vc(kResponseVc | kExtraVcBit | 1) == kResponseVc &&
                  kResponseVc + kVcsPerClass == kClassVcs && 2 * kClassVcs == kNumVcs,
              "VC bits: 0 the set, 1 the class, 2 the set's second VC under per-packet allocation");

struct Packet {
  Packet* next = nullptr;   // intrusive queue link: queues never allocate
  uint64_t id = 0;          // unique per run, for stall reports
  uint64_t addr = 0;        // in the destination endpoint's local address space
  uint32_t src = 0;         // endpoint index of the sender
  uint32_t dst = 0;         // endpoint index of the receiver
  uint32_t stream = 0;      // the initiator's stream id; a response echoes it
  Op op = Op::Write;
  uint8_t vc = kRequestVc;
  uint16_t payload_bytes = 0;
  uint16_t wire_bytes = 0;  // header + payload rounded up to flits
  int16_t out_port = -1;    // routing decision at the switch holding it
  uint16_t count = 0;       // contributions reduced into the payload (reduction ops)
  uint8_t dtype = 0, redop = 0;  // elements::DType and RedOp of a reduction
  uint16_t mc_pending = 0;  // outputs a multicast still has to reach at this switch
  // ReduceWrite: reduced at the switch holding it on its way to a home
  // elsewhere (a merge point of a SHARP aggregation tree, set as it enters).
  bool merge : 1;
  // Write: part of a message its sender posts whole (an NCCL step), and not
  // its last write (more), or its last (last). An adapter sends a message
  // in MTU-sized packets, as NCCL's proxy posts a step only once the GPU has
  // written all of it (src/transport/net.cc, sendProxyProgress); neither:
  // a write on its own. Bit-fields (C++17: no initialisers; the pool clears
  // them) keep the packet in 96 bytes.
  bool more : 1;
  bool last : 1;
  Lines lines = Lines::Plain;  // a write's data in NCCL's LL or LL128 lines; fits in padding
  // ReduceMsg, GatherMsg: the schedule table that takes the message at the
  // destination NIC, as an RDMA header names the destination queue pair.
  // Between InfiniBand adapters: the packet's sequence number in its
  // connection (its source and destination GPUs), modulo 2^16.
  uint16_t table = 0;
  // Data bytes it can hold: its pool's max payload, or less for a small
  // packet (PacketPool::get(bytes)); fits in padding.
  uint16_t capacity = 0;
  int32_t home_switch = -1; // ReduceWrite: switch index and port of the home table
  int16_t home_port = -1;
  // Ethernet: the port a frame came in on at the switch or FPGA holding it
  // (whose ingress buffer it holds, where an answer goes); an InfiniBand
  // adapter's: the port whose buffer it holds, -1 once freed; fits in padding.
  int16_t in_port = -1;
  sc_core::sc_time t_head;  // first flit arrives at the current hop
  sc_core::sc_time t_tail;  // last flit arrives at the current hop
  sc_core::sc_time t_inject;  // left its source (a GPU, or a switch's reduction table)
  uint8_t* data = nullptr;  // max_payload bytes owned by the pool
};
static_assert(sizeof(Packet) <= 96, "a packet's header fields fit in 96 bytes");

// Packet sizing (Klenk §V): 16 B header flit, payload in 16 B flits, 128 B max.
struct PacketFormat {
  uint32_t header_bytes = 16;
  uint32_t flit_bytes = 16;
  uint32_t max_payload_bytes = 128;
  uint16_t wire_bytes(uint32_t payload) const {
    return static_cast<uint16_t>(header_bytes + (payload + flit_bytes - 1) / flit_bytes * flit_bytes);
  }
  // Read requests and write acks are single header flits (Klenk §V); a
  // read's payload_bytes is the length it asks for, not what it carries.
  uint16_t wire_bytes(Op op, uint32_t payload) const {
    return op == Op::Read || op == Op::WriteAck || op == Op::PullRead ? static_cast<uint16_t>(header_bytes)
                                                                      : wire_bytes(payload);
  }
};
inline const Param<uint32_t> kHeaderBytes{"net.header_bytes", 16, Range::at_least(1).at_most(1024),
                                          "header flit, bytes (Klenk §V)"};
inline const Param<uint32_t> kFlitBytes{"net.flit_bytes", 16, Range::at_least(1).at_most(1024),
                                        "flit size, bytes (Klenk §V: one 16 B header flit)"};
// A payload holds at least an 8-byte flag store, in whole 4-byte words;
// sizes stay far from the 16-bit wire-size field.
inline const Param<uint32_t> kMaxPayloadBytes{
    "net.max_payload_bytes", 128, Range::at_least(8).at_most(4096),
    "largest payload per packet, bytes (dgx2, fattree2l, star, YAML files: 128, Klenk §V; torus, mesh, fattree, "
    "bigraph: 256, MultiTree Table III's payload for the baselines; 128 there too for push, pull and multicast, "
    "which reduce 128-byte blocks, Klenk §IV-D; dgx1v, dgx1p: 256, NVLink's 16 data flits, Foley and Danskin 2017; hgx-*, nvl72: 128, the SMs' cache-line "
    "stores, Klenk §V)"};

// First-in first-out queue threaded through Packet::next.
class PacketFifo {
 public:
  bool empty() const { return head_ == nullptr; }
  Packet* front() const { return head_; }
  Packet* back() const { return tail_; }
  uint32_t size() const { return size_; }
  void push(Packet* p) {
    p->next = nullptr;
    if (tail_) tail_->next = p;
    else head_ = p;
    tail_ = p;
    ++size_;
  }
  Packet* pop() {
    Packet* p = head_;
    head_ = p->next;
    if (!head_) tail_ = nullptr;
    p->next = nullptr;
    --size_;
    return p;
  }

 private:
  Packet* head_ = nullptr;
  Packet* tail_ = nullptr;
  uint32_t size_ = 0;
};
// "  <who> <what> vc<k>: n packets, head #id ..." if f holds packets (a
// stall report's line); returns how many it holds.
uint64_t report_queue(std::ostream& os, const char* who, const char* what, int vc, const PacketFifo& f);

// Packets are recycled: get() allocates only while the pool grows to the
// number of packets ever in flight at once.
class PacketPool {
 public:
  explicit PacketPool(PacketFormat fmt) : fmt_(fmt) {}
  ~PacketPool();
  PacketPool(const PacketPool&) = delete;
  PacketPool& operator=(const PacketPool&) = delete;

  Packet* get() { return take(free_, fmt_.max_payload_bytes); }
  // A packet for at most `bytes` of data, which will not grow: where the
  // format's packets are large (a 4 KiB MTU), a 128-byte SHARP block takes
  // a small one (its 4 KiB would make memory follow blocks in flight x 4 KiB).
  Packet* get(uint32_t bytes) {
    return bytes <= kSmallBytes && fmt_.max_payload_bytes > kSmallBytes ? take(small_, kSmallBytes) : get();
  }
  void put(Packet* p) {
    --in_use_;
    (p->capacity < fmt_.max_payload_bytes ? small_ : free_).push(p);
  }
  const PacketFormat& format() const { return fmt_; }
  uint64_t in_use() const { return in_use_; }
  uint64_t capacity() const { return capacity_; }
  static constexpr uint32_t kSmallBytes = 256;

 private:
  Packet* take(PacketFifo& list, uint32_t bytes) {
    if (list.empty()) grow(list, bytes);
    Packet* p = list.pop();
    p->id = next_id_++;
    p->count = 0;
    p->mc_pending = 0;
    p->home_switch = -1;
    p->lines = Lines::Plain;
    p->merge = p->more = p->last = false;
    ++in_use_;
    return p;
  }
  void grow(PacketFifo& list, uint32_t bytes);
  PacketFormat fmt_;
  PacketFifo free_, small_;
  uint64_t next_id_ = 0, in_use_ = 0, capacity_ = 0;
  struct Slab;
  Slab* slabs_ = nullptr;
};

}  // namespace incsim::net
