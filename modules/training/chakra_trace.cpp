#include "training/chakra_trace.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include <fcntl.h>
#include <unistd.h>

#include "chakra_et.pb.h"
#include "core/error.h"
#include "core/user_file.h"

namespace incsim::training {
namespace {

namespace pb = google::protobuf;

// A rank's trace is read as a stream and held as nodes of about 200 B each
// (an empty node takes 2 bytes of the file): at most 64 MiB of trace,
// compressed or inflated, and 2^18 nodes, so that refusing a bad file takes
// under a second and 100 MB, and a small gzip file cannot inflate to
// gigabytes. An iteration of that many nodes simulates for many minutes.
constexpr std::uintmax_t kMaxTraceBytes = std::uintmax_t{64} << 20;
constexpr size_t kMaxNodes = size_t{1} << 18;
// incsim's largest collective (parse_size's limit).
constexpr uint64_t kMaxCommBytes = uint64_t{1} << 40;

const char* const kNodeTypes[] = {"INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE",  "MEM_STORE_NODE",
                                  "COMP_NODE",    "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE",
                                  "STORAGE_NODE", "BATCH_NODE",     "CHECKPOINT_NODE"};
const char* const kCollectives[] = {"ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER",
                                    "SCATTER",    "BROADCAST",      "ALL_TO_ALL",           "REDUCE_SCATTER",
                                    "REDUCE_SCATTER_BLOCK", "BARRIER"};

class TraceError {
 public:
  explicit TraceError(const std::string& file) : file_(file) {}
  [[noreturn]] void node(uint64_t id, const std::string& what) const {
    throw UserError("chakra trace " + file_ + ", node " + std::to_string(id) + ": " + what);
  }
  [[noreturn]] void file(const std::string& what) const { throw UserError("chakra trace " + file_ + ": " + what); }

 private:
  std::string file_;
};

// An integer attribute whichever integer kind the producer chose.
int64_t integer(const chakra::AttributeProto& a, uint64_t id, const TraceError& err) {
  using A = chakra::AttributeProto;
  switch (a.value_case()) {
    case A::kInt32Val: return a.int32_val();
    case A::kInt64Val: return a.int64_val();
    case A::kUint32Val: return a.uint32_val();
    case A::kUint64Val: return static_cast<int64_t>(a.uint64_val());
    case A::kSint32Val: return a.sint32_val();
    case A::kSint64Val: return a.sint64_val();
    case A::kFixed32Val: return a.fixed32_val();
    case A::kFixed64Val: return static_cast<int64_t>(a.fixed64_val());
    case A::kSfixed32Val: return a.sfixed32_val();
    case A::kSfixed64Val: return a.sfixed64_val();
    case A::kBoolVal: return a.bool_val();
    default: err.node(id, "attribute '" + a.name() + "' must be an integer");
  }
}

uint64_t count(const chakra::AttributeProto& a, uint64_t id, const TraceError& err) {
  const int64_t v = integer(a, id, err);
  if (v < 0) err.node(id, "attribute '" + a.name() + "' must be at least 0, not " + std::to_string(v));
  return static_cast<uint64_t>(v);
}

ChakraNode from_proto(const chakra::Node& p, const TraceError& err) {
  ChakraNode n;
  n.id = p.id();
  n.name = p.name();
  if (p.type() < 0 || p.type() > static_cast<int>(ChakraNodeType::checkpoint))
    err.node(n.id, "node type " + std::to_string(p.type()) + " is not one Chakra defines");
  n.type = static_cast<ChakraNodeType>(p.type());
  n.data_deps.assign(p.data_deps().begin(), p.data_deps().end());
  n.ctrl_deps.assign(p.ctrl_deps().begin(), p.ctrl_deps().end());
  n.duration_micros = p.duration_micros();
  for (const auto& a : p.attr()) {
    const std::string& k = a.name();
    if (k == "is_cpu_op") n.is_cpu_op = integer(a, n.id, err) != 0;
    else if (k == "num_ops") n.num_ops = count(a, n.id, err);
    else if (k == "tensor_size") n.tensor_size = count(a, n.id, err);
    else if (k == "comm_size") n.comm_size = count(a, n.id, err);
    else if (k == "comm_src") n.comm_src = integer(a, n.id, err);
    else if (k == "comm_dst") n.comm_dst = integer(a, n.id, err);
    else if (k == "comm_tag") n.comm_tag = integer(a, n.id, err);
    else if (k == "pg_name") n.pg_name = a.string_val();
    else if (k == "comm_type") {
      const int64_t c = integer(a, n.id, err);
      if (c < 0 || c > static_cast<int>(ChakraCollective::barrier))
        err.node(n.id, "comm_type " + std::to_string(c) + " is not a collective Chakra defines");
      n.comm_type = static_cast<ChakraCollective>(c);
    }
  }
  if (n.comm_size > kMaxCommBytes)
    err.node(n.id, "comm_size " + std::to_string(n.comm_size) + " B is larger than 1 TiB, the largest " +
                       (n.type == ChakraNodeType::collective ? "collective" : "transfer") + " incsim runs");
  if (n.type == ChakraNodeType::send && n.comm_dst < 0) err.node(n.id, "a send has no comm_dst");
  if (n.type == ChakraNodeType::recv && n.comm_src < 0) err.node(n.id, "a receive has no comm_src");
  return n;
}

// Every dependency names a node of the trace, and they form no cycle.
void check_graph(const ChakraTrace& t, const TraceError& err) {
  std::unordered_map<uint64_t, size_t> index;
  for (size_t i = 0; i < t.nodes.size(); ++i)
    if (!index.emplace(t.nodes[i].id, i).second) err.node(t.nodes[i].id, "the id appears twice");
  std::vector<std::vector<size_t>> children(t.nodes.size());
  std::vector<size_t> parents(t.nodes.size(), 0);
  for (size_t i = 0; i < t.nodes.size(); ++i)
    for (const auto* deps : {&t.nodes[i].data_deps, &t.nodes[i].ctrl_deps})
      for (uint64_t d : *deps) {
        const auto it = index.find(d);
        if (it == index.end())
          err.node(t.nodes[i].id, "depends on node " + std::to_string(d) + ", which the trace does not have");
        children[it->second].push_back(i);
        ++parents[i];
      }
  // Kahn's order: what it never reaches is on a cycle or after one.
  std::vector<size_t> ready;
  for (size_t i = 0; i < parents.size(); ++i)
    if (parents[i] == 0) ready.push_back(i);
  size_t done = 0;
  while (!ready.empty()) {
    const size_t i = ready.back();
    ready.pop_back();
    ++done;
    for (size_t c : children[i])
      if (--parents[c] == 0) ready.push_back(c);
  }
  if (done == t.nodes.size()) return;
  for (size_t i = 0; i < parents.size(); ++i)
    if (parents[i] > 0) err.node(t.nodes[i].id, "is on a dependency cycle (or waits for one)");
}

}  // namespace

const char* to_string(ChakraNodeType t) { return kNodeTypes[static_cast<int>(t)]; }
const char* to_string(ChakraCollective c) { return kCollectives[static_cast<int>(c)]; }

ChakraTrace read_chakra_trace(const std::string& path) {
  const TraceError err(path);
  check_user_file(path, "chakra trace", kMaxTraceBytes);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UserError("cannot read chakra trace '" + path + "'");
  pb::io::FileInputStream raw(fd);
  raw.SetCloseOnDelete(true);
  // gzip's magic number: the first two bytes, read and put back.
  const void* head = nullptr;
  int got = 0;
  while (got == 0 && raw.Next(&head, &got)) {
  }
  const bool gzipped = got >= 2 && static_cast<const unsigned char*>(head)[0] == 0x1f &&
                       static_cast<const unsigned char*>(head)[1] == 0x8b;
  if (got > 0) raw.BackUp(got);
  std::unique_ptr<pb::io::GzipInputStream> gzip;
  pb::io::ZeroCopyInputStream* in = &raw;
  if (gzipped) {
    gzip = std::make_unique<pb::io::GzipInputStream>(&raw);
    in = gzip.get();
  }
  ChakraTrace t;
  t.file = path;
  // One CodedInputStream per message, as Chakra's protoio does, so no
  // stream-wide byte limit applies.
  // A gzip stream that stopped on an error: said as such, not as the end
  // of the trace or a message that does not parse.
  const auto corrupt = [&] {
    if (gzip && gzip->ZlibErrorCode() < 0)
      err.file(std::string("the gzip stream is corrupt or truncated (zlib: ") +
               (gzip->ZlibErrorMessage() ? gzip->ZlibErrorMessage() : "error " + std::to_string(gzip->ZlibErrorCode())) +
               ")");
  };
  auto next = [&](pb::MessageLite& msg, size_t index) {
    // A pipe has no size to check first: what it gives is counted.
    if (static_cast<std::uintmax_t>(in->ByteCount()) > kMaxTraceBytes)
      err.file(std::string(gzip ? "the gzip stream inflates to" : "the trace holds") + " more than " +
               std::to_string(kMaxTraceBytes >> 20) + " MiB, the most a trace holds");
    pb::io::CodedInputStream coded(in);
    uint32_t size = 0;
    if (!coded.ReadVarint32(&size)) {
      corrupt();
      return false;
    }
    if (size > kMaxTraceBytes)
      err.file("message " + std::to_string(index) + " claims " + std::to_string(size) +
               " bytes, more than a trace holds: the file is not a Chakra trace");
    const auto limit = coded.PushLimit(static_cast<int>(size));
    if (!msg.ParseFromCodedStream(&coded) || coded.BytesUntilLimit() != 0) {
      corrupt();
      err.file("message " + std::to_string(index) + (index == 0 ? " (the metadata)" : "") + " of " +
               std::to_string(size) + " bytes does not parse: the file is truncated or not a Chakra trace");
    }
    coded.PopLimit(limit);
    return true;
  };
  chakra::GlobalMetadata meta;
  if (!next(meta, 0)) err.file("the file is empty");
  t.version = meta.version();
  chakra::Node node;
  for (size_t i = 1; next(node, i); ++i) {
    if (t.nodes.size() == kMaxNodes)
      err.file("the trace has more than " + std::to_string(kMaxNodes) + " nodes, the most incsim runs of one rank");
    t.nodes.push_back(from_proto(node, err));
    node.Clear();
  }
  check_graph(t, err);
  return t;
}

std::string chakra_set_name(const std::string& model) {
  std::error_code ec;
  const auto is_set = [&ec](const std::string& name) { return std::filesystem::exists(name + ".0.et", ec); };
  if (model.size() <= 3 || model.compare(model.size() - 3, 3, ".et") != 0) return is_set(model) ? model : "";
  const std::string name = model.substr(0, model.size() - 3);
  const size_t dot = name.rfind('.');
  const bool rank_file = dot != std::string::npos && dot + 1 < name.size() &&
                         name.find_first_not_of("0123456789", dot + 1) == std::string::npos;
  return rank_file && !is_set(name) ? name.substr(0, dot) : name;
}

std::vector<ChakraTrace> read_chakra_traces(const std::string& name) {
  std::vector<ChakraTrace> ranks;
  for (size_t r = 0;; ++r) {
    const std::string path = name + "." + std::to_string(r) + ".et";
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) break;
    ranks.push_back(read_chakra_trace(path));
  }
  if (ranks.empty()) throw UserError("no chakra trace " + name + ".0.et");
  // (source, destination, tag, bytes) -> sends less receives, and the last
  // such node, to name.
  std::map<std::tuple<int64_t, int64_t, int64_t, uint64_t>, std::pair<int64_t, const ChakraNode*>> balance;
  const auto n = static_cast<int64_t>(ranks.size());
  for (int64_t r = 0; r < n; ++r)
    for (const auto& node : ranks[r].nodes) {
      const bool send = node.type == ChakraNodeType::send;
      if (!send && node.type != ChakraNodeType::recv) continue;
      const int64_t peer = send ? node.comm_dst : node.comm_src;
      if (peer >= n || peer == r)
        TraceError(ranks[r].file)
            .node(node.id, std::string(send ? "sends to" : "receives from") + " rank " + std::to_string(peer) +
                               (peer == r ? ", its own" : " of " + std::to_string(n)));
      auto& b = balance[{send ? r : peer, send ? peer : r, node.comm_tag, node.comm_size}];
      b.first += send ? 1 : -1;
      b.second = &node;
    }
  for (const auto& [key, b] : balance) {
    const auto& [src, dst, tag, size] = key;
    const std::string what = std::to_string(size) + " B with tag " + std::to_string(tag);
    if (b.first > 0)
      TraceError(ranks[src].file)
          .node(b.second->id, "a send of " + what + " to rank " + std::to_string(dst) + " that rank " +
                                  std::to_string(dst) + " never receives");
    if (b.first < 0)
      TraceError(ranks[dst].file)
          .node(b.second->id, "a receive of " + what + " from rank " + std::to_string(src) + " that rank " +
                                  std::to_string(src) + " never sends");
  }
  return ranks;
}

void write_chakra_trace(const std::string& path, const ChakraTrace& trace) {
  std::string bytes;
  pb::io::StringOutputStream stream(&bytes);
  auto write = [&](const pb::MessageLite& msg) {
    pb::io::CodedOutputStream coded(&stream);
    coded.WriteVarint32(static_cast<uint32_t>(msg.ByteSizeLong()));
    msg.SerializeWithCachedSizes(&coded);
  };
  chakra::GlobalMetadata meta;
  meta.set_version(trace.version);
  write(meta);
  for (const auto& n : trace.nodes) {
    chakra::Node p;
    p.set_id(n.id);
    p.set_name(n.name);
    p.set_type(static_cast<chakra::NodeType>(n.type));
    for (uint64_t d : n.data_deps) p.add_data_deps(d);
    for (uint64_t d : n.ctrl_deps) p.add_ctrl_deps(d);
    p.set_duration_micros(n.duration_micros);
    // The kinds ASTRA-sim 2's feeder reads each attribute as.
    auto attr = [&](const char* name) {
      auto* a = p.add_attr();
      a->set_name(name);
      return a;
    };
    attr("is_cpu_op")->set_bool_val(n.is_cpu_op);
    if (n.type == ChakraNodeType::compute) {
      attr("num_ops")->set_int64_val(static_cast<int64_t>(n.num_ops));
      attr("tensor_size")->set_uint64_val(n.tensor_size);
    }
    if (n.type == ChakraNodeType::collective) {
      attr("comm_type")->set_int64_val(static_cast<int64_t>(n.comm_type));
      if (!n.pg_name.empty()) attr("pg_name")->set_string_val(n.pg_name);
    }
    if (n.type == ChakraNodeType::send || n.type == ChakraNodeType::recv || n.type == ChakraNodeType::collective) {
      attr("comm_size")->set_int64_val(static_cast<int64_t>(n.comm_size));
      if (n.comm_src >= 0) attr("comm_src")->set_int32_val(static_cast<int32_t>(n.comm_src));
      if (n.comm_dst >= 0) attr("comm_dst")->set_int32_val(static_cast<int32_t>(n.comm_dst));
      attr("comm_tag")->set_int32_val(static_cast<int32_t>(n.comm_tag));
    }
    write(p);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!(out << bytes).flush()) throw UserError("cannot write chakra trace '" + path + "'");
}

}  // namespace incsim::training
