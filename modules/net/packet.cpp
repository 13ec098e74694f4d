#include "packet.h"

#include <memory>

namespace incsim::net {

uint64_t report_queue(std::ostream& os, const char* who, const char* what, int vc, const PacketFifo& f) {
  if (f.empty()) return 0;
  const Packet* h = f.front();
  os << "  " << who << " " << what << " vc" << vc << ": " << f.size() << " packets, head #" << h->id << " "
     << op_name(h->op) << " from endpoint " << h->src << " to endpoint " << h->dst << "\n";
  return f.size();
}

const char* op_name(Op op) {
  switch (op) {
    case Op::Write: return "write";
    case Op::WriteAck: return "write-ack";
    case Op::Read: return "read";
    case Op::ReadResp: return "read-response";
    case Op::ReduceWrite: return "reduce-write";
    case Op::PullRead: return "pull-read";
    case Op::PullResp: return "pull-response";
    case Op::Partial: return "partial";
    case Op::ReduceMsg: return "reduce-message";
    case Op::GatherMsg: return "gather-message";
    case Op::PostedWrite: return "posted-write";
  }
  return "?";
}

struct PacketPool::Slab {
  static constexpr size_t kPackets = 1024;
  Slab* next;
  std::unique_ptr<Packet[]> packets;
  std::unique_ptr<uint8_t[]> data;
};

void PacketPool::grow(PacketFifo& list, uint32_t bytes) {
  auto* s = new Slab{slabs_, std::make_unique<Packet[]>(Slab::kPackets),
                     std::make_unique<uint8_t[]>(Slab::kPackets * bytes)};
  slabs_ = s;
  for (size_t i = 0; i < Slab::kPackets; ++i) {
    s->packets[i].data = &s->data[i * bytes];
    s->packets[i].capacity = static_cast<uint16_t>(bytes);
    list.push(&s->packets[i]);
  }
  capacity_ += Slab::kPackets;
}

PacketPool::~PacketPool() {
  while (slabs_) {
    Slab* n = slabs_->next;
    delete slabs_;
    slabs_ = n;
  }
}

}  // namespace incsim::net
