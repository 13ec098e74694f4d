#pragma once
// The RoCE hosts' programs run as flows (--fidelity flow, docs/flow.md):
// NetReduce's ring and aggregation and the hierarchical all-reduces of its
// §3 on its Ethernet platforms, with the operations and order of
// roce::HostProgram. Every operation's bytes are cut into messages of
// MsgLen packets, each one RDMA WRITE and one flow: a queue pair sends its
// messages one after another, each a work request's posting after it is
// posted; a message is seen by the receiving host its route's latency and
// the delivery's after its last byte left. A receive-and-send forwards a
// message once the whole of it is in; an aggregation posts up to N
// messages ahead of its results, and the k-th messages of a group's
// members are one flow through the FPGA port facing each member's
// connection (the switches' ACL rules), as the FPGA's aggregator returns
// each packet's sum once every member's is in. No element values travel.
// Plain C++.
#include <cstdint>
#include <optional>
#include <vector>

#include "collectives/program.h"
#include "flow/executor.h"
#include "flow/graph.h"
#include "flow/shared.h"

namespace incsim::flow {

// What packet level pays (roce/roce_nic.h, netreduce/fpga_aggregator.h,
// ethernet/roce_frame.h).
struct RoceCosts {
  double tx_ns = 0, rx_ns = 0;  // a work request posted to its first byte; a packet's last byte in to the host
  uint32_t mtu = 1024;          // payload bytes per packet
  uint32_t msg_len = 1;         // packets per message (MsgLen)
  uint32_t window = 1;          // an aggregation's messages in flight (N)
  double fpga_ns = 0;           // the FPGA's pipeline, a frame's last byte in to the result's first out
  // Wire bytes: every packet's headers (Ethernet with preamble and gap, IP,
  // UDP, BTH, ICRC); a message's first packet's RETH, and an aggregation's
  // INA header; an ACK frame, one per ack_every packets and per message.
  uint32_t frame_bytes = 0, reth_bytes = 0, ina_bytes = 0, ack_bytes = 0, ack_every = 1;
};

class RoceFlows : public Executor {
 public:
  // endpoints[r]: the host rank r runs on; fpga_links[r]: the graph link
  // between a switch and the FPGA port that rank r's aggregation connection
  // is redirected to (-1: none). The program must have passed
  // check_program and be the RoCE hosts' (roce::HostProgram runs it).
  // shared: the network start() runs on, whose graph it routes on.
  RoceFlows(collectives::Program p, const FlowMachine& m, std::vector<int> endpoints, std::vector<int> fpga_links,
            RoceCosts costs, uint32_t elem_bytes, SharedNetwork* shared = nullptr);
  ~RoceFlows() override;
  Result run(uint64_t bytes, const Progress& progress = {}) override;
  std::unique_ptr<Running> start(uint64_t bytes, Network& on, Done done) override;
  const collectives::Program& program() const override { return p_; }
  // Bytes on the wire per byte of an operation's payload: every packet's
  // headers, and a message's first packet's (with an INA header for an
  // aggregation) shared by its MsgLen packets.
  double wire_per_byte(bool aggregation) const;

 private:
  class Run;

  collectives::Program p_;
  const FlowMachine& m_;
  std::vector<int> endpoints_, fpga_links_;
  RoceCosts costs_;
  uint32_t elem_;
  SharedNetwork* shared_;
  std::optional<FlowGraph> own_graph_;
  FlowGraph* graph_;
};

}  // namespace incsim::flow
