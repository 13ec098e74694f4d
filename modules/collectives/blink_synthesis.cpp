#include "blink_synthesis.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "collectives/bounds.h"
#include "core/error.h"
#include "topology/dgx1.h"

namespace incsim::collectives {

TreeSynthesis synthesize_trees(const topo::Topology& t, int n, const TreeSynthesisOptions& o) {
  const bool dgx1 = t.family == topo::to_string(topo::Dgx1Gen::V100) || t.family == topo::to_string(topo::Dgx1Gen::P100);
  const bool allreduce = o.allreduce;
  const bool blink = !o.rings;
  constexpr int kRoot = kTreeRoot;
  auto payload = [&](double bw) { return payload_bandwidth_GBps(bw, o.max_payload_bytes, o.header_bytes, 0); };
  TreeSynthesis out;
  std::vector<TreeShare> shares;
  // DGX-1 only (elsewhere every port that reaches the peer): the ports a
  // rank's messages to a peer take (program.h).
  std::vector<LinkHint> hints;
  std::ostringstream txt;
  txt << std::fixed << std::setprecision(3);
  if (dgx1) {
    const topo::Dgx1Gen gen = topo::parse_dgx1_gen(t.family);
    const std::vector<std::vector<int>> servers = topo::dgx1_servers(t);
    std::vector<int> gpus;  // physical numbers, server after server
    for (const auto& s : servers) gpus.insert(gpus.end(), s.begin(), s.end());
    const bool cluster = servers.size() > 1;
    const bool connected = topo::dgx1_nvlink_connected(gen, gpus);
    if (blink && !cluster && !connected)
      throw UserError("the allocated GPUs are not all joined by NVLinks, so Blink has no NVLink spanning tree; "
                      "use --algorithm ring, which falls back to PCIe");
    double nvl_GBps = 0;
    for (const auto& l : t.links())
      if (topo::dgx1_part(t, l.a.node) == topo::Dgx1Part::NvLink ||
          topo::dgx1_part(t, l.b.node) == topo::Dgx1Part::NvLink)
        nvl_GBps = l.bw_GBps;
    const double pcie_GBps = t.links()[t.link_at({t.endpoints()[0], topo::dgx1_pcie_port(t, 0)})].bw_GBps;
    bool nvlink = blink;
    std::string label = "";
    for (int g : gpus) label += (label.empty() ? "" : ",") + std::to_string(g);
    if (cluster) {
      // Several servers (Blink §3.4, A.2): within a server NVLinks, between
      // servers each local root's PCIe path to the network.
      nvlink = true;
      const int k = static_cast<int>(servers.size());
      std::vector<int> offset(k + 1, 0);
      for (int sv = 0; sv < k; ++sv) offset[sv + 1] = offset[sv] + static_cast<int>(servers[sv].size());
      label.clear();
      for (int sv = 0; sv < k; ++sv)
        for (size_t i = 0; i < servers[sv].size(); ++i)
          label += (i ? "," : sv ? "/" : "") + std::to_string(servers[sv][i]);
      double net_GBps = 0;
      for (const auto& l : t.links())
        if (topo::dgx1_part(t, l.a.node) == topo::Dgx1Part::Network ||
            topo::dgx1_part(t, l.b.node) == topo::Dgx1Part::Network)
          net_GBps = l.bw_GBps;
      // The bound: a server's network link carries the buffer each way, and
      // each server's NVLinks their all-reduce cut bound.
      out.algbw_bound_GBps = payload(net_GBps);
      out.bound_note = "the network link's payload bandwidth, or a server's NVLink cut bound if lower";
      std::vector<BlinkTrees> local;
      for (int sv = 0; sv < k; ++sv) {
        if (!topo::dgx1_nvlink_connected(gen, servers[sv])) {
          if (blink)
            throw UserError("the GPUs allocated on server " + std::to_string(sv) +
                            " are not all joined by NVLinks, so Blink has no NVLink spanning tree there");
          continue;
        }
        local.push_back(blink_dgx1_trees(gen, servers[sv], servers[sv][0], o.blink));
        out.algbw_bound_GBps = std::min(
            out.algbw_bound_GBps, cut_bounds(local.back().graph, 0).allreduce * payload(nvl_GBps));
      }
      if (blink) {
        // Three phases as one tree per flow: server j's root roots the flow;
        // each server reduces over one of its local trees to its root, which
        // sends to root j (one hop across the network), and back. Flows take
        // every combination of local trees, each in proportion to the
        // product of their weights, and 1/k of the buffer per root.
        txt << "# blink three-phase (Blink §3.4, A.2) on " << k << " " << o.platform << " servers, GPUs " << label
            << "; per server:\n";
        for (int sv = 0; sv < k; ++sv)
          txt << "server " << sv << ": " << local[sv].trees.trees.size() << " trees, rate " << local[sv].trees.rate()
              << " NVLinks, root gpu" << servers[sv][0] << "\n"
              << format_packing(local[sv].graph, local[sv].trees);
        for (int j = 0; j < (allreduce ? k : 1); ++j) {
          std::vector<size_t> pick(k, 0);
          for (;;) {
            TreeShare sh;
            sh.root = offset[j];
            sh.gather_parent.assign(n, kNone);
            for (int sv = 0; sv < k; ++sv) {
              const Tree& tr = local[sv].trees.trees[pick[sv]];
              for (size_t v = 0; v < servers[sv].size(); ++v)
                if (tr.parent_edge[v] >= 0)
                  sh.gather_parent[offset[sv] + v] = offset[sv] + local[sv].graph.edges[tr.parent_edge[v]].from;
              if (sv != j) sh.gather_parent[offset[sv]] = offset[j];
              sh.units *= std::max(1, static_cast<int>(std::lround(16 * tr.weight)));
            }
            if (allreduce) sh.reduce_parent = sh.gather_parent;
            shares.push_back(std::move(sh));
            int sv = 0;
            while (sv < k && ++pick[sv] == local[sv].trees.trees.size()) pick[sv++] = 0;
            if (sv == k) break;
          }
        }
        txt << shares.size() << " trees in all (" << (allreduce ? k : 1) << " cross-server roots x local tree "
            << "combinations)\n";
      } else {
        // NCCL-style: one ring through the servers in turn, each server's part
        // a path over NVLinks where one exists, both directions.
        std::vector<int> order;
        for (int sv = 0; sv < k; ++sv) {
          std::vector<int> p(servers[sv].size());
          for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<int>(i);
          std::vector<int> best = p;
          do {
            bool ok = true;
            for (size_t i = 0; i + 1 < p.size() && ok; ++i)
              ok = topo::dgx1_nvlinks(gen, servers[sv][p[i]], servers[sv][p[i + 1]]) > 0;
            if (ok) {
              best = p;
              break;
            }
          } while (std::next_permutation(p.begin(), p.end()));
          for (int i : best) order.push_back(offset[sv] + i);
        }
        std::vector<int> back{order[0]};
        for (int i = n - 1; i > 0; --i) back.push_back(order[i]);
        const std::vector<std::vector<int>> rings{order, back};
        txt << "# ring on " << k << " " << o.platform << " servers, GPUs " << label << ": 2 rings (both ways)\n";
        for (size_t i = 0; i < rings.size(); ++i) {
          txt << "ring " << i << ":";
          for (int r : rings[i]) txt << " " << t.node(t.endpoints()[r]).name;
          txt << "\n";
        }
        shares = ring_shares(n, rings, allreduce, kRoot);
      }
    } else {
      if (connected) {
        const BlinkTrees bt = blink_dgx1_trees(gen, gpus, gpus[kRoot], o.blink);
        // The bound: the NVLink graph's cuts (broadcast: Edmonds' optimum,
        // which the packing reaches within eps; all-reduce: cuts both ways and
        // each GPU's 2(n-1)/n), at one NVLink's payload bandwidth.
        const CutBounds cb = cut_bounds(bt.graph, kRoot);
        const double links = allreduce ? cb.allreduce : cb.broadcast;
        out.algbw_bound_GBps = links * payload(nvl_GBps);
        std::ostringstream note;
        note << std::fixed << std::setprecision(2) << "NVLink cut bound " << links << " links x "
             << payload(nvl_GBps) << " GB/s payload per link; Blink's packed rate " << bt.trees.rate();
        out.bound_note = note.str();
        if (blink) {
          shares = blink_shares(bt.graph, bt.trees, allreduce);
          txt << "# blink on " << o.platform << " GPUs " << label << ", root gpu" << gpus[kRoot] << ": "
              << bt.trees.trees.size() << " trees, rate " << bt.trees.rate() << " NVLinks (MWU " << bt.mwu.rate()
              << " over " << bt.mwu.trees.size() << " trees, " << bt.mwu_stats.iterations << " iterations)\n";
          txt << format_packing(bt.graph, bt.trees);
          if (o.hybrid && allreduce)
            throw UserError("blink.hybrid splits a broadcast over NVLink and PCIe (Blink A.3 evaluates broadcast); "
                            "run it with --collective broadcast");
          if (o.hybrid) {
            // Eq. (8) with T_dpa = 0: D_PCIe / D_total = BW_PCIe / (BW_PCIe + BW_NVL).
            const double bw_nvl = bt.trees.rate() * payload(nvl_GBps), bw_pcie = payload(pcie_GBps);
            int nvl_units = 0;
            for (const auto& sh : shares) nvl_units += sh.units;
            TreeShare chain;
            chain.root = kRoot;
            chain.gather_parent.assign(n, kNone);
            for (int k = 1; k < n; ++k) chain.gather_parent[(kRoot + k) % n] = (kRoot + k - 1) % n;
            chain.units = std::max(1, static_cast<int>(std::lround(nvl_units * bw_pcie / bw_nvl)));
            // Its messages take the PCIe port, on the chain's channel.
            for (int r = 0; r < n; ++r)
              for (int d = 0; d < n; ++d)
                if (d != r) hints.push_back({r, d, static_cast<int32_t>(shares.size()), {topo::dgx1_pcie_port(t, r)}});
            // Bound: what reaches the GPU with the fewest NVLinks in, plus its PCIe link.
            double least_in = 1e300;
            for (int v = 0; v < n; ++v) {
              if (v == kRoot) continue;
              double in = 0;
              for (const auto& e : bt.graph.edges) in += e.to == v ? e.cap : 0;
              least_in = std::min(least_in, in);
            }
            out.algbw_bound_GBps = least_in * payload(nvl_GBps) + bw_pcie;
            std::ostringstream note;
            note << std::fixed << std::setprecision(2) << "the least-linked GPU's " << least_in << " NVLinks in x "
                 << payload(nvl_GBps) << " GB/s plus its PCIe link's " << bw_pcie << " GB/s";
            out.bound_note = note.str();
            txt << "# hybrid (A.3, Eq. 8): a PCIe chain in GPU order from the root carries " << chain.units << " of "
                << nvl_units + chain.units << " units (" << 100.0 * chain.units / (nvl_units + chain.units)
                << "%)\n";
            shares.push_back(std::move(chain));
          }
        }
      }
      if (!blink) {
        std::vector<std::vector<int>> rings =
            connected ? pack_rings(dgx1_nvlink_graph(gen, gpus)) : std::vector<std::vector<int>>{};
        nvlink = !rings.empty();
        if (!nvlink) {
          // NCCL falls back to PCIe when NVLinks cannot close a ring: one ring
          // in GPU order through the PCIe tree.
          rings.push_back({});
          for (int r = 0; r < n; ++r) rings.back().push_back(r);
          const double b = payload(pcie_GBps);
          out.algbw_bound_GBps = allreduce ? b * n / (2.0 * (n - 1)) : b;
          out.bound_note = allreduce ? "one PCIe link's payload bandwidth x n / 2(n-1)" : "one PCIe link's payload bandwidth";
        }
        txt << "# ring on " << o.platform << " GPUs " << label << ": " << rings.size() << " rings over "
            << (nvlink ? "NVLink" : "PCIe") << "\n";
        for (size_t i = 0; i < rings.size(); ++i) {
          txt << "ring " << i << ":";
          for (int r : rings[i]) txt << " gpu" << gpus[r];
          txt << " (back to gpu" << gpus[rings[i][0]] << ")\n";
        }
        shares = ring_shares(n, rings, allreduce, kRoot);
      }
    }
    // Each message takes the NVLinks to its peer (split over a doubled pair),
    // or the PCIe port when the run uses PCIe or the pair has no NVLink.
    for (int r = 0; r < n; ++r)
      for (int d = 0; d < n; ++d) {
        if (d == r) continue;
        std::vector<int> ports = nvlink ? topo::dgx1_nvlink_ports(t, r, d) : std::vector<int>{};
        if (ports.empty()) ports = {topo::dgx1_pcie_port(t, r)};
        hints.push_back({r, d, kNone, std::move(ports)});
      }
  } else {
    // A switch fabric: m one-hop trees (§3.4); a broadcast is the root's one.
    shares = one_hop_shares(n);
    if (!allreduce) {
      shares = {shares[kRoot]};
      shares[0].reduce_parent.clear();
    }
    txt << "# blink one-hop trees on " << t.name << ": " << shares.size() << " trees, each rooted at one GPU with "
        << n - 1 << " children one switch away\n";
  }
  out.text = txt.str();
  // Each tree a channel of its own; a NIC forwards a chunk as soon as it has
  // it (§4.1-4.2), a tree's chunks in order on each link.
  Program& p = out.program = tree_shares_program(blink ? "blink" : "ring", n, shares, o.chunks,
                                                 allreduce ? kNone : kRoot);
  p.dataflow = true;
  p.links = std::move(hints);
  int units = 0, most = 0;
  for (const TreeShare& sh : shares) {
    units += sh.units;
    most = std::max(most, sh.units);
  }
  out.largest_share = static_cast<double>(most) / units;
  return out;
}

}  // namespace incsim::collectives
