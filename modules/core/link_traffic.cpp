#include "link_traffic.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <istream>
#include <ostream>
#include <tuple>

namespace incsim {

namespace {
// "gpu0.3" to "sw0.1": gpu0_3_to_sw0_1, with no dot (GTKWave's hierarchy separator).
std::string signal_name(const std::string& port, const std::string& to) {
  std::string s = port + "_to_" + to;
  std::replace(s.begin(), s.end(), '.', '_');
  return s;
}
}  // namespace

LinkTraffic::LinkTraffic(double interval_ns)
    : interval_ps_(std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(interval_ns * 1000.0)))) {}

void LinkTraffic::add_link(const std::string& port, const std::string& to, double bw_GBps,
                           std::function<uint64_t()> bytes_sent) {
  Link l;
  l.name = signal_name(port, to);
  l.wire_bytes = bw_GBps * static_cast<double>(interval_ps_) / 1000.0;  // GB/s x ns
  l.counted = bytes_sent();
  l.bytes_sent = std::move(bytes_sent);
  links_.push_back(std::move(l));
}

// What a link sent in this time step was sent at this step's time.
void LinkTraffic::cycle(bool delta_cycle) {
  if (delta_cycle) return;
  const uint64_t window = now_ps() / interval_ps_;
  for (Link& l : links_) {
    const uint64_t sent = l.bytes_sent();
    if (sent == l.counted) continue;
    if (l.windows.empty() || l.windows.back().first != window) l.windows.emplace_back(window, 0.0);
    l.windows.back().second += static_cast<double>(sent - l.counted);
    l.counted = sent;
  }
}

uint64_t LinkTraffic::merge(std::istream& in, std::ostream& out) {
  // Every change, (time, link, percent): each active interval's share at its
  // start, and 0 at the end of a run of them.
  std::vector<std::tuple<uint64_t, size_t, double>> changes;
  std::vector<size_t> active;
  for (size_t k = 0; k < links_.size(); ++k) {
    const Link& l = links_[k];
    if (l.windows.empty()) continue;
    active.push_back(k);
    double last = 0;
    for (size_t i = 0; i < l.windows.size(); ++i) {
      const auto [w, bytes] = l.windows[i];
      const double pct = l.wire_bytes > 0 ? std::min(100.0, std::round(1000.0 * bytes / l.wire_bytes) / 10.0) : 0.0;
      if (pct != last) changes.emplace_back(w * interval_ps_, k, last = pct);
      if (i + 1 == l.windows.size() || l.windows[i + 1].first != w + 1) {
        changes.emplace_back((w + 1) * interval_ps_, k, 0.0);
        last = 0;
      }
    }
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  const auto id = [](size_t k) { return fmt::format("L{}", k); };  // SystemC's ids are lower case
  size_t next = 0;
  uint64_t last = ~0ull;  // the last time stamp written; none yet
  const auto flush = [&](uint64_t before, bool with_time) {
    for (; next < changes.size() && std::get<0>(changes[next]) < before; ++next) {
      const auto& [t, k, pct] = changes[next];
      if (with_time && t != last) out << '#' << (last = t) << '\n';
      out << 'r' << pct << ' ' << id(k) << '\n';
    }
  };
  // Inside the top scope, first: the save file lists the links first.
  out << "$scope module links $end\n";
  for (size_t k : active) out << "$var real 64 " << id(k) << ' ' << links_[k].name << " $end\n";
  out << "$upscope $end\n";
  bool defined = false;
  for (std::string line; std::getline(in, line);) {
    if (defined && !line.empty() && line[0] == '#') {
      const uint64_t t = std::strtoull(line.c_str() + 1, nullptr, 10);
      flush(t, true);
      out << line << '\n';
      last = t;
      flush(t + 1, false);  // the changes at t join SystemC's block of t
      continue;
    }
    out << line << '\n';
    if (line.rfind("$dumpvars", 0) == 0) {
      for (size_t k : active) out << "r0 " << id(k) << '\n';
      defined = true;
    }
  }
  flush(~0ull, true);
  return last == ~0ull ? 0 : last;
}

}  // namespace incsim
