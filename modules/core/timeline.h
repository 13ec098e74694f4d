#pragma once
// A timeline of any run (--timeline FILE.json) in Chrome's trace-event
// format, for Perfetto (ui.perfetto.dev) or chrome://tracing: what the
// waveform shows, without GTKWave. It is a SystemC trace file, so every
// block's trace() feeds it exactly as it feeds the VCD, with no code of its
// own in any block:
//   - a block's state that is an index, -1 when idle (the cores' step and
//     chunk, the copy engine's descriptor and wave, a NIC's schedule entry
//     and timestep, the compute engine's layer and phase), becomes spans on
//     a track of the block's process;
//   - a level (what the save file draws as an analog step: occupancies,
//     queues, outstanding waves, busy aggregators) becomes a counter, its
//     time-weighted mean per bin;
//   - each link end the driver adds (add_link) becomes a counter of the
//     bytes its sender put on the wire per bin, in GB/s.
// Cumulative counts (hits, misses, per-VC credits and buffer bytes) stay in
// the VCD only. Bins start at 16 ns and double, merging pairs, whenever the
// run outgrows 512 of them, so a counter has at most 512 points however long
// the run; spans are exact. The same run gives the same bytes.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <systemc>
#include <vector>

#include "trace_hook.h"

namespace incsim {

class Timeline : public TraceHook {
 public:

  // A link end named `port` ("gpu0.1": gpu0's port 1) to `to`: `bytes_sent` reads
  // its sender's total so far; the counter goes to the port's block.
  void add_link(const std::string& port, const std::string& to, std::function<uint64_t()> bytes_sent);
  // Closes the last spans and bins at the current time and returns the
  // trace-event JSON document.
  std::string json();

  // Integers are kept where their name says what they are; every other
  // type is not traced by any block and is ignored (TraceHook).
  using TraceHook::trace;
#define INCSIM_TIMELINE_INT(tp) \
  void trace(const tp& object, const std::string& name, int) override { watch(&object, name); }
  INCSIM_TIMELINE_INT(unsigned char)
  INCSIM_TIMELINE_INT(unsigned short)
  INCSIM_TIMELINE_INT(unsigned int)
  INCSIM_TIMELINE_INT(unsigned long)
  INCSIM_TIMELINE_INT(char)
  INCSIM_TIMELINE_INT(short)
  INCSIM_TIMELINE_INT(int)
  INCSIM_TIMELINE_INT(long)
  INCSIM_TIMELINE_INT(sc_dt::int64)
  INCSIM_TIMELINE_INT(sc_dt::uint64)
#undef INCSIM_TIMELINE_INT

 protected:
  void cycle(bool delta_cycle) override;

 private:
  struct Span {
    int64_t value;
    uint64_t start_ps, end_ps;
  };
  // One traced integer: a state's spans, or a level's or link's bins.
  struct Track {
    std::string block, name;
    const void* object = nullptr;
    int64_t (*read)(const void*) = nullptr;
    bool state = false;
    int64_t value = 0;        // as last seen
    uint64_t since_ps = 0;    // when it took that value
    std::vector<Span> spans;  // a state's
    std::vector<double> bins;  // a level's value x ps, or a link's bytes, per bin
    std::function<uint64_t()> bytes_sent;  // a link's
    uint64_t counted = 0;                  // a link's bytes already binned
  };

  template <class T>
  void watch(const T* object, const std::string& name);
  void add_level(Track& t, uint64_t from_ps, uint64_t to_ps);
  void bin_links(size_t bin);
  void advance(uint64_t now_ps);
  void widen();

  std::vector<Track> tracks_;
  uint64_t bin_ps_ = 16000;
  uint64_t looked_ps_ = 0;  // when the links were last read
};

}  // namespace incsim
