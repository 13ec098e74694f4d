#pragma once
// Builders for the networks MultiTree is evaluated on (Huang et al., ISCA 2021,
// §V-A and §VI-A): 2D mesh and torus (direct networks), the k-ary 2-level fat
// tree and EFLOPS' BiGraph (indirect networks). Plain C++, no SystemC.
//
// Defaults (MultiTree Table III): links 150 ns and 16 GB/s.
//
// Node numbering, which the schedule synthesis and its tests rely on:
//  - mesh/torus: endpoint i sits at x = i % kx, y = i / kx and is attached to
//    router i ("r<i>"); router ports list the neighbours in the order -Y, +Y,
//    -X, +X (only those that exist on a mesh edge), then the endpoint last.
//    MultiTree (§III-C) checks neighbours "in Y dimension then in X dimension",
//    which is this port order.
//  - mesh/torus routing is dimension order, X then Y, minimal on the torus
//    (ties broken by coordinates, plus_direction() in the .cpp); a torus
//    wrap-around link of a dimension of 3 or more is a dateline
//    (Link::dateline). Fat tree and BiGraph keep shortest-path routing.
//  - fat tree and BiGraph: endpoint i sits on leaf switch i / k (fat tree) or
//    switch i / per_switch (BiGraph), on that switch's port i % k; switch ports
//    list the endpoints first, then the links to other switches.
#include "topology/topology.h"

namespace incsim::topo {

constexpr double kMultiTreeLinkGBps = 16.0;     // MultiTree Table III
constexpr double kMultiTreeLinkLatencyNs = 150;  // MultiTree Table III

// A kx x ky mesh: one router per node, linked to its 2-4 neighbours, and one
// endpoint per router. The endpoint's link has the bandwidth of all the
// router's network links together (degree x bw) unless nic_bw_GBps > 0:
// "we assume the network interface bandwidth matches the network bandwidth of
// the attached router in direct networks" (MultiTree §V-A). It has the
// network links' latency unless nic_latency_ns >= 0.
Topology make_mesh(int kx, int ky, double bw_GBps = kMultiTreeLinkGBps,
                   double latency_ns = kMultiTreeLinkLatencyNs, double nic_bw_GBps = 0, double nic_latency_ns = -1);
// The same with wrap-around links in both dimensions. A dimension of size 2
// gets two parallel links between the two routers (the wrap-around link and
// the direct one), so every router still has 4 network ports; a dimension of
// size 1 has no links.
Topology make_torus(int kx, int ky, double bw_GBps = kMultiTreeLinkGBps,
                    double latency_ns = kMultiTreeLinkLatencyNs, double nic_bw_GBps = 0, double nic_latency_ns = -1);

// Dimension-order routing, X then Y, on a mesh or torus graph (t.grid set,
// network links carrying their dim): router i is switch i, at x = i % kx,
// y = i / kx. A router port's direction comes from the neighbour it leads to;
// where two ports lead to the same neighbour (a torus dimension of size 2)
// the first is the - direction, the second the +, as make_grid() numbers
// them. For Topology::finalize(); a YAML file with `routing: dimension-order`
// gets its routes from it too.
Topology::RouteFn dimension_order_routes(const Topology& t);

// A 2-level fat tree with `nodes` endpoints and k endpoints per leaf switch:
// nodes / k leaf switches, k spine switches, one link from every leaf to every
// spine (full bisection). With nodes = k * k this is the k-ary 2-tree of
// Petrini and Vanneschi that BookSim's fattree builds: 16 nodes = 4-ary,
// 64 nodes = 8-ary (MultiTree §VI-A). Endpoint links have bandwidth bw.
Topology make_fattree(int nodes, int k, double bw_GBps = kMultiTreeLinkGBps,
                      double latency_ns = kMultiTreeLinkLatencyNs);

// BiGraph (EFLOPS, Dong et al. HPCA 2020), as the MultiTree paper uses it
// ("32-node 4x8 and 64-node 4x16 BiGraph", "a two-stage fully connected
// BiGraph", "the extra link traversal ... between the upper and lower
// switches", §I and §VI-A). Our reading: `per_switch` x `switches` nodes;
// the switches form two groups of switches / 2 (upper and lower), every
// upper switch is linked once to every lower switch and to no other upper
// switch, and each switch has per_switch endpoints. So 4x8 = 4 nodes on each of
// 8 switches (32 nodes) and 4x16 = 64 nodes on 16 switches. Two nodes on one
// switch are 1 switch apart, on switches of different groups 2, on different
// switches of one group 3 (through a switch of the other group).
Topology make_bigraph(int per_switch, int switches, double bw_GBps = kMultiTreeLinkGBps,
                      double latency_ns = kMultiTreeLinkLatencyNs);

}  // namespace incsim::topo
