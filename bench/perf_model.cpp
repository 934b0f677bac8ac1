#include "perf_model.hpp"

#include <sched.h>

#include <algorithm>

namespace ruccl::perf {

std::size_t usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

ModelEstimate all_reduce_model(std::size_t ranks, std::size_t bytes, double aggregate_gbps,
                               std::size_t cpus, const Row& measured) {
  ModelEstimate m;
  const double n = static_cast<double>(ranks);
  const double s = static_cast<double>(bytes);
  m.read_bytes = ranks > 1 ? 3.0 * (n - 1) / n * s : 0;
  m.write_bytes = ranks > 1 ? 2.0 * (n - 1) / n * s : 0;
  m.memcpy_gbps = aggregate_gbps;
  m.cores = std::max<std::size_t>(1, std::min(ranks, cpus));
  if (aggregate_gbps > 0)  // bytes / (GB/s) = ns; / 1e3 = us
    m.time_us = n * (m.read_bytes + m.write_bytes) / (2.0 * aggregate_gbps) / 1e3;
  auto fraction = [&](const Timing& t) {
    return t.ran && t.error.empty() && t.p50_us > 0 ? m.time_us / t.p50_us : 0.0;
  };
  m.fraction_out_of_place = fraction(measured.out_of_place);
  m.fraction_in_place = fraction(measured.in_place);
  return m;
}

}  // namespace ruccl::perf
