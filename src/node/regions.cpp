#include "node/regions.hpp"

#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstring>
#include <string>

namespace ruccl::node {
namespace {

// An entry: generation, base, bytes, descriptor (8 bytes each).
constexpr std::size_t kGenerationAt = 0, kBaseAt = 8, kBytesAt = 16, kFdAt = 24;

std::atomic_ref<std::uint64_t> word(std::byte* entry, std::size_t at) {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(entry + at));
}

struct Entry {
  std::uint64_t generation = 0, base = 0, bytes = 0, fd = 0;
};

// The entry as it stood between two equal even generations; generation 0 when
// it holds no region or changed while read.
Entry read_entry(std::byte* e) {
  Entry out;
  const std::uint64_t g = word(e, kGenerationAt).load(std::memory_order_acquire);
  if (g == 0 || g % 2 != 0) return out;
  out.base = word(e, kBaseAt).load(std::memory_order_relaxed);
  out.bytes = word(e, kBytesAt).load(std::memory_order_relaxed);
  out.fd = word(e, kFdAt).load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (word(e, kGenerationAt).load(std::memory_order_relaxed) == g) out.generation = g;
  return out;
}

}  // namespace

Result<std::shared_ptr<std::byte>> Regions::allocate(const std::shared_ptr<Regions>& self,
                                                     std::size_t bytes) {
  if (bytes == 0 || bytes > kRegionMaxBytes)
    return Status(ErrorCode::kInvalidArgument, "allocate_host: " + std::to_string(bytes) +
                                                   " bytes (1 to " +
                                                   std::to_string(kRegionMaxBytes) + ")");
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t rounded = (bytes + page - 1) / page * page;
  std::lock_guard lock(self->owner_mutex_);
  std::size_t entry = 0;
  bool used[kRegionsPerProcess] = {};
  for (const Owned& o : self->owned_) used[o.entry] = true;
  while (entry < kRegionsPerProcess && used[entry]) ++entry;
  if (entry == kRegionsPerProcess || self->tables_ == nullptr)
    return Status(
        ErrorCode::kOutOfMemory,
        "allocate_host: " + std::to_string(kRegionsPerProcess) +
            " regions are live in this process (free one, or allocate fewer larger ones)");
  auto memory = Segment::create(rounded, "ruccl-host");
  RUCCL_TRY(memory);
  std::byte* data = memory.value().data();
  const int fd = memory.value().fd();
  self->owned_.push_back(Owned{std::move(memory).value(), entry});
  self->live_.store(self->owned_.size(), std::memory_order_relaxed);
  // Entered under a new generation: odd while written, even once complete.
  std::byte* e = self->entry_at(self->process_, entry);
  const std::uint64_t g = self->next_generation_;
  self->next_generation_ += 2;
  word(e, kGenerationAt).store(g - 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  word(e, kBaseAt).store(reinterpret_cast<std::uintptr_t>(data), std::memory_order_relaxed);
  word(e, kBytesAt).store(rounded, std::memory_order_relaxed);
  word(e, kFdAt).store(static_cast<std::uint64_t>(fd), std::memory_order_relaxed);
  word(e, kGenerationAt).store(g, std::memory_order_release);
  return std::shared_ptr<std::byte>(data, [owner = self](std::byte* p) { owner->release(p); });
}

void Regions::release(std::byte* data) noexcept {
  std::lock_guard lock(owner_mutex_);
  for (std::size_t i = 0; i < owned_.size(); ++i) {
    if (owned_[i].memory.data() != data) continue;
    // Odd before the memory goes: a reader that still maps it drops it.
    if (tables_ != nullptr) {
      auto g = word(entry_at(process_, owned_[i].entry), kGenerationAt);
      g.store(g.load(std::memory_order_relaxed) | 1, std::memory_order_release);
    }
    owned_.erase(owned_.begin() + static_cast<std::ptrdiff_t>(i));
    live_.store(owned_.size(), std::memory_order_relaxed);
    return;
  }
}

bool Regions::owns(const void* address, std::size_t bytes) const {
  if (live_.load(std::memory_order_relaxed) == 0) return false;  // most processes: none
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  std::lock_guard lock(owner_mutex_);
  if (tables_ == nullptr) return false;
  for (const Owned& o : owned_) {
    const auto base = reinterpret_cast<std::uintptr_t>(o.memory.data());
    if (a >= base && a - base <= o.memory.size() && bytes <= o.memory.size() - (a - base))
      return true;
  }
  return false;
}

const std::byte* Regions::view(std::size_t process, pid_t pid, std::uint64_t address,
                               std::size_t bytes) {
  if (process >= processes_ || process == process_ || tables_ == nullptr) return nullptr;
  std::lock_guard lock(reader_mutex_);
  if (mapped_.empty()) mapped_.resize(processes_ * kRegionsPerProcess);
  const std::byte* found = nullptr;
  for (std::size_t i = 0; i < kRegionsPerProcess; ++i) {
    std::byte* e = entry_at(process, i);
    const Entry entry = read_entry(e);
    Mapped& m = mapped_[process * kRegionsPerProcess + i];
    // A mapping of a region since freed (or replaced) goes.
    if (m.generation != 0 && m.generation != entry.generation) m = Mapped{};
    if (found != nullptr || entry.generation == 0 || entry.bytes == 0 ||
        entry.bytes > kRegionMaxBytes || entry.fd > INT_MAX || address < entry.base ||
        address - entry.base > entry.bytes || bytes > entry.bytes - (address - entry.base))
      continue;
    if (m.generation == 0) {
      auto opened = Segment::open(pid, static_cast<int>(entry.fd), entry.bytes);
      if (!opened.is_ok()) return nullptr;
      // The descriptor opened was the region's only if the entry still holds.
      if (word(e, kGenerationAt).load(std::memory_order_acquire) != entry.generation)
        return nullptr;
      m.memory = std::move(opened).value();
      m.memory.close_fd();
      m.generation = entry.generation;
      m.base = entry.base;
    }
    found = m.memory.data() + (address - m.base);
  }
  return found;
}

void Regions::detach() {
  std::lock_guard lock(owner_mutex_);
  tables_ = nullptr;
}

}  // namespace ruccl::node
