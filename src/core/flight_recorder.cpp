// The flight recorder's rings, its dumps, and the SIGUSR1 dumper.
#include "core/flight_recorder.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <thread>

#include "core/log.hpp"
#include "core/rendezvous.hpp"

namespace ruccl::core {
namespace {

using SteadyClock = std::chrono::steady_clock;

// ---- the SIGUSR1 dumper: ruccl's one piece of process-wide state --------------
//
// A signal reaches the process, not a communicator, so the live recorders must
// be findable from one place. This is the only mutable process-global state in
// ruccl (the house rule's documented exception): a mutex-guarded registry of
// live recorders, the pipe's write end for the handler, and a detached thread.
// Independent communicators stay independent: the registry only lists them.
//
// The handler does async-signal-safe work only (one write() to a non-blocking
// pipe). The dumper thread blocks in read() on the pipe and dumps every live
// recorder under the registry mutex; a recorder unregisters (under that mutex)
// in its destructor, so a dump never reads a destroyed recorder. The thread is
// detached and the registry is never destroyed, so neither keeps the process
// from exiting nor runs into static destruction. The handler is installed at
// most once, and only while SIGUSR1 has its default action; it then stays (a
// later SIGUSR1 with no live communicator dumps nothing).
struct SignalDumper {
  std::mutex mutex;
  std::vector<const FlightRecorder*> live;
  bool tried = false;  // installation attempted (installed or not)
};

SignalDumper& signal_dumper() {
  static SignalDumper* dumper = new SignalDumper;  // leaked on purpose: see above
  return *dumper;
}

std::atomic<int> signal_pipe_write{-1};  // what the handler may touch: a lock-free int
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_sigusr1(int) {
  const int saved = errno;
  const int fd = signal_pipe_write.load(std::memory_order_relaxed);
  if (fd >= 0) {
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = ::write(fd, &byte, 1);  // full pipe: a dump is pending anyway
  }
  errno = saved;
}

void dumper_loop(int read_fd) {
  char buf[64];
  for (;;) {
    const ssize_t n = ::read(read_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    SignalDumper& d = signal_dumper();
    std::lock_guard lock(d.mutex);
    for (const FlightRecorder* r : d.live) r->dump("SIGUSR1");
  }
}

// Under the registry mutex: installs the handler and starts the dumper thread,
// once per process, if SIGUSR1 is still at its default action.
void install_once(SignalDumper& d) {
  if (d.tried) return;
  d.tried = true;
  struct sigaction current {};
  if (::sigaction(SIGUSR1, nullptr, &current) != 0) return;
  if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) return;
  int fds[2];
  if (::pipe(fds) != 0) return;
  for (int fd : fds) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  ::fcntl(fds[1], F_SETFL, ::fcntl(fds[1], F_GETFL) | O_NONBLOCK);
  try {
    std::thread(dumper_loop, fds[0]).detach();
  } catch (...) {  // no thread: no handler (the default action stays)
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  signal_pipe_write.store(fds[1]);
  struct sigaction action {};
  action.sa_handler = on_sigusr1;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGUSR1, &action, nullptr);
}

// "2025-01-31T12:00:00.123Z"
std::string wall_time(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

// "-1.234s": a time relative to `now`.
std::string ago(SteadyClock::time_point t, SteadyClock::time_point now) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3fs", std::chrono::duration<double>(t - now).count());
  return buf;
}

// The failures a dump explains: the system's, not the caller's.
bool worth_a_dump(ErrorCode code, bool user_aborted) {
  switch (code) {
    case ErrorCode::kTimeout:
    case ErrorCode::kPeerFailure:
    case ErrorCode::kDeviceError:
    case ErrorCode::kInternal: return true;
    case ErrorCode::kAborted: return !user_aborted;
    default: return false;
  }
}

}  // namespace

std::string_view flight_state_name(FlightState state) noexcept {
  switch (state) {
    case FlightState::kStarted: return "started";
    case FlightState::kAgreed: return "agreed";
    case FlightState::kRunning: return "running";
    case FlightState::kDone: return "done";
    case FlightState::kFailed: return "failed";
  }
  return "?";
}

FlightRecorder::FlightRecorder(std::size_t first_rank, std::size_t local_ranks,
                               const Config& config)
    : first_(first_rank),
      entries_(config.flight_recorder()),
      file_(config.log_file().empty() ? std::string() : expand_path(config.log_file(), first_rank)),
      destination_(file_.empty() ? std::string("stderr") : file_),
      prefix_("[ruccl " + expand_path("%h:%p", first_rank) + " rank "),
      rings_(entries_ > 0 ? local_ranks : 0) {
  for (Ring& ring : rings_) {
    ring.words = std::make_unique<std::atomic<std::uint64_t>[]>(entries_ * kStride);
    for (std::size_t i = 0; i < entries_ * kStride; ++i) ring.words[i].store(0);  // never begun
  }
  if (!enabled()) return;
  SignalDumper& d = signal_dumper();
  std::lock_guard lock(d.mutex);
  if (config.flight_recorder_signal()) install_once(d);
  d.live.push_back(this);
  registered_ = true;
}

FlightRecorder::~FlightRecorder() {
  if (!registered_) return;
  SignalDumper& d = signal_dumper();
  std::lock_guard lock(d.mutex);
  std::erase(d.live, this);
}

FlightRecorder::Entry FlightRecorder::unpack(const Words& w) {
  Entry e;
  e.seq = w[0];
  e.kind = static_cast<CollectiveKind>(w[1] & 0xff);
  e.dtype = static_cast<DataType>((w[1] >> 8) & 0xff);
  e.op = static_cast<ReduceOp>((w[1] >> 16) & 0xff);
  e.state = static_cast<FlightState>((w[1] >> 24) & 0xff);
  e.error = static_cast<ErrorCode>((w[1] >> 32) & 0xff);
  if ((w[1] >> 40) & 1) e.root = w[2];
  e.bytes = w[3];
  e.start = SteadyClock::time_point(SteadyClock::duration(static_cast<std::int64_t>(w[4])));
  e.end = SteadyClock::time_point(SteadyClock::duration(static_cast<std::int64_t>(w[5])));
  return e;
}

void FlightRecorder::write(Ring& ring, std::size_t slot, const Words& w, std::uint64_t index) {
  writing(ring.words.get() + slot * kStride, [&](std::atomic<std::uint64_t>* at) {
    at[kIndex].store(index + 1, std::memory_order_relaxed);
    for (std::size_t i = 0; i < kWords; ++i) at[kData + i].store(w[i], std::memory_order_relaxed);
  });
}

std::atomic<std::uint64_t>* FlightRecorder::current(Ring& ring) const {
  return ring.words.get() + ring.slot * kStride;
}

std::vector<FlightRecorder::Entry> FlightRecorder::snapshot(const Ring& ring,
                                                            std::uint64_t& begun) const {
  struct Copy {
    std::uint64_t index = 0;  // plus one, as the slot keeps it
    Words words{};
  };
  std::vector<Copy> copies;
  copies.reserve(entries_);
  std::vector<Entry> out;
  out.reserve(entries_);
  // A writer holds a slot odd for a few stores, and rewrites only its current
  // one and the one it begins; a rank stuck in a call writes nothing. A slot
  // not read whole in its tries is left out, and the ring is read again while
  // entries are missing; the last read is shown as far as it is whole and in
  // order (a dump is a diagnosis, never a wait, never a torn entry).
  constexpr int kReads = 16, kTries = 64;
  for (int read = 0; read < kReads; ++read) {
    copies.clear();
    for (std::size_t i = 0; i < entries_; ++i) {
      const std::atomic<std::uint64_t>* slot = ring.words.get() + i * kStride;
      for (int attempt = 0; attempt < kTries; ++attempt) {
        const std::uint64_t v = slot[kVersion].load(std::memory_order_acquire);
        if ((v & 1) != 0) {
          std::this_thread::yield();
          continue;
        }
        Copy c;
        c.index = slot[kIndex].load(std::memory_order_relaxed);
        for (std::size_t j = 0; j < kWords; ++j)
          c.words[j] = slot[kData + j].load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);  // the words before the check
        if (slot[kVersion].load(std::memory_order_relaxed) != v) continue;
        if (c.index != 0) copies.push_back(c);
        break;
      }
    }
    // Read after every slot: a slot holding an entry older than the last N
    // begun was overwritten since, one newer was begun after `begun`.
    begun = ring.next.load(std::memory_order_acquire);
    std::sort(copies.begin(), copies.end(),
              [](const Copy& a, const Copy& b) { return a.index < b.index; });
    const std::uint64_t oldest = begun > entries_ ? begun - entries_ : 0;
    std::uint64_t want = oldest + 1;
    out.clear();
    for (const Copy& c : copies) {
      if (c.index < want) continue;
      if (c.index != want || c.index > begun) break;  // the first one missing
      out.push_back(unpack(c.words));
      ++want;
    }
    if (want == begun + 1) break;  // every one of the last N, whole
  }
  return out;
}

void FlightRecorder::begin(std::size_t local, std::uint64_t seq, const Request& request,
                           std::size_t bytes, SteadyClock::time_point start) {
  if (!enabled()) return;
  Ring& ring = rings_[local];
  // (Packed here, per call: no Entry.)
  std::optional<std::size_t> root;  // a reduce's, or a broadcast's sender
  if (request.kind == CollectiveKind::kReduce) root = request.root;
  if (request.kind == CollectiveKind::kBroadcast && request.has_input) root = first_ + local;
  // (The start's wall time is told at a dump, from the clocks then.)
  const Words w{seq,
                word1(request.kind, request.dtype, request.op, FlightState::kStarted,
                      ErrorCode::kOk, root.has_value()),
                root.value_or(0),
                bytes,
                static_cast<std::uint64_t>(start.time_since_epoch().count()),
                0};
  const std::uint64_t next = ring.next.load(std::memory_order_relaxed);
  // The slot after the current one (no division per call): entry next % N.
  if (next > 0) ring.slot = ring.slot + 1 == entries_ ? 0 : ring.slot + 1;
  write(ring, ring.slot, w, next);
  ring.next.store(next + 1, std::memory_order_release);  // after the entry
}

void FlightRecorder::mark(std::size_t local, FlightState state) {
  if (!enabled()) return;
  Ring& ring = rings_[local];
  const std::uint64_t next = ring.next.load(std::memory_order_relaxed);
  if (next == 0) return;
  std::atomic<std::uint64_t>* e = current(ring) + kData;
  const std::uint64_t w = with_state(e[1].load(std::memory_order_relaxed), state, std::nullopt);
  writing(current(ring),
          [&](std::atomic<std::uint64_t>*) { e[1].store(w, std::memory_order_relaxed); });
}

std::optional<std::string> FlightRecorder::end(std::size_t local, const Status& outcome,
                                               bool user_aborted) {
  if (!enabled()) return std::nullopt;
  Ring& ring = rings_[local];
  const std::uint64_t next = ring.next.load(std::memory_order_relaxed);
  if (next > 0) {
    std::atomic<std::uint64_t>* e = current(ring) + kData;
    const std::uint64_t w =
        with_state(e[1].load(std::memory_order_relaxed),
                   outcome.is_ok() ? FlightState::kDone : FlightState::kFailed, outcome.code());
    // (The coarse clock, as the start's: a dump tells times to the millisecond.)
    const auto end = static_cast<std::uint64_t>(coarse_now().time_since_epoch().count());
    writing(current(ring), [&](std::atomic<std::uint64_t>*) {
      e[1].store(w, std::memory_order_relaxed);
      e[5].store(end, std::memory_order_relaxed);
    });
  }
  if (outcome.is_ok()) {  // the common path: one relaxed load, no shared lock
    if (in_burst_.load(std::memory_order_relaxed)) in_burst_.store(false);
    return std::nullopt;
  }
  if (!worth_a_dump(outcome.code(), user_aborted)) return std::nullopt;
  std::string why;  // (the rank's own thread: its current entry)
  if (next > 0) {
    const std::atomic<std::uint64_t>* e = current(ring) + kData;
    const Entry now = unpack(
        {e[0].load(std::memory_order_relaxed), e[1].load(std::memory_order_relaxed), 0, 0, 0, 0});
    why = std::string(collective_name(now.kind)) + " #" + std::to_string(now.seq) +
          " failed with " + std::string(error_code_name(now.error)) + ", seen by rank " +
          std::to_string(first_ + local);
  }
  std::lock_guard lock(burst_mutex_);  // held through the dump: peers of the burst wait for it
  if (in_burst_.load()) return destination_;
  in_burst_.store(true);
  return dump(why);
}

std::string FlightRecorder::render(std::string_view why) const {
  const auto now = SteadyClock::now();
  const auto wall_now = std::chrono::system_clock::now();
  std::string out;
  for (std::size_t local = 0; local < rings_.size(); ++local) {
    const Ring& ring = rings_[local];
    const std::string head = prefix_ + std::to_string(first_ + local) + "] FLIGHT ";
    std::uint64_t begun = 0;
    const std::vector<Entry> kept = snapshot(ring, begun);
    out += head + "recorder (" + std::string(why) + "): last " + std::to_string(kept.size()) +
           " of " + std::to_string(begun) + " collectives, oldest first\n";
    for (const Entry& e : kept) {
      out += head + std::string(collective_name(e.kind)) + " #" + std::to_string(e.seq) +
             " bytes=" + std::to_string(e.bytes) + " dtype=" + std::string(dtype_name(e.dtype));
      if (is_reducing(e.kind)) out += " op=" + std::string(op_name(e.op));
      if (e.root) out += " root=" + std::to_string(*e.root);
      out += " state=" + std::string(flight_state_name(e.state));
      if (e.state == FlightState::kFailed) out += "(" + std::string(error_code_name(e.error)) + ")";
      out += " start=" + ago(e.start, now);
      out += " end=" + (e.end == SteadyClock::time_point{} ? std::string("-") : ago(e.end, now));
      out += " wall=" +
             wall_time(wall_now - std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                      now - e.start)) +
             "\n";
    }
  }
  return out;
}

std::string FlightRecorder::dump(std::string_view why) const {
  try {
    const std::string text = render(why);
    std::FILE* sink = file_.empty() ? stderr : std::fopen(file_.c_str(), "a");
    if (!sink) {
      std::fprintf(stderr, "%s", text.c_str());  // the log file cannot be opened: stderr
      return "stderr";
    }
    std::fwrite(text.data(), 1, text.size(), sink);
    std::fflush(sink);
    if (sink != stderr) std::fclose(sink);
  } catch (...) {  // out of memory while rendering: no dump, never an exception
  }
  return destination_;
}

}  // namespace ruccl::core
