// rules(kind): the table of src/collectives, one entry per collective kind.
#include "collectives/collective.hpp"

namespace ruccl::core {

const CollectiveRules& rules(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return kAllReduceRules;
    case CollectiveKind::kReduce: return kReduceRules;
    case CollectiveKind::kBroadcast: return kBroadcastRules;
    case CollectiveKind::kAllGather: return kAllGatherRules;
    case CollectiveKind::kReduceScatter: return kReduceScatterRules;
    case CollectiveKind::kAllToAllV: return kAllToAllVRules;
  }
  return kAllReduceRules;  // unreachable: kinds are checked where they enter (is_valid)
}

Status invalid(std::size_t rank, const std::string& what) {
  return Status(ErrorCode::kInvalidArgument, "rank " + std::to_string(rank) + " " + what);
}

}  // namespace ruccl::core
