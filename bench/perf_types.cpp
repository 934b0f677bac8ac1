#include "perf_types.hpp"

#include <limits>

namespace ruccl::perf {

std::string_view kind_name(CollectiveKind kind) { return collective_name(kind); }

std::optional<CollectiveKind> parse_kind(std::string_view name) {
  for (CollectiveKind kind : kAllCollectives)
    if (kind_name(kind) == name) return kind;
  return std::nullopt;
}

bool kind_reduces(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduce ||
         kind == CollectiveKind::kReduceScatter;
}

bool kind_has_root(CollectiveKind kind) {
  return kind == CollectiveKind::kBroadcast || kind == CollectiveKind::kReduce;
}

bool kind_has_in_place(CollectiveKind kind) { return kind != CollectiveKind::kAllToAllV; }

double bus_factor(CollectiveKind kind, std::size_t ranks) {
  const double n = static_cast<double>(ranks);
  switch (kind) {
    case CollectiveKind::kAllReduce: return 2.0 * (n - 1) / n;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAllV: return (n - 1) / n;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce: return 1.0;
  }
  return 1.0;
}

std::string bytes_text(std::size_t bytes) {
  if (bytes == std::numeric_limits<std::size_t>::max()) return "unbounded";
  static constexpr const char* kUnits[] = {"K", "M", "G"};
  std::string unit;
  for (const char* u : kUnits) {
    if (bytes == 0 || bytes % 1024 != 0) break;
    bytes /= 1024;
    unit = u;
  }
  return std::to_string(bytes) + unit;
}

}  // namespace ruccl::perf
