// Execution: one rank's side of one agreed collective, as the buffer layouts
// of src/collectives see it. The engine (core/engine.cpp) owns it and runs the
// barriers around it; the helpers below are in execution.cpp; a collective's setup,
// run and complete hooks (collective.hpp) only lay out buffers and pick the
// src/ring algorithm.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/engine.hpp"

namespace ruccl::core {

class Execution {
 public:
  explicit Execution(const RankJob& job);

  const RankJob& job;
  const Request& req;
  const Geometry& geo;
  const Plan& plan;
  Work& work;
  RankBuffers& me;
  const std::size_t es;     // element size
  const std::size_t world;  // the algorithm's world and rank (global)
  const std::size_t rank;
  const std::size_t local;   // this rank's index in the local Work and rendezvous
  std::size_t out_rows = 0;  // all_to_all_v: rows received
  RankOutcome outcome;

  // `elements` into `base`.
  std::byte* at(void* base, std::size_t elements) const {
    return static_cast<std::byte*>(base) + elements * es;
  }
  const std::byte* at(const void* base, std::size_t elements) const {
    return static_cast<const std::byte*>(base) + elements * es;
  }
  // The caller's output, or `count` freshly allocated elements of the value form.
  Result<void*> output(std::size_t count);
  // `count` elements of the rank's scratch memory (kept between collectives).
  Result<void*> scratch(std::size_t count);
  // A device copy of `count` elements (nothing when dst == src or count == 0).
  Status copy(void* dst, const void* src, std::size_t count);
  // `work` as both the send and the recv buffer, of `count` elements.
  Status use(void* work, std::size_t count);
  // Divides `count` elements by the world when the op is kMean.
  Status scale_if_mean(void* data, std::size_t count);
  // The pipeline segments of the chain algorithms (segment and byte budgets).
  std::vector<Range> segments() const;
  // This rank's balanced shard of the rows (reduce_scatter).
  Range shard() const;
  // The value form's output, or an empty one (allocated on first use).
  std::shared_ptr<void>& allocated() { return allocated_; }

 private:
  std::shared_ptr<void> allocated_;  // the value form's output
  std::shared_ptr<void> scratch_;    // kept until every peer is done reading it
};

// Shape with its first dimension set to `rows` (a 0-D or 1-D shape becomes {rows}).
Shape with_rows(const Shape& shape, std::size_t rows);

}  // namespace ruccl::core
