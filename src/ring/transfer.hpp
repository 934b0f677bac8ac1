// The algorithms' vocabulary: ranges of elements, transfers between ranks, and
// what a destination does with what it receives. Internal: executors
// (src/core/work.hpp) resolve transfers into pointers for the device adapter.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ruccl {

// A range of elements: [offset, offset + count).
struct Range {
  std::size_t offset = 0;
  std::size_t count = 0;
  std::size_t end() const { return offset + count; }
  friend bool operator==(const Range&, const Range&) = default;
};

// What the destination does with an incoming range.
//   kCopy         recv[dst] = src
//   kReduce       recv[dst] = recv[dst] op src
//   kReduceInput  recv[dst] = input[dst] op src  (the destination's own input at the
//                 same offset: lets the first partial sum skip copying the input)
enum class Combine : std::uint8_t { kCopy, kReduce, kReduceInput };

// Which buffer of the source rank a transfer reads.
enum class Source : std::uint8_t { kSend, kInput };

// One message of one step, seen from one side. For a receive, `peer` is the source
// rank; for a send, the destination. Offsets and counts are in elements.
struct Transfer {
  std::size_t peer = 0;
  Range src;                   // in the source's send (or input) buffer
  std::size_t dst_offset = 0;  // in the destination's recv buffer
  Source source = Source::kSend;
  friend bool operator==(const Transfer&, const Transfer&) = default;
};

}  // namespace ruccl
