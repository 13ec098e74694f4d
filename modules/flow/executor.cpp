#include "flow/executor.h"

#include <algorithm>

namespace incsim::flow {

double last_access(double mem_ns, double jitter_ns, double spread, uint64_t packets, int accesses) {
  const double j = jitter_ns;
  const double base = accesses * mem_ns;
  if (j <= 0 || packets <= 1) return base + accesses * j / 2;
  // E[max_k (X_k - k s)], X_k the sum of `accesses` jitters uniform in
  // [0, j), s the spacing: the integral of 1 - F over [0, accesses j),
  // F(x) = prod_k P(X_k <= x + k s).
  const double s = spread / static_cast<double>(packets), top = accesses * j;
  const auto cdf = [j, accesses](double x) {
    if (accesses == 1) return std::min(1.0, x / j);
    const double u = x / j;  // the sum of two: triangular on [0, 2)
    return u >= 2 ? 1.0 : u <= 1 ? u * u / 2 : 1 - (2 - u) * (2 - u) / 2;
  };
  constexpr int kSteps = 32;
  double sum = 0;
  for (int step = 0; step < kSteps; ++step) {
    const double x = (step + 0.5) * top / kSteps;
    double f = 1;
    for (uint64_t k = 0; k < packets && x + static_cast<double>(k) * s < top; ++k)
      f *= cdf(x + static_cast<double>(k) * s);
    sum += 1 - f;
  }
  return base + sum * top / kSteps;
}

}  // namespace incsim::flow
