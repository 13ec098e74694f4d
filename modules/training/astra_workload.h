#pragma once
// ASTRA-sim 1.0's text workload format (astra-sim/workload/Workload.cc,
// Workload::initialize_workload; its workload_inputs/README.md), so the
// workload files papers publish read unchanged:
//
//   HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 4 checkpoints: 2 2 11 checkpoint_initiates: 2 19 10
//   21
//   Q1 -1 4946203 NONE 0 4946203 ALLREDUCE 69730304 4946203 ALLREDUCE 36227072 10
//
// Line 1: the parallelism, then what it takes (HYBRID_TRANSFORMER*: the
// model-parallel group; *_FWD_IN_BCKWD: checkpoint layers; HYBRID_DLRM*:
// the last bottom layer). Line 2: the number of layers. Then a line per
// layer: name, a reserved field (ASTRA-sim reads and ignores it), then for
// the forward pass, the input gradient and the weight gradient each a
// compute time in cycles, a collective and its size in bytes; last the
// update time (cycles after the weight-gradient collective);
// HYBRID_CUSTOMIZED adds the layer's own parallelism. Fields are separated
// by any whitespace. Plain C++, no SystemC.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "training/model.h"

namespace incsim::training {

enum class AstraCollective { none, allreduce, allgather, reducescatter, alltoall, allreduce_alltoall };

const char* to_string(AstraCollective c);

struct AstraComm {
  AstraCollective type = AstraCollective::none;
  uint64_t bytes = 0;
};

struct AstraPass {
  uint64_t cycles = 0;
  AstraComm comm;
};

struct AstraLayer {
  std::string name;
  int64_t reserved = -1;
  AstraPass forward, input_grad, weight_grad;
  uint64_t update_cycles = 0;
  std::string parallelism;  // HYBRID_CUSTOMIZED: this layer's; else empty
  bool checkpoint = false;             // *_FWD_IN_BCKWD
  bool checkpoint_initiates = false;   // *_FWD_IN_BCKWD
  int line = 0;  // in the file, for messages
};

struct AstraWorkload {
  std::string parallelism;  // DATA, HYBRID_TRANSFORMER, MICRO, ...
  uint32_t model_parallel_group = 0;  // HYBRID_TRANSFORMER*; 0 when the file omits it
  int64_t dlrm_last_bottom_layer = -1;  // HYBRID_DLRM*
  std::vector<AstraLayer> layers;
};

// Throws UserError "workload file F, line N: ..." for anything ASTRA-sim
// would misread: an unknown parallelism or collective, a field that is not a
// number, too few or too many fields or layers, a checkpoint past the last
// layer.
AstraWorkload parse_astra_workload(const std::string& text, const std::string& file);
AstraWorkload read_astra_workload(const std::string& path);

// A workload as a Model a training iteration runs: each layer's forward
// time, its input- and weight-gradient times together as its backward time
// (cycles at clock_hz), and its weight-gradient all-reduce as its fp32
// gradient (bytes / 4 weights), all-reduced among the data-parallel
// replicas. DATA: no other collective. MODEL, HYBRID_DATA_MODEL,
// HYBRID_MODEL_DATA, HYBRID_TRANSFORMER and HYBRID_TRANSFORMER_FWD_IN_BCKWD:
// the forward and input-gradient all-reduces are the layer's activation
// all-reduces in its model-parallel group (tp_forward_batch_bytes,
// tp_backward_batch_bytes; none for the first layer's input gradient, as
// ASTRA-sim issues none), an ALLTOALL, ALLGATHER or REDUCESCATTER there that
// collective of those bytes in the group (tp_forward_kind, tp_backward_kind;
// ASTRA-sim's sizes: an all-gather's each NPU's share).
// Workload::decode_involved_dimensions puts the model-parallel group on
// ASTRA-sim's first network dimensions, so
// consecutive NPUs, except for HYBRID_MODEL_DATA, whose data-parallel group
// is the first dimension and whose model-parallel groups are therefore
// strided (strided_groups). FWD_IN_BCKWD: each layer that initiates a
// recomputation reruns the forward pass from the nearest checkpoint at or
// below it (Layer::recompute_from), as
// Workload::iterate_hybrid_parallel_Transformer_fwd_in_bckwd does.
// HYBRID_DLRM and HYBRID_DLRM_ENHANCED: layer 0 is the embedding, whose
// forward and input-gradient ALLTOALLs exchange its lookups among all NPUs
// (AstraModel::dlrm). DATA and DLRM: a layer's input gradient is a kernel
// after its weight gradient's (MeasuredTimes::input_grad_after_s), and
// layer 0 has none, as Workload::iterate_data_parallel and
// iterate_hybrid_parallel_DLRM run them.
// UserError "workload file F[, line N]: ..." for another parallelism
// (customised, micro and inference files), a weight-gradient collective
// other than an all-reduce (incsim all-reduces gradients in buckets), ALLREDUCEALLTOALL (ASTRA-sim 1.0's Layer stops on it),
// bytes that are no whole number of fp32 elements, checkpoints ASTRA-sim
// would misread: a layer that initiates a recomputation with no checkpoint
// at or below it, or that is itself a checkpoint, or two that recompute
// from the same checkpoint; and DLRM files ASTRA-sim's loop would misrun: a
// last bottom layer that is the embedding or leaves no top layer, an
// embedding collective other than ALLTOALL, or a forward or input-gradient
// collective on a layer above the embedding.
struct AstraDlrm {
  uint64_t forward_bytes = 0;   // the embedding's forward all-to-all (0: NONE)
  uint64_t backward_bytes = 0;  // its input-gradient all-to-all (0: NONE)
  int last_bottom = 0;          // layers above it wait for the forward all-to-all
  // HYBRID_DLRM: the embedding's backward kernel waits for the backward
  // all-to-all; HYBRID_DLRM_ENHANCED: it does not.
  bool embedding_waits = true;
};
struct AstraModel {
  Model model;
  double update_s = 0;             // the layers' update times summed
  uint32_t model_parallel_group = 0;  // the file's model_parallel_NPU_group; 0: none given
  bool strided_groups = false;     // HYBRID_MODEL_DATA: model-parallel groups strided, data-parallel consecutive
  std::optional<AstraDlrm> dlrm;   // HYBRID_DLRM*
};
AstraModel astra_model(const AstraWorkload& w, const std::string& file, double clock_hz);

}  // namespace incsim::training
