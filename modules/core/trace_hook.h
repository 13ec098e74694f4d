#pragma once
// A SystemC trace file that writes nothing: SystemC calls its cycle() after
// every time step, after the blocks' processes, so a subclass sees the
// machine's state at each step without a process or an event of its own
// (an event would reorder same-instant processes, and so move the results
// it watches). Every trace() is ignored here; a subclass keeps what it needs.
#include <cstdint>
#include <string>
#include <systemc>

namespace incsim {

class TraceHook : public sc_core::sc_trace_file {
 public:
  TraceHook() { sc_core::sc_get_curr_simcontext()->add_trace_file(this); }
  ~TraceHook() override { sc_core::sc_get_curr_simcontext()->remove_trace_file(this); }
  TraceHook(const TraceHook&) = delete;
  TraceHook& operator=(const TraceHook&) = delete;

#define INCSIM_HOOK_A(tp) \
  void trace(const tp&, const std::string&) override {}
#define INCSIM_HOOK_B(tp) \
  void trace(const tp&, const std::string&, int) override {}
  INCSIM_HOOK_A(sc_core::sc_event)
  INCSIM_HOOK_A(sc_core::sc_time)
  INCSIM_HOOK_A(bool)
  INCSIM_HOOK_A(sc_dt::sc_bit)
  INCSIM_HOOK_A(sc_dt::sc_logic)
  INCSIM_HOOK_B(unsigned char)
  INCSIM_HOOK_B(unsigned short)
  INCSIM_HOOK_B(unsigned int)
  INCSIM_HOOK_B(unsigned long)
  INCSIM_HOOK_B(char)
  INCSIM_HOOK_B(short)
  INCSIM_HOOK_B(int)
  INCSIM_HOOK_B(long)
  INCSIM_HOOK_B(sc_dt::int64)
  INCSIM_HOOK_B(sc_dt::uint64)
  INCSIM_HOOK_A(float)
  INCSIM_HOOK_A(double)
  INCSIM_HOOK_A(sc_dt::sc_int_base)
  INCSIM_HOOK_A(sc_dt::sc_uint_base)
  INCSIM_HOOK_A(sc_dt::sc_signed)
  INCSIM_HOOK_A(sc_dt::sc_unsigned)
  INCSIM_HOOK_A(sc_dt::sc_fxval)
  INCSIM_HOOK_A(sc_dt::sc_fxval_fast)
  INCSIM_HOOK_A(sc_dt::sc_fxnum)
  INCSIM_HOOK_A(sc_dt::sc_fxnum_fast)
  INCSIM_HOOK_A(sc_dt::sc_bv_base)
  INCSIM_HOOK_A(sc_dt::sc_lv_base)
#undef INCSIM_HOOK_A
#undef INCSIM_HOOK_B
  void trace(const unsigned int&, const std::string&, const char**) override {}
  void write_comment(const std::string&) override {}
  void set_time_unit(double, sc_core::sc_time_unit) override {}

 protected:
  // The simulated time now, ps.
  static uint64_t now_ps() {
    static const double ps_per_unit = sc_core::sc_get_time_resolution().to_seconds() * 1e12;
    return static_cast<uint64_t>(static_cast<double>(sc_core::sc_time_stamp().value()) * ps_per_unit + 0.5);
  }
};

}  // namespace incsim
