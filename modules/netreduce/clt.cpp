#include "clt.h"

#include <string>

namespace incsim::netreduce {

ConnectionLookupTable::ConnectionLookupTable(sc_core::sc_module_name name, uint32_t capacity)
    : sc_module(name), log(this->name()), slots_(capacity) {}

void ConnectionLookupTable::trace(sc_core::sc_trace_file* tf) const {
  sc_core::sc_trace(tf, trace_used_, std::string(name()) + ".occupancy");
}

void ConnectionLookupTable::report(std::ostream& os) const {
  if (used_) os << "  " << name() << ": " << used_ << " of " << capacity() << " connections\n";
}

void ConnectionLookupTable::add_ring(uint16_t ring, uint32_t msg_len) {
  if (ring >= ring_len_.size()) ring_len_.resize(ring + 1u, 0);
  ring_len_[ring] = msg_len;
}

size_t ConnectionLookupTable::find(const ConnKey& k) const {
  const size_t n = slots_.size();
  uint64_t h = (uint64_t{k.src_ip} * 0x9E3779B97F4A7C15ull) ^ (uint64_t{k.dst_ip} * 0xC2B2AE3D27D4EB4Full) ^
               (uint64_t{k.dst_qp} * 0x165667B19E3779F9ull);
  h ^= h >> 29;
  for (size_t i = 0; i < n; ++i) {
    const size_t s = (h + i) % n;
    if (!slots_[s].valid || slots_[s].key == k) return s;
  }
  return n;
}

Resolved ConnectionLookupTable::fill(const ConnKey& k, uint16_t ring, uint16_t rank, uint32_t msg_id,
                                     uint32_t msg_len, uint32_t psn, uint64_t va) {
  Resolved r;
  if (ring >= ring_len_.size() || !ring_len_[ring]) return r;  // NoEntry: no such ring here
  const size_t s = find(k);
  if (s == slots_.size()) {
    r.status = Resolved::TableFull;
    return r;
  }
  Entry& e = slots_[s];
  if (!e.valid) {
    e = Entry();
    e.valid = true;
    e.key = k;
    trace_used_ = static_cast<int>(++used_);
  }
  e.ring = ring;
  e.rank = rank;
  e.msg_id = msg_id;
  e.msg_len = msg_len;
  e.ring_len = ring_len_[ring];
  e.psn0 = psn;
  e.va = va;
  r.status = Resolved::Ok;
  r.ring = ring;
  r.rank = rank;
  r.msg = msg_id;
  r.offset = 0;
  r.msg_len = msg_len;
  return r;
}

Resolved ConnectionLookupTable::lookup(const ConnKey& k, uint32_t psn) const {
  Resolved r;
  const size_t s = find(k);
  if (s == slots_.size() || !slots_[s].valid) return r;  // NoEntry
  const Entry& e = slots_[s];
  r.ring = e.ring;
  r.rank = e.rank;
  const int64_t d = static_cast<int64_t>(psn) - static_cast<int64_t>(e.psn0);
  if (d >= 0) {
    if (d >= e.msg_len) {
      r.status = Resolved::FirstLost;
      return r;
    }
    r.msg = e.msg_id;
    r.offset = static_cast<uint32_t>(d);
    r.msg_len = e.msg_len;
  } else {
    const int64_t back = (-d + e.ring_len - 1) / e.ring_len;
    r.msg = static_cast<int64_t>(e.msg_id) - back;
    if (r.msg < 0) return r;  // NoEntry: before the ring's first message
    r.offset = static_cast<uint32_t>(d + back * e.ring_len);
    r.msg_len = e.ring_len;
  }
  r.status = Resolved::Ok;
  return r;
}

}  // namespace incsim::netreduce

namespace incsim::netreduce {

bool ConnectionLookupTable::locate(const ConnKey& k, int64_t msg, uint32_t offset, uint32_t mtu,
                                   Located* out) const {
  const size_t s = find(k);
  if (s == slots_.size() || !slots_[s].valid) return false;
  const Entry& e = slots_[s];
  if (msg > static_cast<int64_t>(e.msg_id)) return false;
  const int64_t delta = (msg - static_cast<int64_t>(e.msg_id)) * e.ring_len;
  const int64_t va = static_cast<int64_t>(e.va) + delta * mtu;
  if (va < 0) return false;
  out->psn = static_cast<uint32_t>(static_cast<int64_t>(e.psn0) + delta + offset);
  out->va = static_cast<uint64_t>(va);
  out->rank = e.rank;
  return true;
}

}  // namespace incsim::netreduce
