#pragma once
// A GPU's InfiniBand adapter (HCA, a ConnectX-7 in a DGX H100): the bridge
// between the GPU's fabric, which it sits on over PCIe, and the scale-out
// network (docs/modern-machines.md, "Clusters"). Port 0 faces the GPU and
// carries the GPU fabric's packets; port 1 faces the network's rail leaf and
// carries InfiniBand packets of up to an MTU.
//
// Towards the network it is GPUDirect RDMA's send side over a reliable
// connection: it takes the GPU's writes to a GPU in another node, gathers
// consecutive ones of a stream into one network packet (up to the MTU on the
// wire, as the NIC's DMA reads a message in MTU-sized pieces; LL and LL128
// writes cross in their lines, flags and all, as NCCL's proxy posts their
// buffers: net::Lines; a message's, an NCCL step's, close only when full
// or at its end, as the proxy posts a step once all of it is written:
// net::Packet::more; the GPU's port hands it one stream's writes a packet
// at a time, packet_reads), numbers it in its
// connection (the packet sequence number, here Packet::table, one connection
// per pair of GPUs), and acknowledges each write to the GPU once its packet
// is queued: the adapter now owns its delivery, as the reliable connection
// does. Towards the GPU it delivers each connection's packets in sequence,
// holding the ones that overtook another on the network's adaptive routes,
// splits them into the GPU fabric's writes (PCIe keeps them in order) and
// absorbs the GPU memory's acknowledgements. So the software ring's flag,
// written after its data's acknowledgements, lands after the data. The
// network is lossless and credit-based: nothing is retransmitted, and the
// connection's own acknowledgements (a header per message or so, back) are
// left out.
//
// In-network aggregation (SHARP): a GPU's reducing write to a multicast
// region goes out as one network packet of its own toward its home switch,
// posted, outside any connection; the sum the switch multicasts back reaches
// the GPU as a multicast write. The GPU's cores hold the credits that keep
// the switch's aggregation buffers from overflowing.
#include <cstdint>
#include <ostream>
#include <systemc>
#include <vector>

#include "core/log.h"
#include "core/param.h"
#include "core/process.h"
#include "net/block.h"
#include "net/packet.h"
#include "net/port.h"

namespace incsim::adapter {

inline const Param<double> kHcaLatency{
    "hca.latency_ns", 300.0, Range::at_least(0).at_most(1e9),
    "an InfiniBand adapter's pipeline, each direction, ns (half the 'sub 0.6 usec' end-to-end latency of "
    "NVIDIA's ConnectX-6 VPI product brief; NVIDIA gives none for ConnectX-7: a guess)"};
inline const Param<uint32_t> kHcaSendQueue{
    "hca.send_queue_bytes", 64 * 1024, Range::at_least(4096).at_most(64 << 20),
    "data an adapter has taken from its GPU and not yet put on the wire, bytes: its send buffering (our "
    "choice, 16 MTU-sized packets; the adapter reads GPU memory on demand)"};

struct HcaConfig {
  sc_core::sc_time latency;          // hca.latency_ns, each direction
  uint32_t endpoints = 0;            // GPUs on the machine: the connections' peers
  uint32_t mtu_bytes = 4096;         // network packet payload
  uint32_t send_queue_bytes = 0;     // hca.send_queue_bytes (RoCE: roce.adapter_window_bytes)
  uint32_t pcie_buffer_bytes = 0;    // input buffer per VC facing the GPU
  uint32_t net_buffer_bytes = 0;     // input buffer per VC facing the network
  uint32_t gpu = 0;                  // the GPU on its PCIe side (an endpoint index)
};

// The GPU side every adapter shares (port 0, PCIe): it gathers the GPU's
// writes into network packets of up to the MTU and acknowledges them, and
// splits the network packets its network side hands it into the GPU
// fabric's writes. The network side (port 1) is the derived class's: Hca's
// InfiniBand below, RoceBridge's RoCE (roce_bridge.h).
class Adapter : public sc_core::sc_module, public net::PacketSink, public net::Block {
 public:
  static constexpr int kPcie = 0, kNet = 1;
  // gpu_pool: the GPU fabric's packets; net_pool: the network packets it gathers and splits.
  Adapter(sc_core::sc_module_name name, const HcaConfig& cfg, net::PacketPool& gpu_pool, net::PacketPool& net_pool);

  int num_ports() const override { return 2; }
  // The NIC builds each packet from one queue pair's posted send, read over
  // PCIe an MTU at a time: its GPU's port keeps to one stream that long.
  uint32_t packet_reads(int p) const override { return p == kPcie ? cfg_.mtu_bytes : 0; }
  uint64_t progress() const override { return writes_sent_ + writes_delivered_; }
  void trace(sc_core::sc_trace_file* tf) const override;
  uint64_t report_held(std::ostream& os) const override;

  // Network packets sent, their payload bytes, and the GPU writes they
  // carried; GPU writes delivered from the network.
  uint64_t packets_sent() const { return packets_sent_; }
  uint64_t payload_sent() const { return payload_sent_; }
  uint64_t writes_sent() const { return writes_sent_; }
  uint64_t writes_delivered() const { return writes_delivered_; }

 protected:
  // The network side. Whether it takes a packet now (else it has arranged
  // to wake to_network); whether it takes n now (likewise); n goes out:
  // true if another may follow at once.
  virtual bool network_ready(sc_core::sc_time now) = 0;
  virtual bool can_transmit(const net::Packet& n, sc_core::sc_time now) = 0;
  virtual bool transmit(net::Packet* n, sc_core::sc_time now) = 0;
  // The GPU fabric's side of the Block interface, and its packets.
  void configure_pcie(double bw_GBps, sc_core::sc_time latency, uint32_t peer_buffer_bytes) {
    pcie_out_.configure(bw_GBps, latency, peer_buffer_bytes, &down_wake_);
  }
  void from_gpu(net::Packet* p);
  net::InPort& pcie_in() { return pcie_in_; }
  net::OutPort& pcie_out() { return pcie_out_; }
  // A network packet for the GPU, in its turn; the network side gets it
  // back (done_with) once split.
  void to_gpu_queue(net::Packet* p);
  virtual void done_with(net::Packet* n) { net_pool_.put(n); }
  void wake_to_network(sc_core::sc_time at) { up_wake_.at(at); }
  Wakeup& network_wake() { return up_wake_; }
  // Bytes taken from the GPU that the network side no longer holds.
  void free_send_bytes(uint32_t bytes) { queued_bytes_ -= bytes; }
  const HcaConfig& config() const { return cfg_; }
  net::PacketPool& net_pool() { return net_pool_; }
  log::Logger& logger() { return log_; }

 private:
  // A network packet being filled from one stream's writes, and those
  // writes, kept to become their acknowledgements (the last says whether
  // more of its message follows: net::Packet::more).
  struct Open {
    net::Packet* packet;
    net::PacketFifo writes;
  };

  void to_network();  // serves the network side
  void to_gpu();      // serves port 0's wire
  void take(net::Packet* w);
  void close(size_t open);
  void push_out(net::Packet* w);  // a reducing write goes out as a network packet of its own
  // w's header as a network packet's, no payload yet, for at most `bytes` of it.
  net::Packet* network_packet(const net::Packet& w, uint32_t bytes);
  void append(net::Packet& n, net::Packet* w);          // w's data to n's payload; w's buffer space is free

  HcaConfig cfg_;
  net::PacketPool& gpu_pool_;
  net::PacketPool& net_pool_;
  net::InPort pcie_in_;
  net::OutPort pcie_out_;
  Wakeup up_wake_, down_wake_;
  sc_core::sc_time pcie_pick_at_;  // when the packet the wire picked ahead starts
  net::PacketFifo from_gpu_;    // the GPU's writes, arrived, not yet taken
  std::vector<Open> open_;      // oldest first
  net::PacketFifo to_net_;      // closed network packets, in order
  std::vector<uint16_t> next_psn_;      // [destination GPU]: the sequence number its next packet takes
  net::PacketFifo acks_;        // acknowledgements for the GPU
  net::PacketFifo from_net_;    // network packets being split for the GPU
  uint32_t split_offset_ = 0;   // bytes of from_net_'s head already sent on
  uint64_t queued_bytes_ = 0;   // taken from the GPU, still held by the network side
  uint64_t packets_sent_ = 0, payload_sent_ = 0, writes_sent_ = 0, writes_delivered_ = 0;
  int held_up_ = 0, held_down_ = 0;  // from_gpu_'s and from_net_'s sizes, as signals for the waveform
  log::Logger log_;
};

// The InfiniBand adapter: port 1 faces the rail leaf and carries InfiniBand
// packets of up to an MTU, numbered per connection, put back in sequence
// on arrival.
class Hca : public Adapter {
 public:
  Hca(sc_core::sc_module_name name, const HcaConfig& cfg, net::PacketPool& gpu_pool, net::PacketPool& net_pool);

  net::InPort& in(int p) override { return p == kPcie ? pcie_in() : net_in_; }
  net::OutPort& out(int p) override { return p == kPcie ? pcie_out() : net_out_; }
  void configure_port(int p, double bw_GBps, sc_core::sc_time latency, uint32_t peer_buffer_bytes) override;
  uint32_t buffer_bytes(int p) const override {
    return p == kPcie ? config().pcie_buffer_bytes : config().net_buffer_bytes;
  }
  void receive(int port, net::Packet* p) override;
  void trace(sc_core::sc_trace_file* tf) const override;
  uint64_t report_held(std::ostream& os) const override;
  // Network packets that arrived ahead of one sent before them in their connection.
  uint64_t reordered() const { return reordered_; }

 private:
  bool network_ready(sc_core::sc_time now) override;
  bool can_transmit(const net::Packet& n, sc_core::sc_time now) override;
  bool transmit(net::Packet* n, sc_core::sc_time now) override;
  void done_with(net::Packet* n) override;
  void deliver(net::Packet* p);  // p is next in its connection: to the GPU

  net::InPort net_in_;
  net::OutPort net_out_;
  sc_core::sc_time net_pick_at_;  // when the packet the wire picked ahead starts
  std::vector<uint16_t> expected_psn_;  // [source GPU]: the one delivered next
  std::vector<net::PacketFifo> early_;  // [source GPU]: packets that overtook, their buffer space freed
  uint64_t reordered_ = 0;
};

}  // namespace incsim::adapter
