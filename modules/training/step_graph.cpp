#include "step_graph.h"

#include <algorithm>
#include <utility>

namespace incsim::training {

std::vector<int> Layout::dp_gpus(int t) const {
  std::vector<int> gpus;
  for (int r = 0; r < replicas(); ++r) gpus.push_back(gpu_at(t / tp, r, t % tp));
  return gpus;
}

std::vector<int> Layout::tp_gpus(int k) const {
  std::vector<int> gpus;
  for (int p = 0; p < tp; ++p) gpus.push_back(gpu_at(k / replicas(), k % replicas(), p));
  return gpus;
}

std::vector<StepKernel> stage_kernels(int s, int pp, int micro, int lo, int hi, const std::vector<Layer>& layers,
                                      const std::vector<LayerTimes>& times,
                                      const std::function<int(int layer, bool forward)>& tp_size) {
  using Edge = StepKernel::Edge;
  using Phase = gpu::ComputeEngine::Phase;
  std::vector<StepKernel> kernels;
  const auto pass = [&](Phase phase, int m) {
    const bool forward = phase == Phase::Forward;
    const size_t start = kernels.size();
    const auto kernel = [&](Phase ph, int k, bool recompute) {
      const bool f = ph == Phase::Forward;
      kernels.push_back({ph, k, f ? times[k].forward_s : times[k].backward_s, tp_size(k, f), m, Edge::none, Edge::none,
                         recompute});
    };
    for (int q = 0; q < hi - lo; ++q) {
      const int k = forward ? lo + q : hi - 1 - q;
      // Activation checkpointing: the forward kernels from the checkpoint again first.
      for (int j = layers[k].recompute_from; !forward && j >= 0 && j < k; ++j) kernel(Phase::Forward, j, true);
      kernel(phase, k, false);
      if (!forward && times[k].input_grad_after_s > 0)
        kernels.push_back({Phase::Backward, k, times[k].input_grad_after_s, -1, m, Edge::none, Edge::none, false, true});
    }
    // A micro-batch's first kernel waits for the neighbour's data, its last sends on.
    kernels[start].wait = forward ? (s > 0 ? Edge::activation : Edge::none) : (s + 1 < pp ? Edge::gradient : Edge::none);
    kernels.back().send = forward ? (s + 1 < pp ? Edge::activation : Edge::none) : (s > 0 ? Edge::gradient : Edge::none);
  };
  const int warm = std::min(pp - s - 1, micro);
  for (int j = 0; j < warm; ++j) pass(Phase::Forward, j);
  for (int j = 0; j < micro - warm; ++j) pass(Phase::Forward, warm + j), pass(Phase::Backward, j);
  for (int j = micro - warm; j < micro; ++j) pass(Phase::Backward, j);
  return kernels;
}

// The iteration as one graph (training::GraphRunner runs it). Each GPU's
// kernels are queued on its compute engine in order, a kernel that waits
// for something (its group's all-reduce of activations, a neighbour stage's
// transfer, an embedding all-to-all) only once that has ended. Streams: the
// pipeline links (link 2g carries GPU g's activations to g + gpus / pp,
// 2g + 1 the gradients back), the data-parallel groups' buckets (in order,
// each once every GPU of the group has its gradients), the tensor-parallel
// groups' all-reduces, the embedding's all-to-alls. A GPU's optimizer step
// waits for its data-parallel group's GPUs to run their last kernel, its
// group's last bucket and every all-to-all. A node's children are told in
// the order the hardware sees the work start: the all-to-all a kernel
// begins, its all-reduce of activations or its transfer, its bucket.
StepGraph lower_step(const Layout& layout, int micro, const std::vector<std::vector<StepKernel>>& kernels_of,
                     const std::vector<std::vector<uint64_t>>& buckets_of, const std::vector<int>& bucket_of,
                     double update_s) {
  using Edge = StepKernel::Edge;
  using Kind = Graph::Kind;
  using Phase = gpu::ComputeEngine::Phase;
  StepGraph out;
  Graph& graph = out.graph;
  const int n = layout.gpus, stage = n / layout.pp, links = 2 * (n - stage);
  for (int l = 0; l < links; ++l) graph.add_stream(2);
  graph.keys = links;  // a link's sends match its receives in order
  out.dp_stream = links;
  for (int t = 0; t < layout.tp * layout.pp; ++t) graph.add_stream(layout.replicas());
  out.tp_stream = out.dp_stream + layout.tp * layout.pp;
  for (int k = 0; layout.tp > 1 && k < n / layout.tp; ++k) graph.add_stream(layout.tp);
  out.exchange_stream = graph.add_stream(n);
  const auto node = [&](Kind kind, int g, int stream, int place, int size, int what) {
    out.what.push_back(what);
    return graph.add_communication(kind, g, stream, place, 0, size, kind == Kind::collective ? -1 : stream);
  };
  // The optimizer steps group by group: a communication's end releases
  // them to the launcher, which queues them in this order.
  std::vector<uint32_t> optimizer(n), through(n);
  for (int t = 0; t < layout.tp * layout.pp; ++t)
    for (const int g : layout.dp_gpus(t)) {
      optimizer[g] = graph.add_compute(g, update_s, static_cast<int>(Phase::Update));
      graph.nodes[optimizer[g]].after_launch = true;
      out.what.push_back(-1);
    }
  std::vector<std::vector<uint32_t>> buckets(n), exchanges(n);
  for (int g = 0; g < n; ++g) {
    const int group = out.dp_stream + layout.group_of(g);
    for (size_t b = 0; b < buckets_of[layout.stage_of(g)].size(); ++b) {
      buckets[g].push_back(node(Kind::collective, g, group, layout.replica_of(g), static_cast<int>(b), -1));
      if (b > 0) graph.depend(buckets[g][b - 1], buckets[g][b]);  // reduced in order
    }
  }
  for (int g = 0; g < n; ++g) {
    const int s = layout.stage_of(g), group = out.tp_stream + layout.tp_group_of(g);
    const std::vector<StepKernel>& kernels = kernels_of[s];
    // What the neighbour stages send it, one receive per micro-batch.
    std::vector<uint32_t> activations, gradients;
    for (int m = 0; m < micro; ++m) {
      if (s > 0) activations.push_back(node(Kind::recv, g, 2 * (g - stage), 1, 0, m));
      if (s + 1 < layout.pp) gradients.push_back(node(Kind::recv, g, 2 * g + 1, 1, 0, m));
    }
    uint32_t previous = Graph::kNone, reduced = Graph::kNone;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const StepKernel& k = kernels[i];
      const uint32_t kernel = graph.add_compute(g, k.seconds, static_cast<int>(k.phase), k.layer);
      out.what.push_back(static_cast<int>(i));
      if (previous != Graph::kNone) graph.queue_behind(previous, kernel);
      if (reduced != Graph::kNone) graph.depend(reduced, kernel);
      if (k.wait != Edge::none) graph.depend((k.wait == Edge::activation ? activations : gradients)[k.micro], kernel);
      if (k.exchange_wait >= 0) graph.depend(exchanges[g][k.exchange_wait], kernel);
      if (k.exchange >= 0) {
        exchanges[g].push_back(node(Kind::collective, g, out.exchange_stream, g, k.exchange, -1));
        graph.depend(kernel, exchanges[g].back());
      }
      uint32_t after = kernel;
      reduced = Graph::kNone;
      if (k.tp_size >= 0) {
        reduced = after = node(Kind::collective, g, group, layout.place_of(g), k.tp_size, -1);
        graph.depend(kernel, after);
      }
      if (k.send != Edge::none)
        graph.depend(after, node(Kind::send, g, k.send == Edge::activation ? 2 * g : 2 * (g - stage) + 1, 0, 0, k.micro));
      if (k.phase == Phase::Backward && !k.input_grad && !buckets[g].empty() && bucket_of[k.layer] >= 0)
        graph.depend(kernel, buckets[g][bucket_of[k.layer]]);
      previous = kernel;
      through[g] = after;
    }
  }
  for (int t = 0; t < layout.tp * layout.pp; ++t)
    for (const int h : layout.dp_gpus(t))
      for (const int g : layout.dp_gpus(t)) graph.depend(through[h], optimizer[g]);
  for (int g = 0; g < n; ++g) {
    if (!buckets[g].empty()) graph.depend(buckets[g].back(), optimizer[g]);
    for (const uint32_t e : exchanges[g]) graph.depend(e, optimizer[g]);
  }
  return out;
}

}  // namespace incsim::training
