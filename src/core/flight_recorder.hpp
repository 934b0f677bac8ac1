// The flight recorder: the last N collectives of every local rank of one
// communicator, kept so that a failure can be explained after the fact ("rank 3
// was still in all_reduce #41 running; rank 1 had finished #41 and waited in
// #42"). Config::flight_recorder (RUCCL_FLIGHT_RECORDER) sets N; 0 turns it off.
//
// Each rank's thread is the only writer of its ring; a dump (a failing rank's
// thread, or the SIGUSR1 dumper thread) reads every ring. Each slot of the
// ring is a sequence lock: its words are atomics, the writer makes the slot's
// version odd while it writes, and a reader keeps its copy of the slot only if
// the version was even and unchanged around it. A dump shows the whole
// entries of the last N begun, in order, up to the first it could not read
// whole (one its rank rewrote on every try): never a torn one. A call costs
// its rank a few plain stores, no lock (the lean path runs it per small
// collective), and a dump never makes it wait.
//
// Dumps go, one line per entry and oldest first, to the communicator's log
// destination (Config::log_file, else stderr) as
//   [ruccl host:pid rank R] FLIGHT all_reduce #K bytes=.. dtype=.. op=.. state=..
//                           start=-1.234s end=-0.934s wall=2025-01-31T12:00:00.123Z
// The communicator dumps when a collective fails with a system failure
// (kTimeout, kPeerFailure, kDeviceError, kInternal, or kAborted not caused by
// the user), once per failure burst: the first failure after a success dumps,
// the failures that follow it (other ranks of that collective, later calls on
// a broken communicator) only point at that dump.
//
// SIGUSR1 dumps every live recorder of the process. That needs the one piece
// of process-wide state ruccl has (flight_recorder.cpp): a registry of live
// recorders, an async-signal-safe handler that writes a byte to a pipe, and a
// detached dumper thread that reads the pipe and dumps.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/request.hpp"
#include "ruccl/config.hpp"

namespace ruccl::core {

// started: called, waiting for the agreement (a rank stuck here waits for its
// peers); agreed: agreed across processes, waiting for the local ranks;
// running: executing the algorithm; done / failed (with the error code).
enum class FlightState : std::uint8_t { kStarted, kAgreed, kRunning, kDone, kFailed };

std::string_view flight_state_name(FlightState state) noexcept;

class FlightRecorder {
 public:
  // Serves global ranks first_rank .. first_rank + local_ranks - 1 with
  // config.flight_recorder() entries each; registers with the SIGUSR1 dumper
  // (installing it on first use) unless the recorder is off.
  FlightRecorder(std::size_t first_rank, std::size_t local_ranks, const Config& config);
  ~FlightRecorder();  // unregisters: no dump reads it afterwards
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  bool enabled() const { return entries_ > 0; }
  // A new entry for `local`'s collective `seq` (the oldest one is overwritten).
  // `start`: when the call began (the caller's clock reading).
  void begin(std::size_t local, std::uint64_t seq, const Request& request, std::size_t bytes,
             std::chrono::steady_clock::time_point start);
  // Moves `local`'s current entry to `state` (kAgreed, kRunning).
  void mark(std::size_t local, FlightState state);
  // Records how `local`'s current collective ended. When `outcome` is a system
  // failure (see the header; `user_aborted`: an abort/reset by the caller, not
  // a failure), dumps once per burst. Returns where the burst's dump went
  // ("stderr" or a path), or nullopt when this outcome has none.
  std::optional<std::string> end(std::size_t local, const Status& outcome, bool user_aborted);

  // Every rank's entries, oldest first, one line each, under a header naming
  // `why`.
  std::string render(std::string_view why) const;
  // Writes render(why) to the log destination; returns its name.
  std::string dump(std::string_view why) const;
  // "stderr", or the expanded Config::log_file.
  const std::string& destination() const { return destination_; }

 private:
  struct Entry {
    std::uint64_t seq = 0;
    CollectiveKind kind = CollectiveKind::kAllReduce;
    DataType dtype = DataType::kF32;
    ReduceOp op = ReduceOp::kSum;
    std::optional<std::size_t> root;  // reduce, or a broadcast's sender
    std::size_t bytes = 0;
    FlightState state = FlightState::kStarted;
    ErrorCode error = ErrorCode::kOk;
    std::chrono::steady_clock::time_point start{}, end{};
  };
  // An entry as the ring keeps it (begin packs it, unpack reads it): seq,
  // word1, root, bytes, start, end.
  static constexpr std::size_t kWords = 6;
  using Words = std::array<std::uint64_t, kWords>;
  // Word 1: kind, dtype, op, state, error, whether word 2 holds a root.
  static constexpr std::uint64_t word1(CollectiveKind kind, DataType dtype, ReduceOp op,
                                       FlightState state, ErrorCode error, bool rooted) {
    return static_cast<std::uint64_t>(kind) | std::uint64_t(dtype) << 8 | std::uint64_t(op) << 16 |
           std::uint64_t(state) << 24 | std::uint64_t(error) << 32 | std::uint64_t(rooted) << 40;
  }
  static Entry unpack(const Words& w);
  // A slot of a ring: its version (odd while the owner writes it), the
  // entry's place in the ring's history plus one (0: never begun), its Words.
  static constexpr std::size_t kVersion = 0, kIndex = 1, kData = 2, kStride = kData + kWords;
  struct Ring {
    // Circular, kStride words per slot; slot (next - 1) % N is the current one.
    std::unique_ptr<std::atomic<std::uint64_t>[]> words;
    std::atomic<std::uint64_t> next{0};  // entries ever begun
    std::size_t slot = 0;                // the owner's: the current slot, (next - 1) % N
  };
  // The owner's thread: `store` writes words of `slot`, inside one odd version.
  template <typename Store>
  static void writing(std::atomic<std::uint64_t>* slot, Store&& store) {
    const std::uint64_t v = slot[kVersion].load(std::memory_order_relaxed);
    slot[kVersion].store(v + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);  // odd before any word
    store(slot);
    slot[kVersion].store(v + 2, std::memory_order_release);  // every word before even
  }
  // The owner's thread: slot `slot` of `ring` becomes the entry packed in
  // `w`, entry `index` (0-based).
  void write(Ring& ring, std::size_t slot, const Words& w, std::uint64_t index);
  // The owner's thread: its current slot (next > 0).
  std::atomic<std::uint64_t>* current(Ring& ring) const;
  // Word 1 of an entry with `state` and, when given, `error`.
  static std::uint64_t with_state(std::uint64_t word, FlightState state,
                                  std::optional<ErrorCode> error) {
    word = (word & ~(std::uint64_t{0xff} << 24)) | std::uint64_t(state) << 24;
    if (error) word = (word & ~(std::uint64_t{0xff} << 32)) | std::uint64_t(*error) << 32;
    return word;
  }
  // Any thread: a consistent copy of the ring's kept entries, oldest first,
  // and how many were ever begun.
  std::vector<Entry> snapshot(const Ring& ring, std::uint64_t& begun) const;

  const std::size_t first_;
  const std::size_t entries_;
  const std::string file_;         // the expanded log file, empty: stderr
  const std::string destination_;  // "stderr" or file_
  const std::string prefix_;       // "[ruccl host:pid rank "
  std::vector<Ring> rings_;
  std::mutex burst_mutex_;             // serializes the first failures of a burst
  std::atomic<bool> in_burst_{false};  // a failure was dumped and no success followed yet
  bool registered_ = false;
};

}  // namespace ruccl::core
