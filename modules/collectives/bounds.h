#pragma once
// Analytical bounds (DESIGN.md, "Reporting and bounds") and the nccl-tests
// bus-bandwidth factors (NVIDIA/nccl-tests doc/PERFORMANCE.md).
#include <cstdint>
#include <functional>

#include "collectives/program.h"

namespace incsim::collectives {

// Payload bandwidth one endpoint can inject, GB/s: each link direction carries
// a header per packet plus the acknowledgements for the writes coming in the
// other way (one header-only packet per incoming write, Klenk §V and §VI-A).
double payload_bandwidth_GBps(double link_bw_GBps, uint32_t max_payload, uint32_t header_bytes,
                              uint32_t ack_bytes);

// Without in-network compute each endpoint moves factor x M, with the
// nccl-tests bus-bandwidth factor: all-reduce 2(n-1)/n (Patarasuk & Yuan
// 2009), reduce-scatter and all-gather (n-1)/n of the whole buffer M.
// t >= factor * M / B.
double bandwidth_bound_us(uint64_t bytes, double busbw_factor, double endpoint_GBps);
double allreduce_busbw_factor(int n);
double gather_busbw_factor(int n);  // reduce-scatter, all-gather
// The collective's: broadcast 1 (every byte crosses each rank's link once),
// all-to-all (n-1)/n (each rank sends all but its own block).
double busbw_factor(Collective c, int n);

// What any algorithm must move across a cut of the network from the side
// holding `from` of the n ranks to the side holding the `to` others, per
// byte of the message (busbw's bytes): every byte of a side's result that
// depends on the other side's data crosses at least once, reduced there or
// not (an all-reduce's whole buffer; an all-gather's blocks of the sending
// side). root_from: the root is on the sending side (rooted collectives).
double cut_crossing(Collective c, int n, int from, int to, bool root_from);

// Whether the bound charges each GPU's links with the acknowledgements of
// the writes it takes in: only where the collective's busiest GPU both
// sends and receives. NVLS's links carry none (multicast stores are posted,
// reads answered). The root of a gather only receives, that of a scatter
// only sends, and so does each GPU of a broadcast or a reduce between two:
// their acknowledgements go the other way, on link directions that carry
// nothing else.
bool bound_charges_acks(const Program& p);

// A program's own traffic. What rank r of program p sends, in chunks of
// the message, to the peers `near` accepts (inside) and to the others
// (across): its sends, its multicast stores, its reducing writes (across if
// any member of the group is not near), and its data the switches read for
// a group's reducing reads (its own read's too under multimem), which are
// near.
void sent_chunks(const Program& p, int r, const std::function<bool(int)>& near, double& inside, double& across);
// The busiest rank's chunks in or out per chunk of the message, over its
// own links, where the switches reduce and multicast (NVLS on the cores:
// an all-gather's GPU sends its share and takes everyone's).
double busiest_moved(const Program& p);
// What the bound charges each GPU per byte of the message: the busiest
// rank's traffic where the switches reduce or multicast (Klenk §III: push
// and pull move M in and out, NVLS M (n + 1) / n), else the collective's
// busbw factor, the least any algorithm without in-network compute moves
// (Patarasuk and Yuan 2009).
double moved_per_byte(const Program& p);

// Reduction table sizes from Little's law (Klenk §IV-B, §IV-C), bytes, with
// GB/s x ns = bytes. B_in: a GPU's injection bandwidth; d_max: the most
// switch hops between two GPUs; L_hop: one hop's latency; L_GPU: a GPU's
// response latency; p: GPUs in the reduction.
// Eq. (1), pull, per GPU (spread over its access ports):
//   C_min = B_in / (p - 1) * (2 d_max L_hop + L_GPU)
double pull_table_bytes(double b_in_GBps, int p, int d_max, double l_hop_ns, double l_gpu_ns);
// Eq. (2), push, for the whole network: C_min = B_in d_max L_hop
double push_table_bytes(double b_in_GBps, int d_max, double l_hop_ns);

}  // namespace incsim::collectives
