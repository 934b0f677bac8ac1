#include "perf_types.hpp"

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

}  // namespace ruccl::perf
