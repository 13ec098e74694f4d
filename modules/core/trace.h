#pragma once
// VCD waveforms (STYLE.md, convention 7): every block exposes its state through
// trace(); the file has an explicit timescale and no wall-clock date, so the
// same run gives the same bytes. Beside it goes a GTKWave save file that
// opens the waveform ready to read (write_gtkw).
#include <cstdint>
#include <iosfwd>
#include <string>
#include <systemc>

namespace incsim {

class Traceable {
 public:
  virtual ~Traceable() = default;
  virtual void trace(sc_core::sc_trace_file* tf) const = 0;
};

// A traced value that is a level (an occupancy, a queue, outstanding work),
// by its name's last part: the save file draws it as an analog step and the
// timeline as a counter.
bool level_signal(const std::string& leaf);

// The files --vcd PATH writes: PATH as given if it ends in .vcd or exists
// (a file, a device), else PATH.vcd; and the GTKWave save file beside it
// (w.vcd: w.gtkw; an existing file w: w.gtkw), none beside a device.
std::string vcd_file(const std::string& path);
std::string gtkw_file(const std::string& path);  // empty: none
// Where SystemC writes it (SystemC appends .vcd to any name): vcd_file, or
// for a path used as given a staging file in the temporary folder, copied
// to the path when it closes.
std::string vcd_written(const std::string& path);
// Throws UserError unless both can be written; a folder is refused.
void check_vcd_path(const std::string& path);
sc_core::sc_trace_file* open_vcd(const std::string& path);
class LinkTraffic;
// Closes the file, blanks the $date SystemC writes, merges in the links'
// traffic and writes the save file beside it; returns the VCD's size in bytes.
uint64_t close_vcd(sc_core::sc_trace_file* tf, const std::string& path, LinkTraffic& links);

// GTKWave's save file for a VCD, from the VCD's own declarations, so every
// name is the one GTKWave reads: a group per block (gpu3, sw0, fpga, host1)
// holding its state in decimal, occupancies and queues drawn as analog steps,
// a subgroup per part (sw0.port5.reduction_table, gpu3.copy_engine) where a
// block has many; the per-VC link counters, and values that never change
// after time 0 (a ring's step on a push run), stay in the signal tree only.
// Groups past the first two blocks of a kind, and past a block's first four
// parts, start closed, and none past the eighth block of a kind or a block's
// 32nd part is listed, so a 16-switch or 128-GPU platform stays readable.
// vcd_path goes in as the save file's [dumpfile] and gtkw_path as its
// [savefile], each as the user gave it; end_ps, the run's end, sets the zoom.
std::string gtkw_for(std::istream& vcd, const std::string& vcd_path, const std::string& gtkw_path, uint64_t end_ps);

}  // namespace incsim
