#include "timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>

#include "trace.h"

namespace incsim {

namespace {
// States: an index the block is working on, negative when idle.
bool state_signal(const std::string& leaf) {
  for (const char* s : {"step", "chunk", "timestep", "layer", "descriptor", "wave"})
    if (leaf == s) return true;
  return false;
}

constexpr size_t kMaxBins = 512;

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Trace-event times are microseconds.
std::string us(uint64_t ps) { return fmt::format("{:.6f}", static_cast<double>(ps) / 1e6); }
}  // namespace

template <class T>
void Timeline::watch(const T* object, const std::string& name) {
  const size_t dot = name.rfind('.');
  const std::string leaf = dot == std::string::npos ? name : name.substr(dot + 1);
  const bool state = state_signal(leaf);
  if (!state && !level_signal(leaf)) return;
  const size_t first = name.find('.');
  Track t;
  t.block = name.substr(0, first);
  t.name = first == std::string::npos ? name : name.substr(first + 1);
  t.object = object;
  t.read = [](const void* p) { return static_cast<int64_t>(*static_cast<const T*>(p)); };
  t.state = state;
  t.value = t.read(object);
  t.since_ps = now_ps();
  tracks_.push_back(std::move(t));
}

void Timeline::add_link(const std::string& port, const std::string& to, std::function<uint64_t()> bytes_sent) {
  const size_t first = port.find('.');
  Track t;
  t.block = port.substr(0, first);
  t.name = "port" + port.substr(first + 1) + " to " + to + " (GB/s)";
  t.counted = bytes_sent();
  t.bytes_sent = std::move(bytes_sent);
  tracks_.push_back(std::move(t));
}

// A level's value times its duration, spread over the bins it covers.
void Timeline::add_level(Track& t, uint64_t from_ps, uint64_t to_ps) {
  while (from_ps < to_ps) {
    const size_t bin = from_ps / bin_ps_;
    const uint64_t end = std::min(to_ps, (bin + 1) * bin_ps_);
    if (t.bins.size() <= bin) t.bins.resize(bin + 1, 0.0);
    t.bins[bin] += static_cast<double>(t.value) * static_cast<double>(end - from_ps);
    from_ps = end;
  }
}

void Timeline::widen() {
  for (Track& t : tracks_) {
    for (size_t i = 0; 2 * i < t.bins.size(); ++i)
      t.bins[i] = t.bins[2 * i] + (2 * i + 1 < t.bins.size() ? t.bins[2 * i + 1] : 0.0);
    t.bins.resize((t.bins.size() + 1) / 2);
  }
  bin_ps_ *= 2;
}

// Each link's bytes since the last look go to `bin`.
void Timeline::bin_links(size_t bin) {
  for (Track& t : tracks_)
    if (t.bytes_sent) {
      const uint64_t sent = t.bytes_sent();
      if (sent == t.counted) continue;
      if (t.bins.size() <= bin) t.bins.resize(bin + 1, 0.0);
      t.bins[bin] += static_cast<double>(sent - t.counted);
      t.counted = sent;
    }
}

// Links are read once per bin, at the first time step in a later bin: what
// they sent goes to the bin of the step before (a packet sent at that step
// itself lands one bin early, at most one bin's skew).
void Timeline::advance(uint64_t now) {
  while (now / bin_ps_ >= kMaxBins) widen();
  if (now / bin_ps_ == looked_ps_ / bin_ps_) return;
  bin_links(looked_ps_ / bin_ps_);
  looked_ps_ = now;
}

void Timeline::cycle(bool delta_cycle) {
  if (delta_cycle) return;
  const uint64_t now = now_ps();
  advance(now);
  for (Track& t : tracks_) {
    if (!t.read) continue;
    const int64_t v = t.read(t.object);
    if (v == t.value) continue;
    if (t.state) {
      if (t.value >= 0 && now > t.since_ps) t.spans.push_back({t.value, t.since_ps, now});
    } else {
      add_level(t, t.since_ps, now);
    }
    t.value = v;
    t.since_ps = now;
  }
}

std::string Timeline::json() {
  const uint64_t end = now_ps();
  cycle(false);
  bin_links(end / bin_ps_);  // the last bin takes what is left
  std::string out = "{\"traceEvents\": [\n";
  bool first_event = true;
  auto event = [&](const std::string& e) {
    out += first_event ? " " : ",\n ";
    out += e;
    first_event = false;
  };
  std::map<std::string, int> pid;
  std::map<std::pair<int, std::string>, int> tid;
  for (Track& t : tracks_) {
    if (t.state && t.value >= 0 && end > t.since_ps) t.spans.push_back({t.value, t.since_ps, end});
    if (!t.state && t.read) add_level(t, t.since_ps, end);
    t.since_ps = end;
    const bool empty = t.state ? t.spans.empty()
                               : std::all_of(t.bins.begin(), t.bins.end(), [](double b) { return b == 0; });
    if (empty) continue;
    const auto [p, fresh] = pid.emplace(t.block, static_cast<int>(pid.size()));
    if (fresh) {
      event(fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": {}}}}})", p->second,
                        quoted(t.block)));
      event(fmt::format(R"({{"name": "process_sort_index", "ph": "M", "pid": {}, "args": {{"sort_index": {}}}}})",
                        p->second, p->second));
    }
    if (t.state) {
      const auto [k, made] = tid.emplace(std::make_pair(p->second, t.name), static_cast<int>(tid.size()));
      if (made)
        event(fmt::format(R"({{"name": "thread_name", "ph": "M", "pid": {}, "tid": {}, "args": {{"name": {}}}}})",
                          p->second, k->second, quoted(t.name)));
      const std::string leaf = t.name.substr(t.name.rfind('.') + 1);
      for (const Span& s : t.spans)
        event(fmt::format(R"({{"name": "{} {}", "ph": "X", "pid": {}, "tid": {}, "ts": {}, "dur": {}}})", leaf,
                          s.value, p->second, k->second, us(s.start_ps), us(s.end_ps - s.start_ps)));
      continue;
    }
    // A counter: a point where its value changes; a level's mean over the
    // bin, a link's bytes per ns (GB/s); the last bin ends at the run's end,
    // where the counter drops to 0.
    double last = -1;
    for (size_t b = 0; b == 0 || b * bin_ps_ < end; ++b) {
      const uint64_t from = b * bin_ps_;
      const uint64_t span = std::min(end, from + bin_ps_) - from;
      const double sum = b < t.bins.size() ? t.bins[b] : 0.0;
      const double v = span == 0 ? 0 : sum / static_cast<double>(span) * (t.bytes_sent ? 1000.0 : 1.0);
      if (v == last) continue;
      last = v;
      event(fmt::format(R"({{"name": {}, "ph": "C", "pid": {}, "ts": {}, "args": {{"value": {:.9g}}}}})",
                        quoted(t.name), p->second, us(from), v));
    }
    if (last != 0)  // the run's end
      event(fmt::format(R"({{"name": {}, "ph": "C", "pid": {}, "ts": {}, "args": {{"value": 0}}}})", quoted(t.name),
                        p->second, us(end)));
  }
  return out + "\n],\n\"displayTimeUnit\": \"ns\"}\n";
}

}  // namespace incsim
