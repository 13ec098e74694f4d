#include "trace.h"

#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unistd.h>
#include <unordered_set>
#include <vector>

#include "error.h"
#include "link_traffic.h"
#include "output_file.h"

namespace incsim {

namespace {
bool ends_with(const std::string& s, const std::string& end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

// A link end's per-VC byte and credit counters: four per port, hundreds per
// switch; they stay in the signal tree.
bool link_counter(const std::string& leaf) {
  for (const char* c : {"in_bytes_vc", "out_bytes_vc", "credits_vc"})
    if (leaf.rfind(c, 0) == 0) return true;
  return false;
}


}  // namespace

bool level_signal(const std::string& leaf) {
  for (const char* end : {"occupancy", "queue", "outstanding", "busy", "unacked_packets"})
    if (ends_with(leaf, end)) return true;
  return false;
}

namespace {
// The kind of a block: its name without its indices (sw12: sw, leaf3_1:
// leaf_, a cluster's n1_hca5: n_hca).
std::string kind_of(const std::string& block) {
  std::string kind;
  for (const char c : block)
    if (!std::isdigit(static_cast<unsigned char>(c))) kind += c;
  return kind;
}

// Names with their numbers compared as numbers (port2 before port10):
// SystemC's VCD writer sorts scopes as strings.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ei = i, ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      if (ei - i != ej - j) return ei - i < ej - j;
      if (const int c = a.compare(i, ei - i, b, j, ej - j); c != 0) return c < 0;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

struct Var {
  std::string block, part, name;  // part: the scopes below the block, dot-joined; name: GTKWave's
  bool analog;
  std::string id;  // the VCD's identifier code
};

// The identifiers of the values that change after time 0: a value that
// never does (a ring's step on a push run) stays out of the wave pane.
// False if the run never advanced past time 0 (then every value is shown).
bool read_changes(std::istream& vcd, std::unordered_set<std::string>& changed) {
  bool past_zero = false;
  for (std::string line; std::getline(vcd, line);) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      past_zero = past_zero || std::strtoull(line.c_str() + 1, nullptr, 10) > 0;
      continue;
    }
    if (!past_zero || line[0] == '$') continue;
    // "b1010 id" and "r1.5 id" for vectors and reals, "1id" for a bit.
    const size_t space = line.find(' ');
    changed.insert(line[0] == 'b' || line[0] == 'r' ? line.substr(space + 1) : line.substr(1));
  }
  return past_zero;
}

// GTKWave's trace flags (its analyzer.h): signed decimal (the blocks trace ints, -1 for none), right-justified, as an analog step, a blank row that
// stretches the analog trace above it, and group begin/end (blank rows), closed or open.
constexpr unsigned kDec = 0x4 | 0x20 | 0x400, kAnalogStep = 0x8000, kStretch = 0x20000;
constexpr unsigned kBlank = 0x200, kClosed = 0x400000, kGroupBegin = 0x800000, kGroupEnd = 0x1000000;

void row(std::string& out, const Var& v) {
  out += fmt::format("@{:x}\n{}\n", kDec | (v.analog ? kAnalogStep : 0), v.name);
  if (v.analog) out += fmt::format("@{:x}\n-\n-\n", kStretch);  // three rows high
}

void group_edge(std::string& out, const std::string& name, bool begin, bool open) {
  out += fmt::format("@{:x}\n-{}\n", (begin ? kGroupBegin : kGroupEnd) | kBlank | (open ? 0 : kClosed), name);
}

void group(std::string& out, const std::string& name, bool open, const std::vector<const Var*>& vars) {
  group_edge(out, name, true, open);
  for (const Var* v : vars) row(out, *v);
  group_edge(out, name, false, open);
}
}  // namespace

std::string vcd_file(const std::string& path) {
  std::error_code ec;
  return ends_with(path, ".vcd") || std::filesystem::exists(path, ec) ? path : path + ".vcd";
}

std::string gtkw_file(const std::string& path) {
  const std::string file = vcd_file(path);
  if (ends_with(file, ".vcd")) return file.substr(0, file.size() - 4) + ".gtkw";
  std::error_code ec;
  return std::filesystem::is_regular_file(file, ec) ? file + ".gtkw" : std::string();
}

std::string vcd_written(const std::string& path) {
  const std::string file = vcd_file(path);
  if (ends_with(file, ".vcd")) return file;
  std::error_code ec;
  const auto tmp = std::filesystem::temp_directory_path(ec);
  return ((ec ? std::filesystem::path("/tmp") : tmp) / fmt::format("incsim-{}.vcd", ::getpid())).string();
}

void check_vcd_path(const std::string& path) {
  std::error_code ec;
  if (path.empty() || path.back() == '/' || std::filesystem::is_directory(path, ec))
    throw UserError("--vcd names the folder '" + path + "'; name a file in it, such as " +
                    (std::filesystem::path(path) / "wave.vcd").lexically_normal().string());
  check_writable(vcd_file(path), "waveform file");
  if (const std::string gtkw = gtkw_file(path); !gtkw.empty()) check_writable(gtkw, "GTKWave save file");
  if (vcd_written(path) != vcd_file(path)) check_writable(vcd_written(path), "waveform's staging file");
}

sc_core::sc_trace_file* open_vcd(const std::string& path) {
  check_vcd_path(path);
  const std::string file = vcd_written(path);
  sc_core::sc_trace_file* tf = sc_core::sc_create_vcd_trace_file(file.substr(0, file.size() - 4).c_str());
  tf->set_time_unit(1, sc_core::SC_PS);
  return tf;
}

uint64_t close_vcd(sc_core::sc_trace_file* tf, const std::string& path, LinkTraffic& links) {
  sc_core::sc_close_vcd_trace_file(tf);
  const std::string file = vcd_written(path);
  // SystemC's file, rewritten once: its $date blanked (same length), then
  // from the top scope on the links merged in, which also gives the last
  // time stamp, the zoom's end.
  const std::string rewritten = file + ".links";
  uint64_t end_ps = 0;
  {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw UserError("cannot read back the waveform file '" + file + "'");
    std::ofstream out(rewritten, std::ios::binary);
    bool in_date = false;
    for (std::string line; std::getline(in, line);) {
      if (in_date && line.find("$end") == std::string::npos) line.assign(line.size(), ' ');
      else in_date = false;
      if (line.find("$date") != std::string::npos) in_date = true;
      out << line << '\n';
      if (line.rfind("$scope", 0) == 0) break;
    }
    end_ps = links.merge(in, out);
    if (!in.eof() || !out.flush()) throw UserError("cannot write the waveform file '" + file + "' with its link traffic");
  }
  std::filesystem::rename(rewritten, file);
  std::ifstream f(file, std::ios::binary);
  if (!f) throw UserError("cannot read back the waveform file '" + file + "'");
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(file, ec);
  // GTKWave finds a relative [dumpfile] from the current folder or, failing
  // that, from where the save file now is, by the path from the [savefile]
  // it names (its savefile.c, find_dumpfile): the two are written beside
  // each other, so the pair may be moved or opened from any folder.
  const std::string gtkw = gtkw_file(path);
  const auto name = [](const std::string& p) { return std::filesystem::path(p).filename().string(); };
  if (!gtkw.empty()) write_user_file(gtkw, gtkw_for(f, name(vcd_file(path)), name(gtkw), end_ps), "GTKWave save file");
  if (f.bad()) throw UserError("cannot read back the waveform file '" + file + "'");
  if (file != vcd_file(path)) {
    // A path used as given (a device, a file without .vcd) gets the staged file's bytes.
    f.clear();
    f.seekg(0);
    const auto drop_staged = [&f, &file] {
      f.close();
      std::error_code ec;
      std::filesystem::remove(file, ec);
    };
    try {
      copy_to_user_file(f, vcd_file(path), "waveform file");
    } catch (const UserError&) {
      drop_staged();
      throw;
    }
    drop_staged();
  }
  return size;
}

std::string gtkw_for(std::istream& vcd, const std::string& vcd_path, const std::string& gtkw_path, uint64_t end_ps) {
  std::vector<Var> vars;
  std::vector<std::string> scope;
  for (std::string tok; vcd >> tok && tok != "$enddefinitions";) {
    if (tok == "$scope") {
      std::string type, name;
      vcd >> type >> name;
      scope.push_back(name);
    } else if (tok == "$upscope" && !scope.empty()) {
      scope.pop_back();
    } else if (tok == "$var") {
      std::string type, width, id, ref, range;
      vcd >> type >> width >> id >> ref >> range;
      if (range == "$end") range.clear();
      // Under the top scope (SystemC) and a block's scope: anything else is no block's.
      if (scope.size() < 2 || link_counter(ref)) continue;
      std::string path, part;
      for (size_t i = 0; i < scope.size(); ++i) path += scope[i] + ".";
      for (size_t i = 2; i < scope.size(); ++i) part += (part.empty() ? "" : ".") + scope[i];
      vars.push_back({scope[1], part, path + ref + range, level_signal(ref) || type == "real", id});
    }
  }
  std::unordered_set<std::string> changed;
  if (read_changes(vcd, changed))
    vars.erase(std::remove_if(vars.begin(), vars.end(), [&](const Var& v) { return changed.count(v.id) == 0; }),
               vars.end());
  // Blocks by kind in the order the VCD declares the kinds, then by index.
  std::vector<std::string> blocks, kinds;
  for (const Var& v : vars) {
    if (std::find(blocks.begin(), blocks.end(), v.block) == blocks.end()) blocks.push_back(v.block);
    if (std::find(kinds.begin(), kinds.end(), kind_of(v.block)) == kinds.end()) kinds.push_back(kind_of(v.block));
  }
  auto kind_rank = [&](const std::string& b) { return std::find(kinds.begin(), kinds.end(), kind_of(b)) - kinds.begin(); };
  std::sort(blocks.begin(), blocks.end(), [&](const std::string& a, const std::string& b) {
    return kind_rank(a) != kind_rank(b) ? kind_rank(a) < kind_rank(b) : natural_less(a, b);
  });
  // The first two of each kind open at the top, the closed ones after them,
  // none past the eighth: GTKWave loads every listed signal, closed or not.
  std::set<std::string> open_blocks;
  std::map<std::string, int> of_kind;
  std::vector<std::string> listed;
  for (const std::string& b : blocks) {
    const int n = of_kind[kind_of(b)]++;
    if (n < 2) open_blocks.insert(b);
    if (n < 8) listed.push_back(b);
  }
  blocks.swap(listed);
  std::stable_partition(blocks.begin(), blocks.end(), [&](const std::string& b) { return open_blocks.count(b) > 0; });

  std::string out = fmt::format(
      "[*] GTKWave save file that incsim wrote beside the VCD below: gtkwave {1} (or gtkwave {0} {1}).\n"
      "[*] One group per block, in decimal; occupancies and queues are analog steps. The first two\n"
      "[*] blocks of each kind come first, open; the next six follow, closed, as does every part of a\n"
      "[*] block after its first four: select one and Edit > Toggle Group Open|Close. Further blocks,\n"
      "[*] parts past a block's 32nd, values that never change and per-VC link counters are in the\n"
      "[*] signal tree (SST) only. links, when the run had traffic: each link's busy share of its\n"
      "[*] wire, percent per interval (vcd.link_interval_ns), one analog row per link that carried any.\n"
      "[dumpfile] \"{0}\"\n[savefile] \"{1}\"\n[timestart] 0\n[size] 1600 1000\n[pos] -1 -1\n",
      vcd_path, gtkw_path);
  // The zoom: GTKWave shows 2^-zoom time units per 200 pixels (measured on
  // 3.3.118); the whole run across the 900 pixels of the wave pane. Then the
  // marker and 26 named markers, none set.
  if (end_ps > 0) {
    out += fmt::format("*{:.6f} -1", -std::log2(static_cast<double>(end_ps) * 200.0 / 900.0));
    for (int i = 0; i < 26; ++i) out += " -1";
    out += "\n";
  }
  out += "[treeopen] SystemC.\n[sst_width] 220\n[signals_width] 380\n[sst_expanded] 1\n[sst_vpaned_height] 300\n";
  for (const std::string& b : blocks) {
    std::vector<const Var*> mine;
    std::vector<std::string> parts;
    for (const Var& v : vars) {
      if (v.block != b) continue;
      mine.push_back(&v);
      if (!v.part.empty() && std::find(parts.begin(), parts.end(), v.part) == parts.end()) parts.push_back(v.part);
    }
    const bool open = open_blocks.count(b) > 0;
    std::sort(parts.begin(), parts.end(), natural_less);
    // A small block is one group; a large one (a switch's ports) has a subgroup per part.
    if (mine.size() <= 12) {
      group(out, b, open, mine);
      continue;
    }
    group_edge(out, b, true, open);
    for (const Var* v : mine)
      if (v->part.empty()) row(out, *v);
    for (size_t i = 0; i < std::min<size_t>(parts.size(), 32); ++i) {
      std::vector<const Var*> in_part;
      for (const Var* v : mine)
        if (v->part == parts[i]) in_part.push_back(v);
      group(out, b + "." + parts[i], i < 4, in_part);
    }
    group_edge(out, b, false, open);
  }
  return out;
}

}  // namespace incsim
