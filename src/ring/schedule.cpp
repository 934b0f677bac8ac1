#include "ring/schedule.hpp"

#include <algorithm>
#include <string>

namespace ruccl::ring {

Range balanced_range(std::size_t units, std::size_t parts, std::size_t index, std::size_t unit) {
  const std::size_t base = units / parts;
  const std::size_t extra = units % parts;
  const std::size_t first = index * base + (index < extra ? index : extra);
  const std::size_t len = base + (index < extra ? 1 : 0);
  return Range{first * unit, len * unit};
}

std::vector<Range> balanced_ranges(std::size_t units, std::size_t parts, std::size_t unit) {
  std::vector<Range> out;
  out.reserve(parts);
  for (std::size_t i = 0; i < parts; ++i) out.push_back(balanced_range(units, parts, i, unit));
  return out;
}

RingStep reduce_scatter_step(std::size_t rank, std::size_t world, std::size_t step) {
  // Rank r sends chunk r-s-1 and receives chunk r-s-2; at step world-2 it
  // receives (and completes) chunk r - world = r.
  const std::size_t w2 = 2 * world;
  return RingStep{(rank + w2 - step % world - 1) % world, (rank + w2 - step % world - 2) % world};
}

RingStep all_gather_step(std::size_t rank, std::size_t world, std::size_t step) {
  const std::size_t w2 = 2 * world;
  return RingStep{(rank + w2 - step % world) % world, (rank + w2 - step % world - 1) % world};
}

std::size_t broadcast_position(std::size_t rank, std::size_t root, std::size_t world) {
  return (rank + world - root) % world;
}

std::size_t reduce_position(std::size_t rank, std::size_t root, std::size_t world) {
  return (rank + 2 * world - root - 1) % world;
}

std::size_t chain_rank(std::size_t position, std::size_t root, std::size_t world,
                       bool root_is_head) {
  return root_is_head ? (root + position) % world : (root + 1 + position) % world;
}

std::vector<std::size_t> level_coordinates(std::size_t rank, std::span<const std::size_t> worlds) {
  std::vector<std::size_t> c;
  c.reserve(worlds.size());
  for (std::size_t w : worlds) {
    if (w == 0) return {};
    c.push_back(rank % w);
    rank /= w;
  }
  if (rank != 0) return {};
  return c;
}

std::size_t rooted_levels(std::span<const std::size_t> mine, std::span<const std::size_t> root) {
  const std::size_t n = std::min(mine.size(), root.size());
  std::size_t levels = n == 0 ? 0 : 1;
  while (levels < n && mine[levels - 1] == root[levels - 1]) ++levels;
  return levels;
}

std::vector<std::size_t> level_blocks(std::span<const std::size_t> mine,
                                      std::span<const std::size_t> worlds, std::size_t level,
                                      std::size_t member) {
  std::vector<std::size_t> out;
  if (level >= worlds.size() || mine.size() != worlds.size() || member >= worlds[level]) return out;
  // The rank's coordinates below `level`, then `member`, as a rank of the
  // levels up to `level`; every combination of the levels above on top.
  std::size_t low = 0, stride = 1;
  for (std::size_t j = 0; j <= level; ++j) {
    low += (j == level ? member : mine[j]) * stride;
    stride *= worlds[j];
  }
  std::size_t above = 1;
  for (std::size_t j = level + 1; j < worlds.size(); ++j) above *= worlds[j];
  out.reserve(above);
  for (std::size_t h = 0; h < above; ++h) out.push_back(low + h * stride);
  return out;
}

std::size_t chain_steps(std::size_t world, std::size_t segments) {
  if (world < 2 || segments == 0) return 0;
  return segments + world - 2;
}

std::optional<std::size_t> chain_send_segment(std::size_t position, std::size_t world,
                                              std::size_t segments, std::size_t step) {
  if (position + 1 >= world || step < position) return std::nullopt;
  const std::size_t segment = step - position;
  if (segment >= segments) return std::nullopt;
  return segment;
}

std::optional<std::size_t> chain_recv_segment(std::size_t position, std::size_t world,
                                              std::size_t segments, std::size_t step) {
  if (position == 0 || position >= world) return std::nullopt;
  return chain_send_segment(position - 1, world, segments, step);
}

std::vector<Range> segment_ranges(std::size_t units, std::size_t segment_units, std::size_t unit) {
  std::vector<Range> out;
  if (segment_units == 0) segment_units = 1;
  for (std::size_t first = 0; first < units; first += segment_units) {
    const std::size_t len = units - first < segment_units ? units - first : segment_units;
    out.push_back(Range{first * unit, len * unit});
  }
  return out;
}

std::vector<std::size_t> exclusive_prefix(std::span<const std::size_t> counts) {
  std::vector<std::size_t> out(counts.size() + 1, 0);
  for (std::size_t i = 0; i < counts.size(); ++i) out[i + 1] = out[i] + counts[i];
  return out;
}

Result<std::size_t> message_elements(std::size_t max_chunk_bytes, std::size_t elem_bytes,
                                     std::size_t unit) {
  const auto unit_bytes = checked_mul(elem_bytes, unit);
  if (!unit_bytes || *unit_bytes > max_chunk_bytes) {
    return Status(ErrorCode::kBudgetTooSmall,
                  "max_chunk_bytes=" + std::to_string(max_chunk_bytes) +
                      " cannot hold one row of " + std::to_string(unit) + " element(s) (" +
                      (unit_bytes ? std::to_string(*unit_bytes) : std::string("overflowing")) +
                      " bytes); raise the budget to at least the row size");
  }
  return (max_chunk_bytes / *unit_bytes) * unit;
}

OneShotStep one_shot_step(std::size_t rank, std::size_t world, std::size_t step) {
  OneShotStep out;
  if (rank == step)
    for (std::size_t peer = 0; peer < world; ++peer)
      if (peer != rank) out.send_to.push_back(peer);
  out.recv_from = step;
  out.combine = step == 0 ? Combine::kCopy : Combine::kReduce;
  return out;
}

void append_messages(std::vector<Transfer>& out, std::size_t peer, Range src,
                     std::size_t dst_offset, std::size_t max_elements, Source source) {
  for (std::size_t done = 0; done < src.count;) {
    const std::size_t len = src.count - done < max_elements ? src.count - done : max_elements;
    out.push_back(Transfer{peer, Range{src.offset + done, len}, dst_offset + done, source});
    done += len;
  }
}

void split_by_peer(std::span<const Transfer> transfers, std::size_t begin, std::size_t count,
                   std::vector<Transfer>& inside, std::vector<Transfer>& outside) {
  inside.clear();
  outside.clear();
  for (const Transfer& t : transfers) {
    if (t.peer >= begin && t.peer - begin < count) {
      inside.push_back(t);
      inside.back().peer = t.peer - begin;
    } else {
      outside.push_back(t);
    }
  }
}

}  // namespace ruccl::ring
