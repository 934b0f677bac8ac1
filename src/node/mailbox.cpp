#include "node/mailbox.hpp"

#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

namespace ruccl::node {
namespace {

constexpr std::uint64_t kMagic = 0x72756363'6c6e6f64ull;  // "ruccl" "nod"
constexpr std::uint64_t kVersion = 1;
constexpr std::size_t kControlBytes = 256;
constexpr std::size_t kProcessBytes = 64;
constexpr std::size_t kNoticeBytes = 512;
// A slot: its flag (seq + 1) and length, then the message in the same cache
// line (a small message travels in one or two lines with its flag).
constexpr std::size_t kSlotHeader = 16;
constexpr std::size_t kNoticeText = kNoticeBytes - 32;

std::size_t round_up(std::size_t n) { return (n + 63) / 64 * 64; }

// Control block fields (offsets into the segment).
constexpr std::size_t kMagicAt = 0, kVersionAt = 8, kTagAt = 16, kBytesAt = 32, kRanksAt = 40,
                      kProcessesAt = 48, kSlotBytesAt = 56, kLeanBytesAt = 96;
constexpr std::size_t kBellAt = 64, kSleepersAt = 68;  // futex word, waiters asleep
constexpr std::size_t kNoticesAt = 128;                // notices posted

template <typename T>
std::atomic_ref<T> atomic_at(std::byte* p) {
  return std::atomic_ref<T>(*reinterpret_cast<T*>(p));
}

void futex_wait(std::uint32_t* word, std::uint32_t expected, std::chrono::nanoseconds for_at_most) {
  const auto ns = std::max<std::int64_t>(for_at_most.count(), 1000);
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  (void)syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, nullptr, 0);
}
void futex_wake_all(std::uint32_t* word) {
  (void)syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

struct Layout {
  std::size_t processes_at, notices_at, slots_at, full_stride, lean_stride, rank_stride, total;
};
Layout layout_of(const MailboxShape& s) {
  Layout l{};
  l.processes_at = kControlBytes;
  l.notices_at = l.processes_at + s.processes * kProcessBytes;
  l.slots_at = l.notices_at + s.ranks * kNoticeBytes;
  l.full_stride = round_up(kSlotHeader + s.slot_bytes);
  l.lean_stride = round_up(kSlotHeader + s.lean_bytes);
  l.rank_stride = 2 * (l.full_stride + l.lean_stride);
  l.total = l.slots_at + s.ranks * l.rank_stride;
  return l;
}

}  // namespace

std::size_t segment_bytes(const MailboxShape& shape) { return layout_of(shape).total; }

void Mailbox::lay_out(Segment& segment, const MailboxShape& shape, const Tag& tag) {
  std::byte* b = segment.data();
  const auto put = [&](std::size_t at, std::uint64_t v) { std::memcpy(b + at, &v, sizeof v); };
  put(kVersionAt, kVersion);
  std::memcpy(b + kTagAt, tag.data(), tag.size());
  put(kBytesAt, segment.size());
  put(kRanksAt, shape.ranks);
  put(kProcessesAt, shape.processes);
  put(kSlotBytesAt, shape.slot_bytes);
  put(kLeanBytesAt, shape.lean_bytes);
  atomic_at<std::uint64_t>(b + kMagicAt).store(kMagic, std::memory_order_release);
}

Result<Mailbox> Mailbox::attach(Segment segment, const MailboxShape& shape, const Tag& tag,
                                std::size_t process, const std::atomic<bool>* abort) {
  const Layout l = layout_of(shape);
  std::byte* b = segment.data();
  const auto get = [&](std::size_t at) {
    std::uint64_t v = 0;
    std::memcpy(&v, b + at, sizeof v);
    return v;
  };
  const auto bad = [](const std::string& what) {
    return Status(ErrorCode::kProtocolError, "the node segment " + what);
  };
  if (segment.size() != l.total || process >= shape.processes)
    return bad("is " + std::to_string(segment.size()) + " bytes, expected " +
               std::to_string(l.total));
  if (atomic_at<std::uint64_t>(b + kMagicAt).load(std::memory_order_acquire) != kMagic ||
      get(kVersionAt) != kVersion)
    return bad("is not laid out (magic or version)");
  if (std::memcmp(b + kTagAt, tag.data(), tag.size()) != 0)
    return bad("carries another job's tag: it belongs to another job");
  if (get(kBytesAt) != l.total || get(kRanksAt) != shape.ranks ||
      get(kProcessesAt) != shape.processes || get(kSlotBytesAt) != shape.slot_bytes ||
      get(kLeanBytesAt) != shape.lean_bytes)
    return bad("was laid out for another shape");
  atomic_at<std::int64_t>(b + l.processes_at + process * kProcessBytes)
      .store(static_cast<std::int64_t>(::getpid()), std::memory_order_release);
  return Mailbox(std::move(segment), shape, abort);
}

Status Mailbox::watch_processes() {
  const Layout l = layout_of(shape_);
  pids_.assign(shape_.processes, 0);
  pidfds_.clear();
  for (std::size_t p = 0; p < shape_.processes; ++p) {
    const auto pid = atomic_at<std::int64_t>(at(l.processes_at + p * kProcessBytes))
                         .load(std::memory_order_acquire);
    if (pid <= 0 || pid > INT_MAX)
      return Status(ErrorCode::kProtocolError, "the node segment names no pid for process " +
                                                   std::to_string(shape_.first_process + p));
    pids_[p] = static_cast<pid_t>(pid);
    // A pidfd turns readable when its process exits (before it is reaped).
    pidfds_.emplace_back(
        pids_[p] == ::getpid() ? -1 : static_cast<int>(syscall(SYS_pidfd_open, pids_[p], 0)));
  }
  return Status::ok();
}

std::byte* Mailbox::slot_at(std::size_t rank, std::uint64_t seq, Lane lane) const {
  const Layout l = layout_of(shape_);
  const std::size_t parity = seq & 1;
  const std::size_t off =
      lane == Lane::kFull ? parity * l.full_stride : 2 * l.full_stride + parity * l.lean_stride;
  return at(l.slots_at + rank * l.rank_stride + off);
}

std::span<std::byte> Mailbox::slot(std::size_t rank, std::uint64_t seq, Lane lane) const {
  return {slot_at(rank, seq, lane) + kSlotHeader,
          lane == Lane::kFull ? shape_.slot_bytes : shape_.lean_bytes};
}

void Mailbox::publish(std::size_t rank, std::uint64_t seq, std::size_t bytes, Lane lane) {
  std::byte* s = slot_at(rank, seq, lane);
  std::memcpy(s + 8, &bytes, sizeof bytes);
  atomic_at<std::uint64_t>(s).store(seq + 1, std::memory_order_seq_cst);
  ring();
}

// After a seq_cst store of what waiters wait for (a flag, the notices
// count): the bell and the wake only when someone sleeps. A waiter counts
// itself among the sleepers, then checks, then sleeps while the bell is what
// it read before counting itself: either it sees the store, or this sees it
// and rings (no lost wake-up; the common case costs one load).
void Mailbox::ring() {
  if (atomic_at<std::uint32_t>(at(kSleepersAt)).load(std::memory_order_seq_cst) == 0) return;
  atomic_at<std::uint32_t>(at(kBellAt)).fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(reinterpret_cast<std::uint32_t*>(at(kBellAt)));
}

std::string Mailbox::name(std::size_t rank) const {
  const std::size_t p = rank / shape_.per_process;
  std::string s = "rank " + std::to_string(shape_.first + rank) + " (process " +
                  std::to_string(shape_.first_process + p);
  if (p < pids_.size()) s += ", pid " + std::to_string(pids_[p]);
  return s + ")";
}

Status Mailbox::notice() const {
  const Layout l = layout_of(shape_);
  for (std::size_t r = 0; r < shape_.ranks; ++r) {
    std::byte* n = at(l.notices_at + r * kNoticeBytes);
    if (atomic_at<std::uint32_t>(n).load(std::memory_order_acquire) != 2) continue;
    std::uint32_t code = 0;
    std::uint64_t len = 0;
    std::memcpy(&code, n + 4, sizeof code);
    std::memcpy(&len, n + 16, sizeof len);
    if (code == 0 || code > static_cast<std::uint32_t>(kLastErrorCode))
      code = static_cast<std::uint32_t>(ErrorCode::kProtocolError);
    len = std::min<std::uint64_t>(len, kNoticeText);
    const std::string text(reinterpret_cast<const char*>(n + 32), len);
    return Status(static_cast<ErrorCode>(code),
                  "rank " + std::to_string(shape_.first + r) + " reports: " + text);
  }
  return Status::ok();
}

void Mailbox::notify(std::size_t rank, std::uint64_t seq, const Status& error) {
  const Layout l = layout_of(shape_);
  std::byte* n = at(l.notices_at + rank * kNoticeBytes);
  std::uint32_t idle = 0;
  if (!atomic_at<std::uint32_t>(n).compare_exchange_strong(idle, 1, std::memory_order_acq_rel))
    return;  // once per rank
  const auto code = static_cast<std::uint32_t>(error.is_ok() ? ErrorCode::kInternal : error.code());
  const std::string text = "collective #" + std::to_string(seq) + ": " + error.message();
  const std::uint64_t len = std::min<std::size_t>(text.size(), kNoticeText);
  std::memcpy(n + 4, &code, sizeof code);
  std::memcpy(n + 8, &seq, sizeof seq);
  std::memcpy(n + 16, &len, sizeof len);
  std::memcpy(n + 32, text.data(), len);
  atomic_at<std::uint32_t>(n).store(2, std::memory_order_release);
  atomic_at<std::uint32_t>(at(kNoticesAt)).fetch_add(1, std::memory_order_seq_cst);
  ring();
}

Status Mailbox::alive(std::size_t rank) const {
  const std::size_t p = rank / shape_.per_process;
  if (p >= pidfds_.size()) return Status::ok();
  bool dead = false;
  if (pidfds_[p]) {
    pollfd pfd{pidfds_[p].get(), POLLIN, 0};
    dead = ::poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLIN | POLLHUP)) != 0;
  } else if (pids_[p] != ::getpid()) {
    dead = ::kill(pids_[p], 0) != 0 && errno == ESRCH;
  }
  if (!dead) return Status::ok();
  return Status(ErrorCode::kPeerFailure, name(rank) + " died: its process exited");
}

Result<Mailbox::Message> Mailbox::wait(std::size_t rank, std::uint64_t seq,
                                       Clock::time_point deadline, Lane lane) {
  std::byte* full = slot_at(rank, seq, Lane::kFull);
  std::byte* lean = lane == Lane::kLean ? slot_at(rank, seq, Lane::kLean) : nullptr;
  auto notices = atomic_at<std::uint32_t>(at(kNoticesAt));
  auto bell = atomic_at<std::uint32_t>(at(kBellAt));
  auto sleepers = atomic_at<std::uint32_t>(at(kSleepersAt));
  // The slot holding `seq`, if any (the full lane first).
  const auto ready = [&]() -> std::byte* {
    if (atomic_at<std::uint64_t>(full).load(std::memory_order_seq_cst) == seq + 1) return full;
    if (lean && atomic_at<std::uint64_t>(lean).load(std::memory_order_seq_cst) == seq + 1)
      return lean;
    return nullptr;
  };
  const auto message = [&](std::byte* s) -> Result<Message> {
    std::uint64_t bytes = 0;
    std::memcpy(&bytes, s + 8, sizeof bytes);
    const std::size_t capacity = s == full ? shape_.slot_bytes : shape_.lean_bytes;
    if (bytes > capacity)
      return Status(ErrorCode::kProtocolError, name(rank) + " published " + std::to_string(bytes) +
                                                   " bytes in a slot of " +
                                                   std::to_string(capacity));
    return Message{s == full ? Lane::kFull : Lane::kLean,
                   std::span<const std::byte>(s + kSlotHeader, bytes)};
  };
  // A notice fails every wait, also one whose message is there: the mailbox
  // stays failed, like a transport that received a notice.
  for (int spin = 0; spin < 256; ++spin) {
    if (notices.load(std::memory_order_relaxed) != 0) break;
    if (std::byte* s = ready()) return message(s);
    cpu_relax();
  }
  const auto start = Clock::now();
  auto next_check = start;
  for (;;) {
    if (notices.load(std::memory_order_acquire) != 0)
      if (Status n = notice(); !n.is_ok()) return n;
    if (std::byte* s = ready()) return message(s);
    if (abort_ != nullptr && abort_->load(std::memory_order_acquire))
      return Status(ErrorCode::kAborted, "aborted while waiting for " + name(rank));
    const auto now = Clock::now();
    if (now >= next_check) {
      if (Status a = alive(rank); !a.is_ok()) return a;
      next_check = now + kLivenessPeriod;
    }
    if (now >= deadline)
      return Status(
          ErrorCode::kTimeout,
          "waiting for " + name(rank) + "'s message of collective #" + std::to_string(seq) +
              " on the node's shared memory: timed out after " +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count()) +
              " ms");
    if (now - start < std::chrono::microseconds(50)) {
      std::this_thread::yield();
      continue;
    }
    // Sleep until the next publish or notice, the next liveness check, the
    // deadline, or 1 ms (the abort flag is not rung).
    const std::uint32_t b = bell.load(std::memory_order_seq_cst);
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    if (ready() == nullptr && notices.load(std::memory_order_seq_cst) == 0)
      futex_wait(reinterpret_cast<std::uint32_t*>(at(kBellAt)), b,
                 std::min<Clock::duration>(
                     {deadline - now, next_check - now, std::chrono::milliseconds(1)}));
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace ruccl::node
