#pragma once
// Chakra execution traces (MLCommons Chakra; ASTRA-sim 2's input): one
// protobuf file per rank, NAME.RANK.et, each a GlobalMetadata message and
// then the rank's nodes (compute, memory, communication) with their
// dependencies, every message preceded by its length as a varint (Chakra's
// protolib; a gzip-compressed file is read too). The schema incsim reads is
// chakra_et.proto. Plain C++; protobuf stays inside the library.
#include <cstdint>
#include <string>
#include <vector>

namespace incsim::training {

// Chakra's NodeType, by value.
enum class ChakraNodeType {
  invalid = 0,
  metadata = 1,
  mem_load = 2,
  mem_store = 3,
  compute = 4,
  send = 5,
  recv = 6,
  collective = 7,
  storage = 8,
  batch = 9,
  checkpoint = 10,
};

// Chakra's CollectiveCommType, by value.
enum class ChakraCollective {
  all_reduce = 0,
  reduce = 1,
  all_gather = 2,
  gather = 3,
  scatter = 4,
  broadcast = 5,
  all_to_all = 6,
  reduce_scatter = 7,
  reduce_scatter_block = 8,
  barrier = 9,
};

const char* to_string(ChakraNodeType t);
const char* to_string(ChakraCollective c);

// A node with the attributes ASTRA-sim 2's feeder reads (et_feeder_node.cpp).
struct ChakraNode {
  uint64_t id = 0;
  std::string name;
  ChakraNodeType type = ChakraNodeType::invalid;
  std::vector<uint64_t> data_deps;
  std::vector<uint64_t> ctrl_deps;
  uint64_t duration_micros = 0;  // a measured run time (compute)
  bool is_cpu_op = true;         // Chakra's default when the attribute is absent
  uint64_t num_ops = 0;          // compute: operations, for a roofline
  uint64_t tensor_size = 0;      // compute: bytes touched
  ChakraCollective comm_type = ChakraCollective::all_reduce;  // collective nodes
  uint64_t comm_size = 0;        // communication: bytes
  int64_t comm_src = -1;         // receive: the sending rank (-1: none given)
  int64_t comm_dst = -1;         // send: the receiving rank
  int64_t comm_tag = 0;
  std::string pg_name;           // the process group of a collective
};

struct ChakraTrace {
  std::string file;
  std::string version;  // GlobalMetadata's
  std::vector<ChakraNode> nodes;  // in file order
};

// One rank's file. Throws UserError "chakra trace F, node N: ..." (or the
// message's position when a message does not parse) for a truncated file,
// a node id given twice, a dependency on a node the file does not have, a
// dependency cycle, a collective type Chakra does not define, a send without
// a destination or a receive without a source, an attribute of the wrong
// kind.
ChakraTrace read_chakra_trace(const std::string& path);

// The set NAME that --model names, or "" if it names none: NAME.et (incsim's
// form), NAME itself when NAME.0.et exists (ASTRA-sim's
// --workload-configuration prefix), or one rank's file NAME.3.et.
std::string chakra_set_name(const std::string& model);

// NAME.0.et, NAME.1.et, ... as far as they go. Beyond each file's checks,
// every send and receive names a rank of the set other than its own, and
// each rank's sends to another (source, destination, tag, bytes) are
// matched by as many receives there.
std::vector<ChakraTrace> read_chakra_traces(const std::string& name);

// Writes a trace as Chakra does (for tests, and for traces incsim makes).
void write_chakra_trace(const std::string& path, const ChakraTrace& trace);

}  // namespace incsim::training
