#include "collectives/msccl_xml.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <map>

#include "core/error.h"
#include "core/nearest.h"
#include "core/user_file.h"

namespace incsim::collectives {

namespace {

// ---- XML, as much of it as an algorithm file uses ----
// Elements with attributes, comments, the <?xml?> declaration and text
// between elements (ignored). One pass, no recursion: time and memory
// linear in the file, and a depth cap instead of a stack overflow.
constexpr int kMaxDepth = 64;

struct Attribute {
  std::string name, value;
};
struct Element {
  std::string tag;
  std::vector<Attribute> attrs;
  int line = 0;
  bool empty = false;  // <step .../>: no end tag follows
};

class Xml {
 public:
  Xml(const std::string& text, const std::string& file) : s_(text), file_(file) {}

  [[noreturn]] void fail(int line, const std::string& what) const {
    throw UserError(file_ + ":" + std::to_string(line) + ": " + what);
  }

  // The next start tag (true), or false at an end tag of the element
  // `depth()` was at, or at the end of the file (depth 0).
  bool next(Element& e) {
    for (;;) {
      const size_t lt = s_.find('<', pos_);
      if (lt == std::string::npos) {
        advance(s_.size());
        if (!open_.empty())
          fail(line_, "the file ends inside <" + open_.back().first + "> (line " + std::to_string(open_.back().second) +
                          ")");
        return false;
      }
      advance(lt);
      if (at("<?")) skip_past("?>", "a <? declaration");
      else if (at("<!--")) skip_past("-->", "a comment");
      else if (at("<![CDATA[")) skip_past("]]>", "a CDATA section");
      else if (at("<!")) fail(line_, "a <! declaration (DOCTYPE, ENTITY) is not part of an MSCCL algorithm");
      else if (at("</")) {
        advance(pos_ + 2);
        const std::string tag = name("an end tag");
        space();
        if (!at(">")) fail(line_, "the end tag </" + tag + "> has something after its name");
        advance(pos_ + 1);
        if (open_.empty()) fail(line_, "</" + tag + "> closes no element");
        if (open_.back().first != tag)
          fail(line_, "</" + tag + "> closes <" + open_.back().first + "> (line " + std::to_string(open_.back().second) +
                          ")");
        open_.pop_back();
        return false;
      } else {
        start(e);
        return true;
      }
    }
  }
  int depth() const { return static_cast<int>(open_.size()); }
  int line() const { return line_; }
  // After the root's end: nothing but comments and space may follow.
  void finish() {
    Element e;
    if (next(e)) fail(e.line, "a second top-level element <" + e.tag + "> follows the first");
  }

 private:
  bool at(const char* lit) const { return s_.compare(pos_, std::char_traits<char>::length(lit), lit) == 0; }
  void advance(size_t to) {
    line_ += static_cast<int>(std::count(s_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                         s_.begin() + static_cast<std::ptrdiff_t>(to), '\n'));
    pos_ = to;
  }
  void skip_past(const char* end, const char* what) {
    const int from = line_;
    const size_t at = s_.find(end, pos_);
    if (at == std::string::npos) fail(from, std::string(what) + " is never closed");
    advance(at + std::char_traits<char>::length(end));
  }
  void space() {
    size_t p = pos_;
    while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t' || s_[p] == '\n' || s_[p] == '\r')) ++p;
    advance(p);
  }
  static bool name_char(char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
           (!first && (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.'));
  }
  std::string name(const char* what) {
    size_t p = pos_;
    while (p < s_.size() && name_char(s_[p], p == pos_)) ++p;
    if (p == pos_) fail(line_, std::string(what) + " has no name");
    std::string n = s_.substr(pos_, p - pos_);
    advance(p);
    return n;
  }
  // An attribute's value with its entities replaced.
  std::string value(const std::string& attr) {
    const char quote = pos_ < s_.size() ? s_[pos_] : '\0';
    if (quote != '"' && quote != '\'') fail(line_, "attribute " + attr + "'s value is not in quotes");
    const size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string::npos) fail(line_, "attribute " + attr + "'s value is never closed");
    std::string v;
    for (size_t p = pos_ + 1; p < end; ++p) {
      if (s_[p] == '<') fail(line_, "attribute " + attr + "'s value holds a '<'");
      if (s_[p] != '&') {
        v += s_[p];
        continue;
      }
      const size_t semi = s_.find(';', p);
      const std::string ent = semi == std::string::npos || semi > end ? "" : s_.substr(p + 1, semi - p - 1);
      static const std::pair<const char*, char> kNamed[] = {
          {"lt", '<'}, {"gt", '>'}, {"amp", '&'}, {"quot", '"'}, {"apos", '\''}};
      char c = 0;
      for (const auto& [n, ch] : kNamed)
        if (ent == n) c = ch;
      if (!c && ent.size() > 1 && ent[0] == '#') {
        unsigned code = 0;
        const bool hex = ent[1] == 'x';
        const char* b = ent.data() + (hex ? 2 : 1);
        const auto [e, ec] = std::from_chars(b, ent.data() + ent.size(), code, hex ? 16 : 10);
        if (ec == std::errc() && e == ent.data() + ent.size() && code > 0 && code < 128) c = static_cast<char>(code);
      }
      if (!c) fail(line_, "attribute " + attr + "'s value holds '&" + ent + "', which is no entity an algorithm uses");
      v += c;
      p = semi;
    }
    advance(end + 1);
    return v;
  }
  void start(Element& e) {
    advance(pos_ + 1);
    e.line = line_;
    e.tag = name("a start tag");
    e.attrs.clear();
    for (;;) {
      const size_t before = pos_;
      space();
      if (pos_ >= s_.size()) fail(e.line, "<" + e.tag + "> is never closed");
      if (at("/>") || at(">")) break;
      if (pos_ == before) fail(line_, "<" + e.tag + "> needs a space before its next attribute");
      Attribute a;
      a.name = name("an attribute");
      for (const Attribute& o : e.attrs)
        if (o.name == a.name) fail(line_, "<" + e.tag + "> has attribute " + a.name + " twice");
      space();
      if (!at("=")) fail(line_, "attribute " + a.name + " has no value");
      advance(pos_ + 1);
      space();
      a.value = value(a.name);
      e.attrs.push_back(std::move(a));
    }
    e.empty = at("/>");
    advance(pos_ + (e.empty ? 2 : 1));
    if (e.empty) return;
    if (depth() == kMaxDepth)
      fail(e.line, "elements are nested more than " + std::to_string(kMaxDepth) +
                       " deep; an algorithm's are 4 (algo, gpu, tb, step)");
    open_.emplace_back(e.tag, e.line);
  }

  const std::string& s_;
  const std::string& file_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<std::pair<std::string, int>> open_;  // open elements: tag, line
};

// ---- The algorithm ----
// Errors name the file, the line and the element: "FILE:LINE: gpu 0 tb 3 step 2: ...".
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}
  [[noreturn]] void fail(int line, const std::string& where, const std::string& what) const {
    throw UserError(file_ + ":" + std::to_string(line) + ": " + (where.empty() ? "" : where + ": ") + what);
  }
  const std::string* find(const Element& e, const char* attr) const {
    for (const Attribute& a : e.attrs)
      if (a.name == attr) return &a.value;
    return nullptr;
  }
  const std::string& text(const Element& e, const std::string& where, const char* attr) const {
    const std::string* v = find(e, attr);
    if (!v) fail(e.line, where, std::string("has no attribute ") + attr);
    return *v;
  }
  long integer(const Element& e, const std::string& where, const char* attr, long lo, long hi) const {
    const std::string& s = text(e, where, attr);
    long v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || end != s.data() + s.size() || ec == std::errc::invalid_argument)
      fail(e.line, where, std::string(attr) + " \"" + s + "\" is not a whole number");
    if (ec == std::errc::result_out_of_range || v < lo || v > hi)
      fail(e.line, where,
           std::string(attr) + " " + s + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }
  long optional(const Element& e, const std::string& where, const char* attr, long fallback) const {
    return find(e, attr) ? integer(e, where, attr, 0, 1) : fallback;
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

struct Step {
  OpKind kind;
  Buffer srcbuf, dstbuf;
  int32_t srcoff, dstoff, depid, deps;
  uint16_t cnt;
  bool hasdep;
  int line;
};
struct Tb {
  long id, send, recv, chan;
  int line;
  std::vector<Step> steps;
};
struct Gpu {
  Buffers buffers;
  std::vector<Tb> tbs;
  bool seen = false;
};

std::string step_where(int g, long tb, size_t s) {
  return "gpu " + std::to_string(g) + " tb " + std::to_string(tb) + " step " + std::to_string(s);
}

OpKind step_kind(const Reader& in, int line, const std::string& where, const std::string& type) {
  static const std::pair<const char*, OpKind> kTypes[] = {
      {"s", OpKind::Send},           {"r", OpKind::Recv},
      {"rrs", OpKind::RecvReduceSend}, {"rrc", OpKind::RecvReduceCopy},
      {"rrcs", OpKind::RecvReduceCopySend}, {"rcs", OpKind::RecvCopySend},
      {"cpy", OpKind::Copy},         {"re", OpKind::Reduce},
      {"nop", OpKind::Nop}};
  for (const auto& [name, k] : kTypes)
    if (type == name) return k;
  in.fail(line, where, "step type \"" + type + "\" is not one of s, r, rrs, rrc, rrcs, rcs, cpy, re, nop");
}

Buffer buffer(const Reader& in, int line, const std::string& where, const std::string& attr, const std::string& b) {
  if (b == "i") return Buffer::Input;
  if (b == "o") return Buffer::Output;
  if (b == "s") return Buffer::Scratch;
  in.fail(line, where, attr + " \"" + b + "\" is not i, o or s");
}

// Skips the element just started (and everything inside it).
void skip(Xml& xml, const Element& e) {
  if (e.empty) return;
  const int depth = xml.depth();  // e's own level, open
  Element inner;
  while (xml.next(inner) || xml.depth() >= depth) {
  }
}

Step read_step(const Reader& in, const Element& s, const std::string& where) {
  Step st;
  st.line = s.line;
  st.kind = step_kind(in, s.line, where, in.text(s, where, "type"));
  st.srcbuf = buffer(in, s.line, where, "srcbuf", in.text(s, where, "srcbuf"));
  st.dstbuf = buffer(in, s.line, where, "dstbuf", in.text(s, where, "dstbuf"));
  st.srcoff = static_cast<int32_t>(in.integer(s, where, "srcoff", -1, 1L << 30));
  st.dstoff = static_cast<int32_t>(in.integer(s, where, "dstoff", -1, 1L << 30));
  st.cnt = static_cast<uint16_t>(in.integer(s, where, "cnt", 0, 65535));
  st.depid = static_cast<int32_t>(in.integer(s, where, "depid", -1, 65535));
  st.deps = static_cast<int32_t>(in.integer(s, where, "deps", -1, 1L << 30));
  // The runtime reads hasdep on every step (msccl's topo.cc, mscclGetAlgoFromXmlFile).
  st.hasdep = in.integer(s, where, "hasdep", 0, 1) == 1;
  return st;
}

// gpu g's thread blocks, as <gpu> holds them.
void read_gpu(Xml& xml, const Reader& in, int g, int n, long nchannels, Gpu& gpu) {
  const std::string gw = "gpu " + std::to_string(g);
  std::vector<char> tb_seen;
  Element t;
  while (xml.next(t)) {
    if (t.tag != "tb") {
      skip(xml, t);
      continue;
    }
    Tb tb;
    tb.line = t.line;
    tb.id = in.integer(t, gw + " tb", "id", 0, 65535);
    const std::string tw = gw + " tb " + std::to_string(tb.id);
    if (static_cast<size_t>(tb.id) >= tb_seen.size()) tb_seen.resize(static_cast<size_t>(tb.id) + 1, 0);
    if (tb_seen[static_cast<size_t>(tb.id)]) in.fail(t.line, tw, "appears twice");
    tb_seen[static_cast<size_t>(tb.id)] = 1;
    tb.send = in.integer(t, tw, "send", -1, n - 1);
    tb.recv = in.integer(t, tw, "recv", -1, n - 1);
    tb.chan = in.integer(t, tw, "chan", 0, nchannels - 1);
    if (tb.send == g || tb.recv == g) in.fail(t.line, tw, "names its own gpu as a peer");
    if (!t.empty) {
      Element s;
      while (xml.next(s)) {
        if (s.tag != "step") {
          skip(xml, s);
          continue;
        }
        const long index = in.integer(s, tw + " step", "s", 0, 1L << 30);
        const std::string where = tw + " step " + std::to_string(index);
        if (index != static_cast<long>(tb.steps.size()))
          in.fail(s.line, where, "comes where step " + std::to_string(tb.steps.size()) + " belongs");
        const Step st = read_step(in, s, where);
        if (sends(st.kind) && tb.send < 0)
          in.fail(s.line, where, std::string("sends (type ") + op_name(st.kind) + ") but thread block " +
                                     std::to_string(tb.id) + " sends to no peer (send=-1)");
        if (receives(st.kind) && tb.recv < 0)
          in.fail(s.line, where, std::string("receives (type ") + op_name(st.kind) + ") but thread block " +
                                     std::to_string(tb.id) + " receives from no peer (recv=-1)");
        tb.steps.push_back(st);
        skip(xml, s);
      }
    }
    gpu.tbs.push_back(std::move(tb));
  }
}

// Two thread blocks of a GPU on one connection (channel, peer, direction):
// MSCCL's runtime gives each its own use of the connection with no order
// between them, so what arrives where is undefined there, and the GPUs'
// cores here run one thread block per connection.
void shared_connections(const Reader& in, int g, const Gpu& gpu) {
  std::map<std::array<long, 3>, const Tb*> first;  // (direction, peer, channel) -> the first thread block on it
  for (const Tb& tb : gpu.tbs)
    for (int dir = 0; dir < 2; ++dir) {
      const long peer = dir == 0 ? tb.send : tb.recv;
      if (peer < 0) continue;
      const auto [it, fresh] = first.try_emplace({dir, peer, tb.chan}, &tb);
      if (fresh) continue;
      in.fail(tb.line, "gpu " + std::to_string(g),
              "thread blocks " + std::to_string(it->second->id) + " and " + std::to_string(tb.id) + " both " +
                  (dir == 0 ? "send to" : "receive from") + " gpu " + std::to_string(peer) + " on channel " +
                  std::to_string(tb.chan) + ", one connection, which MSCCL's runtime does not order between thread " +
                  "blocks (what arrives where is undefined); give each its own channel");
    }
}

}  // namespace

Program read_msccl_xml(const std::string& text, const std::string& file) {
  Reader in(file);
  Xml xml(text, file);
  Element algo;
  if (!xml.next(algo)) in.fail(xml.line(), "", "has no <algo> element");
  if (algo.tag != "algo") in.fail(algo.line, "", "its top element is <" + algo.tag + ">, not <algo>");
  const std::string a = "algo";
  const int n = static_cast<int>(in.integer(algo, a, "ngpus", 1, 1 << 16));
  const long nchannels = in.integer(algo, a, "nchannels", 1, 65535);
  in.integer(algo, a, "nchunksperloop", 1, 1L << 30);
  const std::string coll = to_lower(in.text(algo, a, "coll"));
  Collective c;
  if (coll == "allreduce") c = Collective::AllReduce;
  else if (coll == "reduce_scatter" || coll == "reducescatter") c = Collective::ReduceScatter;
  else if (coll == "allgather") c = Collective::AllGather;
  else if (coll == "broadcast") c = Collective::Broadcast;
  else if (coll == "alltoall") c = Collective::AllToAll;
  else
    in.fail(algo.line, a, "coll \"" + coll + "\" is not a collective incsim runs (allreduce, reduce_scatter, allgather, "
                          "broadcast, alltoall)");
  const std::string proto_text = in.text(algo, a, "proto");
  Protocol proto;
  if (!protocol_of(proto_text, proto))
    in.fail(algo.line, a, "proto \"" + to_lower(proto_text) + "\" is not Simple, LL or LL128");
  // inplace names the layout the steps assume; outofplace alone says the
  // algorithm is out of place.
  const bool in_place =
      in.optional(algo, a, "inplace", in.optional(algo, a, "outofplace", 0) ? 0 : 1) == 1;
  const std::string* named = in.find(algo, "name");
  const std::string name = named ? *named : "msccl";

  // Read every gpu's thread blocks first: dependencies may point forward.
  std::vector<Gpu> gpus(static_cast<size_t>(n));
  if (!algo.empty) {
    Element g;
    while (xml.next(g)) {
      if (g.tag != "gpu") {
        skip(xml, g);
        continue;
      }
      const int id = static_cast<int>(in.integer(g, "gpu", "id", 0, n - 1));
      const std::string gw = "gpu " + std::to_string(id);
      Gpu& gpu = gpus[static_cast<size_t>(id)];
      if (gpu.seen) in.fail(g.line, gw, "appears twice");
      gpu.seen = true;
      gpu.buffers.input = static_cast<uint32_t>(in.integer(g, gw, "i_chunks", 0, 1L << 30));
      gpu.buffers.output = static_cast<uint32_t>(in.integer(g, gw, "o_chunks", 0, 1L << 30));
      gpu.buffers.scratch = static_cast<uint32_t>(in.integer(g, gw, "s_chunks", 0, 1L << 30));
      if (!g.empty) read_gpu(xml, in, id, n, nchannels, gpu);
    }
  }
  xml.finish();
  for (int g = 0; g < n; ++g)
    if (!gpus[static_cast<size_t>(g)].seen)
      in.fail(algo.line, "algo", "ngpus is " + std::to_string(n) + " but gpu " + std::to_string(g) + " is missing");

  ProgramBuilder pb(name, c, n, in_place);
  for (int g = 0; g < n; ++g) {
    const Gpu& gpu = gpus[static_cast<size_t>(g)];
    shared_connections(in, g, gpu);
    pb.begin_rank(g, gpu.buffers);
    // Per thread block id: its index and its first operation.
    long max_id = -1;
    for (const Tb& tb : gpu.tbs) max_id = std::max(max_id, tb.id);
    std::vector<int32_t> index_of(static_cast<size_t>(max_id + 1), -1);
    std::vector<uint32_t> first_op(gpu.tbs.size());
    uint32_t count = 0;
    for (size_t t = 0; t < gpu.tbs.size(); ++t) {
      index_of[static_cast<size_t>(gpu.tbs[t].id)] = static_cast<int32_t>(t);
      first_op[t] = count;
      count += static_cast<uint32_t>(gpu.tbs[t].steps.size());
    }
    // The runtime signals a thread block's progress only after a step with
    // hasdep="1" (its flag, which a dependent waits to pass): per step, the
    // first such step at or after it (-1: none), nops aside, as the runtime
    // runs none.
    // Flat, by operation index (first_op[t] + k).
    std::vector<int32_t> signalled(count, -1);
    for (size_t t = 0; t < gpu.tbs.size(); ++t) {
      const std::vector<Step>& steps = gpu.tbs[t].steps;
      int32_t* const sig = signalled.data() + first_op[t];
      for (size_t k = steps.size(); k-- > 0;)
        sig[k] = steps[k].hasdep && steps[k].kind != OpKind::Nop ? static_cast<int32_t>(k)
                 : k + 1 < steps.size()                          ? sig[k + 1]
                                                                 : -1;
    }
    for (const Tb& tb : gpu.tbs)
      for (size_t si = 0; si < tb.steps.size(); ++si) {
        const Step& st = tb.steps[si];
        const auto where = [&] { return step_where(g, tb.id, si); };
        Operation o;
        o.kind = st.kind;
        o.proto = proto;
        o.channel = static_cast<uint16_t>(tb.chan);
        o.queue = static_cast<uint16_t>(tb.id);
        if (sends(st.kind)) o.send_peer = static_cast<int32_t>(tb.send);
        if (receives(st.kind)) o.recv_peer = static_cast<int32_t>(tb.recv);
        // The local chunks, as MSCCL's runtime uses them (its
        // msccl_interpreter.h): a receive that reduces adds what arrives
        // to src (recvReduceSend(src), recvReduceCopy(src, dst),
        // recvReduceCopySend(src, dst)) and writes dst (rrs writes none);
        // r and rcs write dst; s reads src; cpy and re read src and write dst.
        const bool reduces = st.kind == OpKind::RecvReduceSend || st.kind == OpKind::RecvReduceCopy ||
                             st.kind == OpKind::RecvReduceCopySend;
        const bool local_src =
            reduces || st.kind == OpKind::Send || st.kind == OpKind::Copy || st.kind == OpKind::Reduce;
        const bool local_dst =
            (receives(st.kind) && st.kind != OpKind::RecvReduceSend) || st.kind == OpKind::Copy || st.kind == OpKind::Reduce;
        const auto ref = [&](const char* what, Buffer b, int32_t off) {
          if (off < 0 || st.cnt < 1)
            in.fail(st.line, where(), std::string("has no ") + what + " chunk (offset " + std::to_string(off) + ", cnt " +
                                          std::to_string(st.cnt) + ")");
          const uint32_t limit = chunk_limit(pb.program(), g, b);
          if (static_cast<uint64_t>(off) + st.cnt > limit)
            in.fail(st.line, where(), std::string(what) + " chunks [" + std::to_string(off) + ", " +
                                          std::to_string(off + st.cnt) + ") of buffer " + buffer_letter(b) +
                                          " lie outside its " + std::to_string(limit) + " chunks");
          return chunk(b, static_cast<uint32_t>(off), st.cnt);
        };
        if (local_src) o.src = ref("src", st.srcbuf, st.srcoff);
        if (local_dst) o.dst = ref("dst", st.dstbuf, st.dstoff);
        std::vector<uint32_t> deps;
        if (st.depid >= 0 || st.deps >= 0) {
          const int32_t t = st.depid >= 0 && st.depid <= max_id ? index_of[static_cast<size_t>(st.depid)] : -1;
          if (t < 0 || st.deps < 0 || st.deps >= static_cast<int32_t>(gpu.tbs[static_cast<size_t>(t)].steps.size()))
            in.fail(st.line, where(), "depends on tb " + std::to_string(st.depid) + " step " + std::to_string(st.deps) +
                                          ", which does not exist");
          const int32_t k = signalled[first_op[static_cast<size_t>(t)] + static_cast<uint32_t>(st.deps)];
          if (k < 0)
            in.fail(st.line, where(), "depends on tb " + std::to_string(st.depid) + " step " + std::to_string(st.deps) +
                                          ", and neither it nor a later step of tb " + std::to_string(st.depid) +
                                          " has hasdep=\"1\": MSCCL's runtime signals a thread block's progress only "
                                          "after such a step, so this one would wait forever");
          // The step the runtime's flag says is done: the first signalling one at or after deps.
          deps.push_back(first_op[static_cast<size_t>(t)] + static_cast<uint32_t>(k));
        }
        pb.add(o, deps);
      }
  }
  return pb.build();
}

// An algorithm's XML is about 100 bytes a step: 64 MiB holds over half a
// million steps, more than MSCCL's runtime runs (256 steps per thread
// block, 216 thread blocks per GPU: msccl's MSCCL_MAX_NUM_STEPS and
// MSCCL_MAX_NUM_THREAD_BLOCKS) on 8 GPUs.
Program read_msccl_file(const std::string& path) {
  return read_msccl_xml(read_user_file(path, "MSCCL algorithm file", std::uintmax_t{64} << 20), path);
}

}  // namespace incsim::collectives
