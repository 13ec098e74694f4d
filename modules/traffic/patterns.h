#pragma once
// Synthetic traffic patterns: which endpoint a packet goes to. Plain C++, no
// SystemC, tested on their own.
//
// Definitions (Dally and Towles, Principles and Practices of Interconnection
// Networks, 2004, §3.2 and Table 3.1), with source s and destination d:
//  - uniform random: d drawn uniformly from all N endpoints, s included
//    (lambda_sd = 1/N, as Dally and Towles and BookSim's "uniform",
//    RandomInt(nodes - 1), define it); `uniform_self = false` draws from the
//    N - 1 others instead;
//  - transpose: on a k x k grid (mesh, torus) (x, y) -> (y, x); elsewhere the
//    bit permutation d_i = s_{(i + b/2) mod b} on N = 2^b endpoints with b
//    even (Table 3.1; BookSim's "transpose"), which is the same thing on a
//    2^m x 2^m grid;
//  - bit-complement: d_i = NOT s_i on N = 2^b endpoints (Table 3.1);
//  - neighbour: on a grid (x + 1 mod kx, y) (Table 3.1's neighbor, d_x = s_x
//    + 1 mod k); elsewhere s + 1 mod N;
//  - hotspot: with probability h the hot endpoint, otherwise uniform random
//    as above (Pfister and Norton, "Hot spot contention and combining in
//    multistage interconnection networks", ICPP 1985, define h this way).
// Endpoint numbering is the topology's (topology/direct_networks.h: on a grid
// endpoint i sits at x = i % kx, y = i / kx).
#include <cstdint>
#include <string>
#include <vector>

namespace incsim::traffic {

enum class Pattern : uint8_t { Uniform, Transpose, BitComplement, Hotspot, Neighbor };

// "uniform", "transpose", "bitcomp", "hotspot", "neighbor" (also
// "bit-complement", "neighbour"); throws UserError naming the choices.
Pattern parse_pattern(const std::string& name);
const char* pattern_name(Pattern p);        // the command-line name
const char* pattern_description(Pattern p); // for table headers
extern const char* const kPatternNames;     // "uniform, transpose, bitcomp, hotspot, neighbor"

struct PatternParams {
  Pattern pattern = Pattern::Uniform;
  int nodes = 0;           // endpoints N
  int kx = 0, ky = 0;      // grid shape (mesh, torus); 0: not a grid
  bool uniform_self = true;
  int hot_node = 0;
  double hot_fraction = 0.1;
};

// Throws UserError (one sentence) where the pattern is undefined: transpose
// on a non-square grid or, off a grid, N not 4^m; bit-complement with N not
// a power of two; a hot endpoint out of range or a fraction outside [0, 1];
// uniform without self on a single endpoint.
void check(const PatternParams& p);

// Small, fast, seedable generator (splitmix64, Steele, Lea and Flood,
// OOPSLA 2014): each endpoint draws from its own stream.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  uint32_t below(uint32_t n) { return static_cast<uint32_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }

 private:
  uint64_t s_;
};

// The destination of a permutation pattern (transpose, bit-complement,
// neighbour) for source s; -1 for the random ones (uniform, hotspot).
int permutation_dest(const PatternParams& p, int s);
// One packet's destination (draws from rng only for the random patterns).
int destination(const PatternParams& p, int s, Rng& rng);
// The probability that a packet from s goes to each endpoint (size N).
std::vector<double> dest_distribution(const PatternParams& p, int s);

// Bernoulli injection (Dally and Towles §23.2; BookSim's "bernoulli"
// injection process): one trial per slot with success probability q; the
// number of slots from one packet to the next (at least 1) is geometric.
// Drawing the gap instead of every slot gives the same process with one draw
// per packet. q in (0, 1].
uint64_t geometric_gap(double q, Rng& rng);

}  // namespace incsim::traffic
