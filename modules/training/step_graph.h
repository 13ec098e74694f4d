#pragma once
// A training iteration of data, tensor and pipeline parallelism (and an
// ASTRA-sim DLRM file's embedding all-to-alls) as one training::Graph
// (docs/training.md; docs/architecture.md, "One graph runner"): the GPUs'
// layout, each stage's kernels in order, and their lowering.
#include <cstdint>
#include <functional>
#include <vector>

#include "compute.h"
#include "gpu/compute_engine.h"
#include "graph.h"
#include "model.h"

namespace incsim::training {

// Where each GPU sits (Megatron-LM's initialize_model_parallel numbering,
// Narayanan et al. 2021 §3): GPU = stage x (GPUs / pp) + replica x tp +
// place, so tensor-parallel groups are consecutive GPUs and stages
// consecutive blocks; `strided` swaps replica and place (ASTRA-sim's
// HYBRID_MODEL_DATA), so a place's replicas are consecutive.
struct Layout {
  int gpus = 0, tp = 1, pp = 1;
  bool strided = false;
  int stage_of(int g) const { return g / (gpus / pp); }
  int replicas() const { return gpus / pp / tp; }
  int gpu_at(int s, int r, int p) const { return s * (gpus / pp) + (strided ? p * replicas() + r : r * tp + p); }
  // gpu_at's inverse: GPU g's replica and place.
  int replica_of(int g) const { return strided ? g % (gpus / pp) % replicas() : g % (gpus / pp) / tp; }
  int place_of(int g) const { return strided ? g % (gpus / pp) / replicas() : g % (gpus / pp) % tp; }
  // Data-parallel group t: stage t / tp, place t % tp; its GPUs by replica.
  int group_of(int g) const { return stage_of(g) * tp + place_of(g); }
  std::vector<int> dp_gpus(int t) const;
  // Tensor-parallel group k: stage k / replicas, replica k % replicas; its GPUs by place.
  int tp_group_of(int g) const { return stage_of(g) * replicas() + replica_of(g); }
  std::vector<int> tp_gpus(int k) const;
};

// A stage's kernel, in the order its GPUs run them (without --pp, forward
// then backward). `tp_size` (an index into the run's activation sizes, -1:
// none) is the all-reduce its tensor-parallel group runs after it; a
// pipeline stage's first kernel of a micro-batch waits for what the
// neighbour sends, its last sends on (once its group's all-reduce, if it has
// one, has ended).
struct StepKernel {
  enum class Edge : uint8_t { none, activation, gradient };
  gpu::ComputeEngine::Phase phase;
  int layer;
  double seconds;
  int tp_size;
  int micro = 0;
  Edge wait = Edge::none, send = Edge::none;
  bool recompute = false;   // a forward kernel run again in the backward pass
  bool input_grad = false;  // a backward kernel of the input gradient alone, after the weight gradient's
  int exchange = -1;        // once it ends, the embedding's all-to-all with this index starts (the GPU goes on)
  int exchange_wait = -1;   // it starts once the embedding's all-to-all with this index has ended
};

// Stage s's kernels over its layers [lo, hi) (PipeDream-Flush's 1F1B,
// Narayanan et al. 2021 §2.2): its warm-up forwards, then a forward and a
// backward in turn, then its cool-down backwards; one stage: forward then
// backward. A backward kernel runs the forward kernels from its layer's
// checkpoint again first (Layer::recompute_from) and is followed by its
// input gradient's where the layer times one apart. tp_size(layer, forward):
// the kernel's tensor-parallel collective (-1: none), asked in kernel order.
std::vector<StepKernel> stage_kernels(int s, int pp, int micro, int lo, int hi, const std::vector<Layer>& layers,
                                      const std::vector<LayerTimes>& times,
                                      const std::function<int(int layer, bool forward)>& tp_size);

// The iteration's graph. Streams: the pipeline links from 0 (link 2g
// carries GPU g's activations to g + gpus / pp, 2g + 1 the gradients back;
// a transfer's size 0), the data-parallel groups' buckets from dp_stream
// (size: the bucket), the tensor-parallel groups' collectives from
// tp_stream (size: the kernel's tp_size), the embedding's all-to-alls at
// exchange_stream (size: its index). what[node]: a kernel's index in its
// stage's list (-1: the optimizer step), a transfer's micro-batch.
struct StepGraph {
  Graph graph;
  int dp_stream = 0, tp_stream = 0, exchange_stream = 0;
  std::vector<int> what;
};

// `kernels` and `buckets` per stage (a bucket's bytes, reduced in order);
// bucket_of[layer]: its bucket in its stage, -1 for a layer without weights.
StepGraph lower_step(const Layout& layout, int micro, const std::vector<std::vector<StepKernel>>& kernels,
                     const std::vector<std::vector<uint64_t>>& buckets, const std::vector<int>& bucket_of,
                     double update_s);

}  // namespace incsim::training
