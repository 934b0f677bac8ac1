// resolve() and the step operations over the adapter's memory verbs.
#include "core/work.hpp"

#include <string>

namespace ruccl::core {
namespace {

bool outside(std::size_t offset, std::size_t count, std::size_t size) {
  return offset > size || count > size - offset;
}

Status out_of_bounds(const char* what, std::size_t rank, std::size_t offset, std::size_t count,
                     const char* buffer, std::size_t size) {
  return Status(ErrorCode::kInternal, std::string(what) + " out of bounds: [" +
                                          std::to_string(offset) + ", +" + std::to_string(count) +
                                          ") of local rank " + std::to_string(rank) + "'s " +
                                          buffer + " of " + std::to_string(size) + " elements");
}

}  // namespace

Result<Resolved> resolve(const Work& work, const Transfer& t, Combine how, std::size_t from,
                         std::size_t to) {
  const std::size_t es = dtype_size(work.dtype);
  Resolved r;
  r.count = t.src.count;
  r.bytes = t.src.count * es;
  if (r.count == 0) return r;  // nothing is read or written
  if (from != kElsewhere) {
    if (from >= work.ranks.size())
      return out_of_bounds("source rank", from, 0, 0, "work", work.ranks.size());
    const RankBuffers& b = work.ranks[from];
    const bool input = t.source == Source::kInput;
    const void* base = input ? b.input : b.send;
    const std::size_t size = base == nullptr ? 0 : input ? b.input_count : b.send_count;
    if (outside(t.src.offset, t.src.count, size))
      return out_of_bounds("source range", from, t.src.offset, t.src.count,
                           input ? "input" : "send buffer", size);
    r.src = static_cast<const std::byte*>(base) + t.src.offset * es;
  }
  if (to != kElsewhere) {
    if (to >= work.ranks.size())
      return out_of_bounds("destination rank", to, 0, 0, "work", work.ranks.size());
    const RankBuffers& b = work.ranks[to];
    const std::size_t size = b.recv == nullptr ? 0 : b.recv_count;
    if (outside(t.dst_offset, t.src.count, size))
      return out_of_bounds("destination range", to, t.dst_offset, t.src.count, "recv buffer", size);
    r.dst = static_cast<std::byte*>(b.recv) + t.dst_offset * es;
    if (how == Combine::kReduceInput) {
      const std::size_t inputs = b.input == nullptr ? 0 : b.input_count;
      if (outside(t.dst_offset, t.src.count, inputs))
        return out_of_bounds("own input range", to, t.dst_offset, t.src.count, "input", inputs);
      r.own = static_cast<const std::byte*>(b.input) + t.dst_offset * es;
    }
  }
  return r;
}

Result<Ticket> queue_combine(DeviceAdapter& adapter, const Work& work, const Queue& queue,
                             const Resolved& r, Combine how) {
  if (r.count == 0) return Ticket{0};
  if (r.src == nullptr || r.dst == nullptr || (how == Combine::kReduceInput && r.own == nullptr))
    return Status(ErrorCode::kInternal, "a transfer without its memory");
  switch (how) {
    case Combine::kCopy: return adapter.copy(queue, r.dst, r.src, r.bytes);
    case Combine::kReduce:
      return adapter.reduce(queue, r.dst, r.dst, r.src, r.count, work.dtype, work.op);
    case Combine::kReduceInput:
      return adapter.reduce(queue, r.dst, r.own, r.src, r.count, work.dtype, work.op);
  }
  return Status(ErrorCode::kInternal, "unknown combine mode");
}

Status exchange(DeviceAdapter& adapter, Work& work, std::size_t rank,
                std::span<const Transfer> incoming, Combine how) {
  RUCCL_TRY(entering(adapter, "exchange"));
  if (rank >= work.ranks.size())
    return out_of_bounds("exchanging rank", rank, 0, 0, "work", work.ranks.size());
  const Queue queue = work.ranks[rank].queue();
  Queued queued(adapter, queue);
  return queued.settle([&]() -> Status {
    for (const Transfer& t : incoming) {
      auto r = resolve(work, t, how, t.peer, rank);
      RUCCL_TRY(r);
      if (r.value().count == 0) continue;
      RUCCL_TRY(adapter.begin(queue, work.ranks[t.peer].state.get()));
      RUCCL_TRY(queued.add(queue_combine(adapter, work, queue, r.value(), how)));
    }
    return Status::ok();
  }());
}

Result<Ticket> combine(DeviceAdapter& adapter, const Work& work, std::size_t rank,
                       std::size_t dst_offset, const void* message, std::size_t count,
                       Combine how) {
  RUCCL_TRY(entering(adapter, "combine"));
  if (count == 0) return Ticket{0};
  if (message == nullptr) return Status(ErrorCode::kInternal, "a received message without memory");
  auto r = resolve(work, Transfer{0, Range{0, count}, dst_offset}, how, kElsewhere, rank);
  RUCCL_TRY(r);
  Resolved at = r.value();
  at.src = static_cast<const std::byte*>(message);
  return queue_combine(adapter, work, work.ranks[rank].queue(), at, how);
}

Status entering(DeviceAdapter& adapter, const char* operation) {
  auto* decorator = dynamic_cast<AdapterDecorator*>(&adapter);
  return decorator != nullptr ? decorator->entering(operation) : Status::ok();
}

}  // namespace ruccl::core
