#include "node/mailbox.hpp"

#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <thread>

#include "core/yield_window.hpp"

namespace ruccl::node {
namespace {

constexpr std::uint64_t kMagic = 0x72756363'6c6e6f64ull;  // "ruccl" "nod"
constexpr std::uint64_t kVersion = 1;
constexpr std::size_t kControlBytes = 256;
// A process: its pid, the address (in its own mapping) of that pid field, and
// whether it can read the other processes' memory (watch_processes).
constexpr std::size_t kProcessBytes = 64;
constexpr std::size_t kPidAt = 0, kPidAddressAt = 8, kReadsAt = 16;
constexpr std::size_t kNoticeBytes = 512;
// A slot: its flag (seq + 1) and length, then the message in the same cache
// line (a small message travels in one or two lines with its flag).
constexpr std::size_t kSlotHeader = 16;
constexpr std::size_t kNoticeText = kNoticeBytes - 32;
constexpr std::size_t kLine = 64;
// A waiter fetches the lines of a lean slot along with its flag (wait's
// `expect`) for a message of at most this many lines (with the slot's
// header; an input of up to 288 bytes in the compact form). np=2, four runs
// alternated with the waiter that fetches nothing, p50 of 64-256 B (every
// collective whose message is 2-5 lines) 0.45-0.73 us against 0.57-0.82. Up
// to 16 lines (six runs): 64-256 B alike, but 512 B took 1.4-1.6 us in 4 of
// 36 runs against 0.6-0.8; the first 8 lines of any message: 1-4 KiB 0.1-0.3
// us slower (a writer loses the lines it writes on every poll of a waiter
// that came first; the hardware fetches a long message's lines ahead anyway).
constexpr std::size_t kPrefetchLines = 5;

std::size_t round_up(std::size_t n) { return (n + kLine - 1) / kLine * kLine; }

// Control block fields (offsets into the segment).
constexpr std::size_t kMagicAt = 0, kVersionAt = 8, kTagAt = 16, kBytesAt = 32, kRanksAt = 40,
                      kProcessesAt = 48, kSlotBytesAt = 56, kLeanBytesAt = 96,
                      kChannelSlotsAt = 104, kChannelPieceAt = 112;
// Each rank's bell: the futex word it sleeps on, and whether it sleeps.
constexpr std::size_t kBellBytes = 64, kSleepersAt = 4;
// Beside the bell, in the rank's own line: seq + 1 of the last lean
// collective whose shard it staged (lean_stage).
constexpr std::size_t kStagedAt = 8;
constexpr std::size_t kNoticesAt = 128;  // notices posted

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

// How long a waiter whose rank has a core of its own polls with a pause
// before it yields (Mailbox::wait_until).
constexpr auto kSpinWindow = std::chrono::microseconds(1);

// A channel: the producer's counter (pieces written) in one cache line, the
// consumer's (pieces released) in the next, then its slots, each a 64-byte
// header (piece number, bytes) and the piece.
constexpr std::size_t kChannelControl = 128;
constexpr std::size_t kPieceHeader = 64;

}  // namespace

SegmentLayout layout_of(const MailboxShape& s) {
  SegmentLayout l{};
  l.processes_at = kControlBytes;
  l.notices_at = l.processes_at + s.processes * kProcessBytes;
  l.bells_at = l.notices_at + s.ranks * kNoticeBytes;
  l.slots_at = l.bells_at + s.ranks * kBellBytes;
  l.full_stride = round_up(kSlotHeader + s.slot_bytes);
  l.lean_stride = round_up(kSlotHeader + s.lean_bytes);
  l.rank_stride = 2 * (l.full_stride + l.lean_stride);
  l.channels_at = l.slots_at + s.ranks * l.rank_stride;
  l.piece_stride = kPieceHeader + round_up(s.channel_piece);
  l.channel_stride = s.channel_slots == 0 ? 0 : kChannelControl + s.channel_slots * l.piece_stride;
  const std::size_t pairs = s.ranks < 2 ? 0 : s.ranks * (s.ranks - 1);
  l.regions_at = l.channels_at + pairs * l.channel_stride;
  l.total = l.regions_at + s.processes * kRegionsPerProcess * kRegionBytes;
  return l;
}

std::size_t segment_bytes(const MailboxShape& shape) { return layout_of(shape).total; }

std::size_t channel_piece_for(std::size_t ranks) {
  const std::size_t pairs = ranks < 2 ? 1 : ranks * (ranks - 1);
  const std::size_t fit = kChannelBound / (pairs * kChannelSlots) / kPageBytes * kPageBytes;
  return std::clamp(fit, kPageBytes, kChannelPiece);
}

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
  put(kChannelSlotsAt, shape.channel_slots);
  put(kChannelPieceAt, shape.channel_piece);
  atomic_at<std::uint64_t>(b + kMagicAt).store(kMagic, std::memory_order_release);
}

Result<Mailbox> Mailbox::attach(Segment segment, const MailboxShape& shape, const Tag& tag,
                                std::size_t process, const std::atomic<bool>* abort) {
  const SegmentLayout l = layout_of(shape);
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
      get(kLeanBytesAt) != shape.lean_bytes || get(kChannelSlotsAt) != shape.channel_slots ||
      get(kChannelPieceAt) != shape.channel_piece)
    return bad("was laid out for another shape");
  std::byte* mine = b + l.processes_at + process * kProcessBytes;
  const auto address = reinterpret_cast<std::uintptr_t>(mine + kPidAt);
  std::memcpy(mine + kPidAddressAt, &address, sizeof address);
  atomic_at<std::int64_t>(mine + kPidAt)
      .store(static_cast<std::int64_t>(::getpid()), std::memory_order_release);
  Mailbox box(std::move(segment), shape, abort);
  box.process_ = process;
  box.regions_ =
      RegionsHandle(std::make_shared<Regions>(box.at(l.regions_at), shape.processes, process));
  return box;
}

Status Mailbox::watch_processes() {
  const SegmentLayout& l = layout_;
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
  // Reads each other process's pid where it says it keeps it: a kernel that
  // refuses (ptrace scope, seccomp, another user) leaves the copies through
  // the segment.
  bool reads = true;
  for (std::size_t p = 0; p < shape_.processes && reads; ++p) {
    if (p == process_) continue;
    const std::byte* block = at(l.processes_at + p * kProcessBytes);
    std::uint64_t address = 0;
    std::int64_t pid = 0;
    std::memcpy(&address, block + kPidAddressAt, sizeof address);
    iovec local{&pid, sizeof pid};
    // An address in another process's memory, for the kernel only.
    // NOLINTNEXTLINE(performance-no-int-to-ptr)
    iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), sizeof pid};
    reads = ::process_vm_readv(pids_[p], &local, 1, &remote, 1, 0) ==
                static_cast<ssize_t>(sizeof pid) &&
            pid == pids_[p];
  }
  atomic_at<std::uint32_t>(at(l.processes_at + process_ * kProcessBytes + kReadsAt))
      .store(reads ? 1 : 0, std::memory_order_release);
  return Status::ok();
}

std::byte* Mailbox::slot_at(std::size_t rank, std::uint64_t seq, Lane lane) const {
  const SegmentLayout& l = layout_;
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
  ring_all();  // every rank reads every slot
}

// After a seq_cst store of what waiters wait for (a flag, the notices
// count): the bell and the wake only when someone sleeps. A waiter counts
// itself among the sleepers, then checks, then sleeps while the bell is what
// it read before counting itself: either it sees the store, or this sees it
// and rings (no lost wake-up; the common case costs one load).
std::byte* Mailbox::bell_at(std::size_t rank) const {
  return at(layout_.bells_at + rank * kBellBytes);
}

void Mailbox::ring(std::size_t rank) {
  std::byte* b = bell_at(rank);
  if (atomic_at<std::uint32_t>(b + kSleepersAt).load(std::memory_order_seq_cst) == 0) return;
  atomic_at<std::uint32_t>(b).fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(reinterpret_cast<std::uint32_t*>(b));
}

void Mailbox::ring_all() {
  for (std::size_t r = 0; r < shape_.ranks; ++r) ring(r);
}

std::string Mailbox::name(std::size_t rank) const {
  const std::size_t p = rank / shape_.per_process;
  std::string s = "rank " + std::to_string(shape_.first + rank) + " (process " +
                  std::to_string(shape_.first_process + p);
  if (p < pids_.size()) s += ", pid " + std::to_string(pids_[p]);
  return s + ")";
}

Status Mailbox::notice() const {
  const SegmentLayout& l = layout_;
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
  const SegmentLayout& l = layout_;
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
  ring_all();
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

// ---- Channels ----
std::byte* Mailbox::channel_at(std::size_t from, std::size_t to) const {
  const SegmentLayout& l = layout_;
  const std::size_t pair = from * (shape_.ranks - 1) + (to < from ? to : to - 1);
  return at(l.channels_at + pair * l.channel_stride);
}

std::uint64_t Mailbox::written(std::size_t from, std::size_t to) const {
  return atomic_at<std::uint64_t>(channel_at(from, to)).load(std::memory_order_relaxed);
}
std::uint64_t Mailbox::consumed(std::size_t from, std::size_t to) const {
  return atomic_at<std::uint64_t>(channel_at(from, to) + 64).load(std::memory_order_acquire);
}

bool Mailbox::writable(std::size_t from, std::size_t to, std::uint64_t piece) const {
  return piece -
             atomic_at<std::uint64_t>(channel_at(from, to) + 64).load(std::memory_order_acquire) <
         shape_.channel_slots;
}

std::span<std::byte> Mailbox::piece_slot(std::size_t from, std::size_t to,
                                         std::uint64_t piece) const {
  const SegmentLayout& l = layout_;
  std::byte* slot =
      channel_at(from, to) + kChannelControl + (piece % shape_.channel_slots) * l.piece_stride;
  return {slot + kPieceHeader, shape_.channel_piece};
}

void Mailbox::publish_piece(std::size_t from, std::size_t to, std::uint64_t piece,
                            std::size_t bytes, std::uint64_t address, std::uint64_t stamp) {
  std::byte* data = piece_slot(from, to, piece).data();
  const std::uint64_t head[4] = {piece, bytes, address, stamp};
  std::memcpy(data - kPieceHeader, head, sizeof head);
  atomic_at<std::uint64_t>(channel_at(from, to)).store(piece + 1, std::memory_order_seq_cst);
  ring(to);  // only the consumer waits for it
}

Result<Mailbox::Piece> Mailbox::readable(std::size_t from, std::size_t to, std::uint64_t piece,
                                         std::size_t bytes, std::uint64_t stamp) const {
  if (atomic_at<std::uint64_t>(channel_at(from, to)).load(std::memory_order_acquire) <= piece)
    return Piece{};
  const std::span<std::byte> slot = piece_slot(from, to, piece);
  std::uint64_t head[4] = {0, 0, 0, 0};
  std::memcpy(head, slot.data() - kPieceHeader, sizeof head);
  if (head[0] != piece || head[1] != bytes || head[3] != stamp ||
      (head[2] == 0 && bytes > slot.size()))
    return Status(ErrorCode::kProtocolError,
                  name(from) + " wrote piece " + std::to_string(head[0]) + " of " +
                      std::to_string(head[1]) + " bytes (message " + std::to_string(head[3]) +
                      ") where this rank expected piece " + std::to_string(piece) + " of " +
                      std::to_string(bytes) + " bytes (message " + std::to_string(stamp) +
                      "): the ranks disagree on the collective's messages");
  if (head[2] != 0) return Piece{true, {}, head[2]};
  return Piece{true, std::span<const std::byte>(slot.data(), bytes), 0};
}

bool Mailbox::reads_directly(std::size_t rank) const {
  const SegmentLayout& l = layout_;
  const std::size_t p = rank / shape_.per_process;
  return p < shape_.processes &&
         atomic_at<std::uint32_t>(at(l.processes_at + p * kProcessBytes + kReadsAt))
                 .load(std::memory_order_acquire) == 1;
}

// The flags of a withdrawal: `closed` in the producer's line of the channel,
// `reading` in the consumer's. The consumer raises `reading`, then checks
// `closed`; the producer raises `closed`, then waits for `reading` to fall:
// with seq_cst on both sides, either the consumer sees `closed` or the
// producer sees its read (Dekker).
constexpr std::size_t kClosedAt = 8, kReadingAt = 64 + 8;

// In the consumer's line, beside `reading`: seq + 1 of the last lean
// collective whose direct input of `from` the consumer is done with.
constexpr std::size_t kLeanDoneAt = 64 + 16;

void Mailbox::lean_done(std::size_t from, std::size_t to, std::uint64_t seq) {
  atomic_at<std::uint64_t>(channel_at(from, to) + kLeanDoneAt)
      .store(seq + 1, std::memory_order_seq_cst);
  ring(from);
}

bool Mailbox::lean_released(std::size_t from, std::size_t to, std::uint64_t seq) const {
  return atomic_at<std::uint64_t>(channel_at(from, to) + kLeanDoneAt)
             .load(std::memory_order_seq_cst) >= seq + 1;
}

void Mailbox::lean_stage(std::size_t rank, std::uint64_t seq) {
  atomic_at<std::uint64_t>(bell_at(rank) + kStagedAt).store(seq + 1, std::memory_order_seq_cst);
  ring_all();
}

bool Mailbox::lean_staged(std::size_t rank, std::uint64_t seq) const {
  return atomic_at<std::uint64_t>(bell_at(rank) + kStagedAt).load(std::memory_order_seq_cst) >=
         seq + 1;
}

void Mailbox::withdraw(std::size_t from, std::size_t to, Clock::time_point deadline) {
  std::byte* c = channel_at(from, to);
  atomic_at<std::uint32_t>(c + kClosedAt).store(1, std::memory_order_seq_cst);
  const auto give_up = std::max(deadline, Clock::now()) + kWithdrawGrace;
  auto next_check = Clock::now() + kLivenessPeriod;
  for (int polls = 0; atomic_at<std::uint32_t>(c + kReadingAt).load(std::memory_order_seq_cst) != 0;
       ++polls) {
    // A read takes microseconds; a stopped reader (SIGSTOP, a debugger) costs
    // no core.
    if (polls < 64) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (Clock::now() >= next_check) {
      if (!alive(to).is_ok()) return;  // a dead process reads nothing
      if (Clock::now() >= give_up) return;
      next_check = Clock::now() + kLivenessPeriod;
    }
  }
}

Status Mailbox::begin_read(std::size_t from, std::size_t to, Clock::time_point deadline) {
  std::byte* c = channel_at(from, to);
  auto reading = atomic_at<std::uint32_t>(c + kReadingAt);
  reading.store(1, std::memory_order_seq_cst);
  if (atomic_at<std::uint32_t>(c + kClosedAt).load(std::memory_order_seq_cst) == 0)
    return Status::ok();
  reading.store(0, std::memory_order_seq_cst);
  // Its step failed: the notice that says why follows (or came already).
  const std::size_t watch[1] = {from};
  const Status s = await(
      to, watch, deadline, [] { return false; },
      [&] { return "the failure notice of " + name(from) + ", which withdrew its pieces"; });
  return s.is_ok() ? Status(ErrorCode::kInternal, name(from) + " withdrew its pieces") : s;
}

void Mailbox::end_read(std::size_t from, std::size_t to) {
  atomic_at<std::uint32_t>(channel_at(from, to) + kReadingAt).store(0, std::memory_order_seq_cst);
}

const std::byte* Mailbox::view(std::size_t from, std::uint64_t address, std::size_t bytes) const {
  const std::size_t p = from / shape_.per_process;
  if (p >= pids_.size() || !regions_.get()) return nullptr;
  return regions_.get()->view(p, pids_[p], address, bytes);
}

Status Mailbox::read_from(std::size_t from, std::size_t to, std::uint64_t address, void* dst,
                          std::size_t bytes, Clock::time_point deadline) {
  // In one of that process's regions: a copy from this process's mapping.
  if (const std::byte* in_place = view(from, address, bytes))
    return read_guarded(from, to, deadline, [&] {
      std::memcpy(dst, in_place, bytes);
      return Status::ok();
    });
  return cross(from, to, address, static_cast<std::byte*>(dst), bytes, deadline, false);
}

Status Mailbox::write_to(std::size_t from, std::size_t to, std::uint64_t address, const void* src,
                         std::size_t bytes, Clock::time_point deadline) {
  // (The buffer is the caller's own memory in its process, never one of the
  // regions: the system call, like a read outside them.)
  return cross(from, to, address, static_cast<std::byte*>(const_cast<void*>(src)), bytes, deadline,
               true);
}

Status Mailbox::cross(std::size_t from, std::size_t to, std::uint64_t address, std::byte* here,
                      std::size_t bytes, Clock::time_point deadline, bool write) {
  const std::size_t p = from / shape_.per_process;
  if (p >= pids_.size()) return Status(ErrorCode::kInternal, "cross-process copy: no such process");
  return read_guarded(from, to, deadline, [&]() -> Status {
    std::size_t done = 0;
    while (done < bytes) {
      iovec local{here + done, bytes - done};
      // An address in another process's memory, for the kernel only.
      // NOLINTNEXTLINE(performance-no-int-to-ptr)
      iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address + done)),
                   bytes - done};
      const ssize_t n = write ? ::process_vm_writev(pids_[p], &local, 1, &remote, 1, 0)
                              : ::process_vm_readv(pids_[p], &local, 1, &remote, 1, 0);
      if (n <= 0) {
        const int err = n < 0 ? errno : EFAULT;
        if (err == EINTR) continue;
        if (err == ESRCH)
          return Status(ErrorCode::kPeerFailure, name(from) + " died: its process exited");
        return Status(ErrorCode::kProtocolError,
                      std::string(write ? "writing " : "reading ") + std::to_string(bytes) +
                          " bytes " + (write ? "into " : "of ") + name(from) +
                          "'s memory at the address it published: " + std::strerror(err));
      }
      done += static_cast<std::size_t>(n);
    }
    return Status::ok();
  });
}

void Mailbox::release_piece(std::size_t from, std::size_t to, std::uint64_t piece) {
  atomic_at<std::uint64_t>(channel_at(from, to) + 64).store(piece + 1, std::memory_order_seq_cst);
  ring(from);  // only the producer waits for a free slot
}

Status Mailbox::wait_until(std::size_t me, std::span<const std::size_t> watch,
                           Clock::time_point deadline, Waiting& waiting) {
  auto notices = atomic_at<std::uint32_t>(at(kNoticesAt));
  std::byte* my_bell = bell_at(me);
  auto bell = atomic_at<std::uint32_t>(my_bell);
  auto sleepers = atomic_at<std::uint32_t>(my_bell + kSleepersAt);
  // A notice fails every wait, also one whose message is there: the mailbox
  // stays failed, like a transport that received a notice.
  // What was ready counts only if no notice came before it: a rank posts its
  // notice before anything it publishes after the failure.
  const auto ready = [&]() -> std::optional<Status> {
    if (!waiting.ready()) return std::nullopt;
    if (notices.load(std::memory_order_acquire) != 0)
      if (Status n = notice(); !n.is_ok()) return n;
    return Status::ok();
  };
  // An abort: its notice when there is one (an aborter posts its notices
  // before it raises the flag, so the flag seen brings them along: the error
  // names who aborted and why), else the bare fact.
  const auto aborted = [&](const char* when) {
    if (notices.load(std::memory_order_acquire) != 0)
      if (Status n = notice(); !n.is_ok()) return n;
    return Status(ErrorCode::kAborted, when + waiting.what());
  };
  // Aborted first: a message that is there already does not outrun an abort.
  if (abort_ != nullptr && abort_->load(std::memory_order_acquire))
    return aborted("aborted before waiting for ");
  // A few polls without a pause first: a message due within a few
  // nanoseconds is seen at once (measured: 8-64 B all-reduces 5-8% faster
  // than polling through the loop below from the start). Then, where every
  // rank has a core of its own (spin_), polls with a pause for up to
  // kSpinWindow, and then the loop, which yields the core. No longer: a
  // waiter that shares its core with the rank it waits for spins there
  // while that rank cannot run. Measured on the development VM's AMD EPYC
  // (240 pauses 9 us there; 140 cycles each on recent Intel cores),
  // `ruccl-perf --world --peers mpi`, 300 iterations, alternated, until the
  // thirty-fourth session 256 polls, 240 with a pause: np=4 on 2 cores
  // (no spin), all-reduce of 8 B 21.4 -> 9.3 us (Open MPI 10-19), broadcast
  // of 8 B 21-45 -> 9-14; np=2, broadcast of 8 B 0.60 us with 256 polls,
  // 1.40 with none, 0.60-0.63 with 1 us of pauses (2 and 4 us alike); one
  // process of 2 ranks bound to one core (crowd_cores: no spin) 8 B 23.5 ->
  // 4.2-4.4 us, where 1 us of pauses made it 6.9-7.1.
  Clock::time_point spin_until{};
  for (int poll = 0;; ++poll) {
    if (notices.load(std::memory_order_relaxed) != 0) break;
    if (auto r = ready()) return *r;
    if (poll < 16) continue;
    if (!spin_) break;
    if (poll == 16) spin_until = Clock::now() + kSpinWindow;
    else if (poll % 16 == 0 && Clock::now() >= spin_until) break;
    cpu_relax();
  }
  const auto start = Clock::now();
  auto next_check = start;
  for (;;) {
    if (notices.load(std::memory_order_acquire) != 0)
      if (Status n = notice(); !n.is_ok()) return n;
    if (auto r = ready()) return *r;
    if (abort_ != nullptr && abort_->load(std::memory_order_acquire))
      return aborted("aborted while waiting for ");
    const auto now = Clock::now();
    if (now >= next_check) {
      for (std::size_t rank : watch)
        if (Status a = alive(rank); !a.is_ok()) return a;
      next_check = now + kLivenessPeriod;
    }
    if (now >= deadline)
      return Status(
          ErrorCode::kTimeout,
          "waiting for " + waiting.what() + ": timed out after " +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count()) +
              " ms");
    if (now - start < core::yield_window(oversubscribed_)) {
      std::this_thread::yield();
      continue;
    }
    // Sleep until the next publish or notice, the next liveness check, the
    // deadline, or 1 ms (the abort flag is not rung).
    const std::uint32_t b = bell.load(std::memory_order_seq_cst);
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    // The count before the loads below, also where a load may pass a
    // read-modify-write (AArch64): else a publisher may miss this sleeper.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!waiting.ready() && notices.load(std::memory_order_seq_cst) == 0)
      futex_wait(reinterpret_cast<std::uint32_t*>(my_bell), b,
                 std::min<Clock::duration>(
                     {deadline - now, next_check - now, std::chrono::milliseconds(1)}));
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

namespace {
// The end of the lines a waiter expecting `expect` bytes fetches from a lean
// slot of `capacity` (kPrefetchLines), 0 where it fetches none; the fetch.
std::size_t fetch_end(std::size_t expect, std::size_t capacity) {
  return expect <= capacity && kSlotHeader + expect <= kPrefetchLines * kLine ? kSlotHeader + expect
                                                                              : 0;
}
void fetch_lines(const std::byte* slot, std::size_t end) {
  for (std::size_t line = kLine; line < end; line += kLine) __builtin_prefetch(slot + line, 0, 3);
}
}  // namespace

void Mailbox::prefetch_lean(std::size_t rank, std::uint64_t seq, std::size_t expect) const {
  fetch_lines(slot_at(rank, seq, Lane::kLean), fetch_end(expect, shape_.lean_bytes));
}

Result<Mailbox::Message> Mailbox::wait(std::size_t me, std::size_t rank, std::uint64_t seq,
                                       Clock::time_point deadline, Lane lane, std::size_t expect) {
  std::byte* full = slot_at(rank, seq, Lane::kFull);
  std::byte* lean = lane == Lane::kLean ? slot_at(rank, seq, Lane::kLean) : nullptr;
  // (Computed once: every poll fetches the same lines.)
  const std::size_t fetch = lean != nullptr ? fetch_end(expect, shape_.lean_bytes) : 0;
  // The slot holding `seq`, if any (the full lane first).
  const auto ready = [&]() -> std::byte* {
    fetch_lines(lean, fetch);
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
  std::byte* got = nullptr;
  // Already there (the later rank of a small collective finds it so), with
  // no notice and no abort: taken without setting a wait up. (The notices
  // after the slot, as in wait_until: a rank posts its notice before what it
  // publishes after a failure.)
  if ((got = ready()) != nullptr &&
      atomic_at<std::uint32_t>(at(kNoticesAt)).load(std::memory_order_acquire) == 0 &&
      (abort_ == nullptr || !abort_->load(std::memory_order_acquire)))
    return message(got);
  const std::size_t watch[1] = {rank};
  const auto poll = [&] { return (got = ready()) != nullptr; };
  RUCCL_TRY(await(me, watch, deadline, poll, [&] {
    return name(rank) + "'s message of collective #" + std::to_string(seq) +
           " on the node's shared memory";
  }));
  return message(got);
}

}  // namespace ruccl::node
