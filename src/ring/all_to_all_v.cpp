// Pairwise all-to-all-v (bounded).
//
// How it works: rank r's send buffer holds its rows in destination order; its
// recv buffer gets the rows from each source in source order. Step 0 copies r's
// own block locally; at step s (1..n-1) rank r sends its block for rank r+s and
// receives the block of rank r-s. One peer pair per step keeps every link busy
// without contention. Blocks are cut into messages of at most the byte budget,
// whole rows only, so staging for one message never exceeds the budget.
#include "ring/algorithms.hpp"
#include "ring/schedule.hpp"

namespace ruccl::ring {
namespace {
// Rows that ranks below `source` send to `dest`: where source's block lands at dest.
std::size_t rows_before(const std::vector<std::vector<std::size_t>>& rows, std::size_t source,
                        std::size_t dest) {
  std::size_t n = 0;
  for (std::size_t s = 0; s < source; ++s) n += rows[s][dest];
  return n;
}
}  // namespace

Status pairwise_all_to_all_v(RankRun& run, const std::vector<std::vector<std::size_t>>& rows,
                             std::size_t row) {
  const std::size_t world = run.world();
  const std::size_t rank = run.rank();
  // Where my block for each destination starts in my send buffer, and where each
  // source's block lands in my recv buffer (in rows).
  const std::vector<std::size_t> send_at = exclusive_prefix(rows[rank]);
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  for (std::size_t step = 0; step < world; ++step) {
    sends.clear();
    recvs.clear();
    const std::size_t dst = a2a_send_peer(rank, world, step);
    const std::size_t src = a2a_recv_peer(rank, world, step);
    // My block for dst, landing after the blocks of lower sources at dst.
    append_messages(sends, dst, Range{send_at[dst] * row, rows[rank][dst] * row},
                    rows_before(rows, rank, dst) * row, run.message_elements());
    // src's block for me, read at its offset in src's send buffer.
    const std::size_t src_at = exclusive_prefix(rows[src])[rank];
    append_messages(recvs, src, Range{src_at * row, rows[src][rank] * row},
                    rows_before(rows, src, rank) * row, run.message_elements());
    RUCCL_TRY(run.step(sends, recvs, Combine::kCopy));
  }
  return Status::ok();
}

}  // namespace ruccl::ring
