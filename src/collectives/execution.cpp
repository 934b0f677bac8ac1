// The helpers of Execution (execution.hpp): what a collective's buffer layout
// may ask of the engine's device and memory (output, scratch, copies, the mean).
#include "collectives/execution.hpp"

#include <algorithm>

#include "ring/schedule.hpp"

namespace ruccl::core {

Shape with_rows(const Shape& shape, std::size_t rows) {
  Shape out = shape.size() <= 1 ? Shape{rows} : shape;
  out[0] = rows;
  return out;
}

Execution::Execution(const RankJob& j)
    : job(j),
      req(*j.request),
      geo(*j.geometry),
      plan(j.generation->plan.value()),
      work(j.generation->work),
      me(work.ranks[j.rank]),
      es(dtype_size(work.dtype)),
      world(j.world),
      rank(j.global_rank),
      local(j.rank) {}

Result<void*> Execution::output(std::size_t count) {
  if (req.out) return req.out->data;
  auto mem = job.adapter->allocate(me.device, count * es);
  RUCCL_TRY(mem);
  allocated_ = std::move(mem.value());
  return allocated_.get();
}

Result<void*> Execution::scratch(std::size_t count) {
  ScratchCache& cache = *job.scratch;
  if (cache.bytes < count * es || !cache.memory) {
    cache.memory.reset();  // free first: peak memory stays one scratch buffer
    auto mem = job.adapter->allocate(me.device, count * es);
    RUCCL_TRY(mem);
    cache.memory = std::move(mem.value());
    cache.bytes = count * es;
  }
  scratch_ = cache.memory;
  return scratch_.get();
}

Status Execution::copy(void* dst, const void* src, std::size_t count) {
  if (dst == src || count == 0) return Status::ok();
  return completed(*job.adapter, me.queue(), job.adapter->copy(me.queue(), dst, src, count * es));
}

Status Execution::use(void* buffer, std::size_t count) {
  me.send = buffer;
  me.recv = buffer;
  me.send_count = me.recv_count = count;
  return Status::ok();
}

Status Execution::scale_if_mean(void* data, std::size_t count) {
  if (req.op != ReduceOp::kMean || count == 0) return Status::ok();
  return completed(*job.adapter, me.queue(),
                   job.adapter->divide(me.queue(), data, count, work.dtype, world));
}

std::vector<Range> Execution::segments() const {
  std::size_t bytes = std::min(job.segment_bytes, req.max_chunk_bytes);
  return ring::segment_ranges(plan.geometry.count, std::max<std::size_t>(1, bytes / es));
}

Range Execution::shard() const { return ring::balanced_range(geo.rows, world, rank, geo.unit); }

}  // namespace ruccl::core
