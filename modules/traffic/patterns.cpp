#include "patterns.h"

#include <cmath>

#include "core/error.h"

namespace incsim::traffic {

const char* const kPatternNames = "uniform, transpose, bitcomp, hotspot, neighbor";

Pattern parse_pattern(const std::string& name) {
  if (name == "uniform") return Pattern::Uniform;
  if (name == "transpose") return Pattern::Transpose;
  if (name == "bitcomp" || name == "bit-complement") return Pattern::BitComplement;
  if (name == "hotspot") return Pattern::Hotspot;
  if (name == "neighbor" || name == "neighbour") return Pattern::Neighbor;
  throw UserError("unknown traffic pattern '" + name + "'; choose one of " + kPatternNames);
}

const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::Uniform: return "uniform";
    case Pattern::Transpose: return "transpose";
    case Pattern::BitComplement: return "bitcomp";
    case Pattern::Hotspot: return "hotspot";
    case Pattern::Neighbor: return "neighbor";
  }
  return "?";
}

const char* pattern_description(Pattern p) {
  switch (p) {
    case Pattern::Uniform: return "uniform random";
    case Pattern::Transpose: return "transpose";
    case Pattern::BitComplement: return "bit-complement";
    case Pattern::Hotspot: return "hotspot";
    case Pattern::Neighbor: return "neighbour";
  }
  return "?";
}

namespace {
bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }
int log2_exact(int n) {
  int b = 0;
  while ((1 << b) < n) ++b;
  return b;
}
bool grid(const PatternParams& p) { return p.kx > 0 && p.ky > 0 && p.kx * p.ky == p.nodes; }
}  // namespace

void check(const PatternParams& p) {
  const std::string n = std::to_string(p.nodes);
  if (p.nodes < 2) throw UserError("synthetic traffic needs at least 2 endpoints, not " + n);
  switch (p.pattern) {
    case Pattern::Transpose:
      if (grid(p)) {
        if (p.kx != p.ky)
          throw UserError("transpose (x, y) -> (y, x) needs a square grid, not " + std::to_string(p.kx) + "x" +
                          std::to_string(p.ky));
      } else if (!power_of_two(p.nodes) || log2_exact(p.nodes) % 2 != 0) {
        throw UserError("transpose off a grid swaps the two halves of an endpoint's bits, so it needs 4^m endpoints, "
                        "not " + n);
      }
      break;
    case Pattern::BitComplement:
      if (!power_of_two(p.nodes))
        throw UserError("bit-complement needs a power-of-two number of endpoints, not " + n);
      break;
    case Pattern::Hotspot:
      if (p.hot_node < 0 || p.hot_node >= p.nodes)
        throw UserError("the hot endpoint " + std::to_string(p.hot_node) + " is not one of the " + n + " endpoints");
      if (!(p.hot_fraction >= 0 && p.hot_fraction <= 1))
        throw UserError("the hotspot fraction must be between 0 and 1");
      break;
    case Pattern::Uniform:
    case Pattern::Neighbor:
      break;
  }
}

int permutation_dest(const PatternParams& p, int s) {
  switch (p.pattern) {
    case Pattern::Transpose: {
      if (grid(p)) return (s / p.kx) + (s % p.kx) * p.kx;  // (x, y) -> (y, x)
      const int half = log2_exact(p.nodes) / 2;
      const int lo = (1 << half) - 1;
      return ((s >> half) & lo) | ((s & lo) << half);
    }
    case Pattern::BitComplement:
      return ~s & (p.nodes - 1);
    case Pattern::Neighbor:
      if (grid(p)) return (s % p.kx + 1) % p.kx + (s / p.kx) * p.kx;
      return (s + 1) % p.nodes;
    case Pattern::Uniform:
    case Pattern::Hotspot:
      break;
  }
  return -1;
}

namespace {
int uniform_dest(const PatternParams& p, int s, Rng& rng) {
  if (p.uniform_self) return static_cast<int>(rng.below(static_cast<uint32_t>(p.nodes)));
  const int d = static_cast<int>(rng.below(static_cast<uint32_t>(p.nodes - 1)));
  return d >= s ? d + 1 : d;
}
}  // namespace

int destination(const PatternParams& p, int s, Rng& rng) {
  if (p.pattern == Pattern::Uniform) return uniform_dest(p, s, rng);
  if (p.pattern == Pattern::Hotspot) {
    // The hot endpoint's own hot draws go to itself only where uniform
    // traffic may; otherwise they fall back to uniform.
    if (rng.uniform() < p.hot_fraction && (p.uniform_self || s != p.hot_node)) return p.hot_node;
    return uniform_dest(p, s, rng);
  }
  return permutation_dest(p, s);
}

std::vector<double> dest_distribution(const PatternParams& p, int s) {
  std::vector<double> d(static_cast<size_t>(p.nodes), 0.0);
  const int others = p.uniform_self ? p.nodes : p.nodes - 1;
  auto spread = [&](double weight) {
    for (int k = 0; k < p.nodes; ++k)
      if (p.uniform_self || k != s) d[k] += weight / others;
  };
  if (p.pattern == Pattern::Uniform) {
    spread(1.0);
  } else if (p.pattern == Pattern::Hotspot) {
    const bool hot = p.uniform_self || s != p.hot_node;
    if (hot) d[p.hot_node] += p.hot_fraction;
    spread(hot ? 1.0 - p.hot_fraction : 1.0);
  } else {
    d[permutation_dest(p, s)] = 1.0;
  }
  return d;
}

uint64_t geometric_gap(double q, Rng& rng) {
  if (q >= 1.0) return 1;
  // Inversion: the first success of Bernoulli(q) trials is at
  // 1 + floor(ln U / ln(1 - q)), U uniform on (0, 1].
  const double u = 1.0 - rng.uniform();
  const double g = std::floor(std::log(u) / std::log1p(-q));
  return g >= 1e18 ? static_cast<uint64_t>(1e18) : 1 + static_cast<uint64_t>(g);
}

}  // namespace incsim::traffic
