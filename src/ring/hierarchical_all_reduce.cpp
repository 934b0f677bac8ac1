// Hierarchical all-reduce over nested levels, innermost first: `local` (the
// ranks of this process, which read each other's memory), optionally `node`
// (one rank per process of this node with the same local index, joined by
// the node's shared memory), and `across` (the ranks with the same index in
// the next level up, joined by the transport: one per process, or one per
// node when there is a node level).
//
// How it works, level by level, over the range this rank holds (the whole
// tensor at the first level):
//   1. reduce-scatter of the range over the level's W ranks: rank i ends with
//      the level's sum of part i (one of W balanced parts);
//   2. all-reduce of part i over the levels above, the same way;
//   3. all-gather of the parts over the level: every rank ends with the range.
// The outermost level is a ring all-reduce of its range (reduce-scatter, then
// all-gather). With D local ranks and P processes (two levels), each byte
// crosses between processes 2(P-1)/P times per shard, as in a ring over the P
// processes, but every process's D ranks share that traffic, and the 2(D-1)
// local steps never leave the process; a node level does the same for the
// processes of a node, so only 1/(D*P) of the tensor per rank crosses between
// nodes. A level of one rank vanishes (its steps are empty): the next level
// reads the input directly. After the levels above returned, the level's
// ranks agree on their outcome (RankRun::share), so a failure of any one of
// the rings above reaches every rank of the level before its all-gather.
#include "ring/algorithms.hpp"
#include "ring/passes.hpp"

namespace ruccl::ring {
namespace {

// All-reduce of `range` over levels[0..]: `reduced` says whether an inner
// level already left partial sums in the buffer (else they are in the input).
// `depth` names the level in the phase marks, which go to `marks` (the
// innermost level, which traces them).
Status levels_all_reduce(std::span<RankRun* const> levels, RankRun& marks, std::size_t depth,
                         Range range, std::size_t unit, bool reduced) {
  RankRun& level = *levels.front();
  const bool local = depth == 0;
  std::vector<Range> parts = balanced_ranges(range.count / unit, level.world(), unit);
  for (Range& p : parts) p.offset += range.offset;
  const Combine combine = reduced ? Combine::kReduce : Combine::kReduceInput;
  const Source source = reduced ? Source::kSend : Source::kInput;
  const bool split = level.world() > 1;
  if (levels.size() == 1) {
    Status mine = ring_pass(level, parts, reduce_scatter_step, combine, source);
    if (mine.is_ok()) mine = ring_all_gather(level, parts);
    return mine;
  }
  if (split) {
    marks.phase(local ? "local reduce-scatter" : "node reduce-scatter");
    RUCCL_TRY(ring_pass(level, parts, reduce_scatter_step, combine, source));
  }
  const Range part = split ? parts[level.rank()] : range;
  if (levels.size() == 2) marks.phase("inter-node exchange");
  Status above =
      levels_all_reduce(levels.subspan(1), marks, depth + 1, part, unit, reduced || split);
  RUCCL_TRY(level.share(std::move(above)));
  if (split) {
    marks.phase(local ? "local all-gather" : "node all-gather");
    RUCCL_TRY(ring_all_gather(level, parts));
  }
  return Status::ok();
}

}  // namespace

Status hierarchical_all_reduce(std::span<RankRun* const> levels, std::size_t units,
                               std::size_t unit) {
  if (levels.empty()) return Status(ErrorCode::kInternal, "hierarchical all-reduce without levels");
  return levels_all_reduce(levels, *levels.front(), 0, Range{0, units * unit}, unit, false);
}

}  // namespace ruccl::ring
