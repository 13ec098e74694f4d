#include "blink_trees.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace incsim::collectives {

CapGraph dgx1_nvlink_graph(topo::Dgx1Gen gen, const std::vector<int>& gpus) {
  topo::check_dgx1_allocation(gpus);
  CapGraph g;
  g.n = static_cast<int>(gpus.size());
  for (int x : gpus) g.labels.push_back("gpu" + std::to_string(x));
  for (int a = 0; a < g.n; ++a)
    for (int b = 0; b < g.n; ++b) {
      if (a == b) continue;
      const int links = topo::dgx1_nvlinks(gen, gpus[a], gpus[b]);
      if (links > 0) g.edges.push_back({a, b, static_cast<double>(links)});
    }
  return g;
}

BlinkTrees blink_dgx1_trees(topo::Dgx1Gen gen, const std::vector<int>& gpus, int root_gpu, const BlinkOptions& opt) {
  BlinkTrees out;
  out.gpus = gpus;
  out.graph = dgx1_nvlink_graph(gen, gpus);
  auto it = std::find(gpus.begin(), gpus.end(), root_gpu);
  if (it == gpus.end()) throw UserError("root GPU " + std::to_string(root_gpu) + " is not in the allocation");
  if (!topo::dgx1_nvlink_connected(gen, gpus))
    throw UserError("the allocated GPUs are not all joined by NVLinks, so no NVLink spanning tree exists");
  out.link_GBps = topo::dgx1_nvlink_GBps(gen);
  const int root = static_cast<int>(it - gpus.begin());
  out.mwu = pack_mwu(out.graph, root, opt.eps, &out.mwu_stats);
  out.trees = minimize_trees(out.graph, out.mwu, opt.minimize, &out.min_stats);
  return out;
}

}  // namespace incsim::collectives
