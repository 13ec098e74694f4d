#pragma once
// The GPU's cores executing a collective program (docs/programs.md): each
// queue of a rank's Cores operations is a thread block, each (channel, peer)
// pair a connection with a mailbox of slots in the receiver's memory, and
// every transfer NCCL's Simple protocol (Klenk §III, §V): the data's stores,
// a fence that waits for every write ack, then a flag store; the receiver
// polls the flag, reduces or copies the data, forwards it, and frees the
// slot with a flag back to the sender. The software ring is ring_program run
// by this engine.
//
// In-network operations are NVLS's, which the cores issue (NCCL's NVLS
// kernels, src/device/all_reduce.h): a reducing read is multimem.ld_reduce,
// loads of a group's region that the NVSwitches fan out to every member and
// answer with the sum (Klenk's pull); a multicast write is multimem.st,
// stores the switches copy to every member. Their packets carry blocks of at
// most 128 bytes, spread over the GPU's ports toward the group as the GPU
// interleaves addresses over its links. A member that only lends its data to
// a read, or only receives a multicast, runs nothing: its memory answers
// the reads, and the multicast's data is taken as it lands. A reducing
// write (push; SHARP across a cluster's network) sends the GPU's blocks to
// their home switch, which adds the group's and multicasts the sum back to
// every member, the writer too; the queue goes on once its last block has
// left, the operation completes as its results land.
//
// A program describes one pass over the message; the message is cut into
// passes of the program's chunks, each chunk_bytes at most, and every queue
// runs its operations once per pass. A queue's operations run in order, with
// one exception that pipelines the passes: the next pass may start while a
// trailing receive of the previous one (an operation that only receives)
// waits for its data; receives still complete first in, first out.
#include <memory>
#include <string>
#include <vector>

#include "elements/alu.h"
#include "elements/data_pattern.h"
#include "collectives/layout.h"
#include "collectives/nccl.h"
#include "collectives/program.h"
#include "gpu/collective.h"
#include "gpu/cores.h"
#include "gpu/gpu.h"
#include "core/param.h"
#include "topology/multicast.h"

namespace incsim::gpu {

class CoresRank;

class CoresCollective : public Collective {
 public:
  // gpus[r] runs rank r; ports[r][q] are the ports of rank r's GPU that
  // reach rank q's (connections take them in turn by channel). The message
  // size is nccl-tests': the whole buffer, of which each rank owns 1/n in
  // reduce-scatter (output) and all-gather (input), and of which an
  // all-to-all's rank sends 1/n to each peer. The program must have passed
  // check_program; its operations must all be the cores'. fabric: the
  // switches' multicast regions, for a program with in-network operations.
  CoresCollective(collectives::Program program, std::vector<Gpu*> gpus, std::vector<std::vector<std::vector<int>>> ports,
                  elements::DType dtype, elements::RedOp redop, uint64_t seed, CoresParams params,
                  topo::MulticastFabric* fabric = nullptr);
  ~CoresCollective() override;
  void start(uint64_t bytes, std::function<void()> on_done) override;
  uint64_t wrong() const override;
  double done_fraction() const override;  // transfers sent of all queues' transfers
  std::string redop() const override;
  int sm_blocks() const override { return channels_; }  // a thread block per channel
  // Where group g's result region starts (its reducing writes' and
  // multicast stores' addresses, GroupWindow::kOut into its window).
  uint64_t group_out(int g) const;

  // An in-network group: its window of the multicast address space and its regions there.
  struct Group {
    int window = -1;
    uint64_t base = 0;
    std::vector<int> members;
    bool reads = false, writes = false, pushes = false;  // has reducing reads, multicast writes, reducing writes
    int in = -1, out = -1;               // their regions in this size's run
  };

 private:
  friend class CoresRank;
  void rank_done();
  // NCCL's proxies' time on a step from rank a's GPU to rank b's, under
  // this size's protocol, or on its slot's way back (head): CoresParams::net
  // between nodes, else none.
  sc_core::sc_time proxied(int a, int b, bool head = false) const;
  // UserError if the cores cannot run the program's in-network operations.
  void check_in_network() const;
  void remove_regions();
  topo::MulticastFabric* fabric_;
  std::vector<Group> groups_;
  collectives::Program program_;
  std::vector<Gpu*> gpus_;
  std::vector<std::vector<std::vector<int>>> ports_;
  elements::DType dtype_;
  uint32_t elem_;  // bytes of an element of dtype_
  elements::RedOp redop_;
  elements::DataPattern data_;
  bool copies_are_results_;  // nothing is reduced (all-gather, broadcast, ...): a fault garbles the cores' copies
  // Takes protocol p for the next collective (UserError if its lines do
  // not fit a packet).
  void use_protocol(collectives::Protocol p);
  CoresParams params_;
  collectives::Protocol proto_;  // every operation's, or this size's by ring.protocol=auto
  SlotParams slot_params_;       // the protocol's
  uint32_t packet_data_ = 0;     // data bytes per packet
  uint32_t message_chunks_ = 0;  // chunks of the message per pass
  int channels_ = 1;             // the program's channels
  int parts_ = 1;                // the message's parts, one per channel or one
  size_t max_conns_ = 0;         // connections of one direction on any rank: the flags' records
  std::unique_ptr<collectives::PassLayout> layout_;  // this size's passes
  std::vector<std::unique_ptr<CoresRank>> ranks_;
  std::function<void()> on_done_;
  int running_ = 0;
};

}  // namespace incsim::gpu
