#include "collectives/msccl_xml.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <sstream>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include "core/error.h"
#include "core/nearest.h"

namespace incsim::collectives {

namespace {

namespace pt = boost::property_tree;

// Errors name the file and the element: "FILE: gpu 0 tb 3 step 2: ...".
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw UserError(file_ + ": " + (where.empty() ? "" : where + ": ") + what);
  }
  std::string text(const pt::ptree& e, const std::string& where, const char* attr) const {
    const auto a = e.get_child_optional(std::string("<xmlattr>.") + attr);
    if (!a) fail(where, std::string("has no attribute ") + attr);
    return a->data();
  }
  long integer(const pt::ptree& e, const std::string& where, const char* attr, long lo, long hi) const {
    const std::string s = text(e, where, attr);
    char* end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0') fail(where, std::string(attr) + " \"" + s + "\" is not a whole number");
    if (v < lo || v > hi)
      fail(where, std::string(attr) + " " + s + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }
  long optional(const pt::ptree& e, const std::string& where, const char* attr, long fallback) const {
    if (!e.get_child_optional(std::string("<xmlattr>.") + attr)) return fallback;
    return integer(e, where, attr, 0, 1);
  }

 private:
  std::string file_;
};

struct Step {
  OpKind kind;
  Buffer srcbuf, dstbuf;
  long srcoff, dstoff, cnt, depid, deps;
  std::string where;
};
struct Tb {
  long id, send, recv, chan;
  std::vector<Step> steps;
};

OpKind step_kind(const Reader& in, const std::string& where, const std::string& type) {
  static const std::pair<const char*, OpKind> kTypes[] = {
      {"s", OpKind::Send},           {"r", OpKind::Recv},
      {"rrs", OpKind::RecvReduceSend}, {"rrc", OpKind::RecvReduceCopy},
      {"rrcs", OpKind::RecvReduceCopySend}, {"rcs", OpKind::RecvCopySend},
      {"cpy", OpKind::Copy},         {"re", OpKind::Reduce},
      {"nop", OpKind::Nop}};
  for (const auto& [name, k] : kTypes)
    if (type == name) return k;
  in.fail(where, "step type \"" + type + "\" is not one of s, r, rrs, rrc, rrcs, rcs, cpy, re, nop");
}

Buffer buffer(const Reader& in, const std::string& where, const std::string& attr, const std::string& b) {
  if (b == "i") return Buffer::Input;
  if (b == "o") return Buffer::Output;
  if (b == "s") return Buffer::Scratch;
  in.fail(where, attr + " \"" + b + "\" is not i, o or s");
}

}  // namespace

Program read_msccl_xml(const std::string& xml, const std::string& file) {
  Reader in(file);
  pt::ptree doc;
  try {
    std::istringstream is(xml);
    pt::read_xml(is, doc);
  } catch (const pt::xml_parser_error& e) {
    throw UserError(file + ":" + std::to_string(e.line()) + ": " + e.message());
  }
  const auto algo_opt = doc.get_child_optional("algo");
  if (!algo_opt) in.fail("", "has no <algo> element");
  const pt::ptree& algo = *algo_opt;
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
    in.fail(a, "coll \"" + coll + "\" is not a collective incsim runs (allreduce, reduce_scatter, allgather, broadcast, "
               "alltoall)");
  const std::string proto_text = in.text(algo, a, "proto");
  Protocol proto;
  if (!protocol_of(proto_text, proto)) in.fail(a, "proto \"" + to_lower(proto_text) + "\" is not Simple, LL or LL128");
  // inplace names the layout the steps assume; outofplace alone says the
  // algorithm is out of place.
  const bool in_place = in.optional(algo, a, "inplace", in.optional(algo, a, "outofplace", 0) ? 0 : 1) == 1;
  const std::string name = algo.get<std::string>("<xmlattr>.name", "msccl");

  // Read every gpu's thread blocks first: dependencies may point forward.
  std::vector<Buffers> buffers(n);
  std::vector<std::vector<Tb>> gpus(n);
  std::vector<char> seen(n, 0);
  for (const auto& [tag, g] : algo) {
    if (tag != "gpu") continue;
    const int id = static_cast<int>(in.integer(g, "gpu", "id", 0, n - 1));
    const std::string gw = "gpu " + std::to_string(id);
    if (seen[id]) in.fail(gw, "appears twice");
    seen[id] = 1;
    buffers[id].input = static_cast<uint32_t>(in.integer(g, gw, "i_chunks", 0, 1L << 30));
    buffers[id].output = static_cast<uint32_t>(in.integer(g, gw, "o_chunks", 0, 1L << 30));
    buffers[id].scratch = static_cast<uint32_t>(in.integer(g, gw, "s_chunks", 0, 1L << 30));
    for (const auto& [ttag, t] : g) {
      if (ttag != "tb") continue;
      Tb tb;
      tb.id = in.integer(t, gw + " tb", "id", 0, 65535);
      const std::string tw = gw + " tb " + std::to_string(tb.id);
      for (const Tb& o : gpus[id])
        if (o.id == tb.id) in.fail(tw, "appears twice");
      tb.send = in.integer(t, tw, "send", -1, n - 1);
      tb.recv = in.integer(t, tw, "recv", -1, n - 1);
      tb.chan = in.integer(t, tw, "chan", 0, nchannels - 1);
      if (tb.send == id || tb.recv == id) in.fail(tw, "names its own gpu as a peer");
      for (const auto& [stag, s] : t) {
        if (stag != "step") continue;
        Step st;
        const long index = in.integer(s, tw + " step", "s", 0, 1L << 30);
        st.where = tw + " step " + std::to_string(index);
        if (index != static_cast<long>(tb.steps.size()))
          in.fail(st.where, "comes where step " + std::to_string(tb.steps.size()) + " belongs");
        st.kind = step_kind(in, st.where, in.text(s, st.where, "type"));
        st.srcbuf = buffer(in, st.where, "srcbuf", in.text(s, st.where, "srcbuf"));
        st.dstbuf = buffer(in, st.where, "dstbuf", in.text(s, st.where, "dstbuf"));
        st.srcoff = in.integer(s, st.where, "srcoff", -1, 1L << 30);
        st.dstoff = in.integer(s, st.where, "dstoff", -1, 1L << 30);
        st.cnt = in.integer(s, st.where, "cnt", 0, 65535);
        st.depid = in.integer(s, st.where, "depid", -1, 65535);
        st.deps = in.integer(s, st.where, "deps", -1, 1L << 30);
        if (sends(st.kind) && tb.send < 0)
          in.fail(st.where, std::string("sends (type ") + op_name(st.kind) + ") but thread block " +
                                std::to_string(tb.id) + " sends to no peer (send=-1)");
        if (receives(st.kind) && tb.recv < 0)
          in.fail(st.where, std::string("receives (type ") + op_name(st.kind) + ") but thread block " +
                                std::to_string(tb.id) + " receives from no peer (recv=-1)");
        tb.steps.push_back(st);
      }
      gpus[id].push_back(std::move(tb));
    }
  }
  for (int g = 0; g < n; ++g)
    if (!seen[g]) in.fail("algo", "ngpus is " + std::to_string(n) + " but gpu " + std::to_string(g) + " is missing");

  ProgramBuilder pb(name, c, n, in_place);
  for (int g = 0; g < n; ++g) {
    pb.begin_rank(g, buffers[g]);
    std::map<long, uint32_t> first_op;  // tb id -> its first operation
    uint32_t count = 0;
    for (const Tb& tb : gpus[g]) {
      first_op[tb.id] = count;
      count += static_cast<uint32_t>(tb.steps.size());
    }
    for (const Tb& tb : gpus[g])
      for (const Step& st : tb.steps) {
        Operation o;
        o.kind = st.kind;
        o.proto = proto;
        o.channel = static_cast<uint16_t>(tb.chan);
        o.queue = static_cast<uint16_t>(tb.id);
        if (sends(st.kind)) o.send_peer = static_cast<int32_t>(tb.send);
        if (receives(st.kind)) o.recv_peer = static_cast<int32_t>(tb.recv);
        // The local chunks: a send reads src; a receive writes dst (its src is
        // the sender's chunk); copy and reduce read src and write dst.
        const bool local_src = st.kind == OpKind::Send || st.kind == OpKind::Copy || st.kind == OpKind::Reduce;
        const bool local_dst = receives(st.kind) || st.kind == OpKind::Copy || st.kind == OpKind::Reduce;
        const auto ref = [&](const char* what, Buffer b, long off) {
          if (off < 0 || st.cnt < 1) in.fail(st.where, std::string("has no ") + what + " chunk (offset " +
                                                           std::to_string(off) + ", cnt " + std::to_string(st.cnt) + ")");
          const uint32_t limit = chunk_limit(pb.program(), g, b);
          if (static_cast<uint64_t>(off) + static_cast<uint64_t>(st.cnt) > limit)
            in.fail(st.where, std::string(what) + " chunks [" + std::to_string(off) + ", " +
                                  std::to_string(off + st.cnt) + ") of buffer " + buffer_letter(b) +
                                  " lie outside its " + std::to_string(limit) + " chunks");
          return chunk(b, static_cast<uint32_t>(off), static_cast<uint16_t>(st.cnt));
        };
        if (local_src) o.src = ref("src", st.srcbuf, st.srcoff);
        if (local_dst) o.dst = ref("dst", st.dstbuf, st.dstoff);
        std::vector<uint32_t> deps;
        if (st.depid >= 0 || st.deps >= 0) {
          const auto it = std::find_if(gpus[g].begin(), gpus[g].end(), [&](const Tb& t) { return t.id == st.depid; });
          if (it == gpus[g].end() || st.deps < 0 || st.deps >= static_cast<long>(it->steps.size()))
            in.fail(st.where, "depends on tb " + std::to_string(st.depid) + " step " + std::to_string(st.deps) +
                                  ", which does not exist");
          deps.push_back(first_op[st.depid] + static_cast<uint32_t>(st.deps));
        }
        pb.add(o, deps);
      }
  }
  return pb.build();
}

Program read_msccl_file(const std::string& path) {
  return read_msccl_xml(read_text_file(path, "MSCCL algorithm file"), path);
}

}  // namespace incsim::collectives
