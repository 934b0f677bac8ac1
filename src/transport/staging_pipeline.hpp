// The staged pipeline's schedule: in which order one algorithm step moves
// device memory through a few host buffers when the transport cannot touch
// device memory (UCX without CUDA support). Pure logic, no UCX and no CUDA, so
// that its invariants are unit-tested exhaustively on the host
// (tests/transport/staging_pipeline_test.cpp); TransportRun executes it.
//
// Model. A step's traffic, per direction, is a list of streams, one per peer:
// the sizes of the messages to (or from) that peer in piece order. Each message
// is cut into segments of at most `segment` units; a stream's segments, in
// order, are numbered 0, 1, 2...: that number is the segment's round. Round r
// is one Transport::exchange carrying segment r of every stream, both
// directions. Sender and receiver derive the same segments from the same
// message sizes, so round r of one side matches round r of the other, and the
// rounds cannot deadlock: a rank in round r waits only on peers' round r,
// which they reach once every rank finished its rounds before r.
//
// Buffers. Each stream owns `slots` (K) host buffers of one segment; segment
// r uses buffer r % K. The actions keep K-1 stage-outs ahead of the exchange:
// the device-to-host copy of round r+1 is issued before the exchange that
// sends round r (K >= 2), so the copy overlaps the send. A send buffer is
// refilled only after the exchange that sent its previous segment returned; a
// receive buffer is received into only after the stage-in of its previous
// segment completed. K = 1 degenerates to copy, send, copy, send...
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ruccl::transport::staging {

// One direction's traffic to or from one peer: message sizes in units
// (elements), in piece order. A zero-size message has no segment.
using StreamSizes = std::vector<std::size_t>;

struct Segment {
  std::size_t stream = 0;   // index into the direction's streams
  std::size_t message = 0;  // index of the message within its stream
  std::size_t offset = 0;   // units into the message
  std::size_t count = 0;    // units, 1..segment
  std::size_t round = 0;    // index among its stream's segments: the exchange that moves it
  std::size_t slot = 0;     // round % slots: which of its stream's buffers holds it
};

enum class ActionKind : std::uint8_t {
  kStageOut,       // sends[index]: device -> its send buffer (may run asynchronously)
  kAwaitStageOut,  // sends[index]'s stage-out has completed
  kAwaitStageIn,   // recvs[index]'s stage-in has completed: its buffer is free
  kExchange,       // round `index`: every segment of that round, both directions
  kStageIn,        // recvs[index]: its receive buffer -> device, combined (may be asynchronous)
};

struct Action {
  ActionKind kind = ActionKind::kExchange;
  std::size_t index = 0;  // a segment of sends/recvs, or the round of kExchange
  friend bool operator==(const Action&, const Action&) = default;
};

struct Schedule {
  // Segments in round-major order (round, then stream): round r's are
  // [send_begin[r], send_begin[r + 1]) and likewise for recvs.
  std::vector<Segment> sends;
  std::vector<Segment> recvs;
  std::vector<std::size_t> send_begin;  // rounds + 1 entries
  std::vector<std::size_t> recv_begin;
  std::vector<Action> actions;
  std::size_t rounds = 0;
  std::size_t slots = 0;     // buffers per stream that are used: min(K, rounds)
  std::size_t segment = 0;   // units per buffer: the largest segment, 0 without any
};

// The schedule of one step. `segment` and `slots` below 1 count as 1.
Schedule plan(std::span<const StreamSizes> sends, std::span<const StreamSizes> recvs,
              std::size_t segment, std::size_t slots);

}  // namespace ruccl::transport::staging
