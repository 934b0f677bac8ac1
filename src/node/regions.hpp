// Regions: host memory the processes of one node read in place
// (Communicator::allocate_host). Each region is a memfd of its own (segment.hpp:
// sealed size, no name in /dev/shm), mapped by the process that allocated it;
// the node segment holds a table per process of its live regions, each entry
// {generation, base address in the owner's memory, bytes, descriptor}. A
// channel's producer whose message lies in one of its regions publishes the
// message's address (as for process_vm_readv, node_run.hpp); the consumer finds
// the region in the owner's table, maps it once through /proc/<pid>/fd/<fd>
// and reads the piece there: no copy into the segment, none out of the kernel.
//
// An entry is written under its generation (a seqlock): 0 or odd is no region;
// the owner makes it odd before it changes the entry or closes the region, and
// an even generation is never reused on that process. A reader takes an entry
// only between two equal even reads of it, and a mapping only if the
// generation still held after it mapped (the descriptor it opened was the
// region's). Mappings are kept per (process, entry): a reader drops one when
// it sees the entry changed, so at most kRegionsPerProcess regions per process
// stay mapped here after their owner freed them, until the communicator goes.
// The table's bytes come from other processes: every field is bounds-checked.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "node/segment.hpp"
#include "ruccl/status.hpp"

namespace ruccl::node {

inline constexpr std::size_t kRegionsPerProcess = 16;
inline constexpr std::size_t kRegionBytes = 64;  // one entry of the table
// A region's size bound (a field from another process is checked against it).
inline constexpr std::size_t kRegionMaxBytes = std::size_t{1} << 40;

class Regions : public std::enable_shared_from_this<Regions> {
 public:
  // `tables`: the segment's tables, `processes` x kRegionsPerProcess entries of
  // kRegionBytes, zero-filled by the segment's creator; this is process
  // `process`'s view of them.
  Regions(std::byte* tables, std::size_t processes, std::size_t process)
      : tables_(tables), processes_(processes), process_(process) {}
  Regions(const Regions&) = delete;
  Regions& operator=(const Regions&) = delete;

  // Owner: a new region of `bytes` (rounded up to whole pages), entered in
  // this process's table; its memory is freed and its entry cleared when the
  // last copy of the pointer goes. kInvalidArgument for 0 bytes or more than
  // kRegionMaxBytes; kOutOfMemory when the table is full.
  static Result<std::shared_ptr<std::byte>> allocate(const std::shared_ptr<Regions>& self,
                                                     std::size_t bytes);
  // Owner: whether [address, address + bytes) lies within one of this
  // process's regions.
  bool owns(const void* address, std::size_t bytes) const;
  // Reader: `bytes` at `address` in the memory of process `process` (pid
  // `pid`), mapped here, if they lie within one of its regions; else null
  // (no region there, it changed, or the kernel refused the mapping: the
  // caller reads the owner's memory another way).
  const std::byte* view(std::size_t process, pid_t pid, std::uint64_t address, std::size_t bytes);
  // The segment goes (the mailbox's destructor): regions still allocated
  // stay valid memory, no longer entered in any table.
  void detach();

 private:
  struct Owned {
    Segment memory;
    std::size_t entry = 0;
  };
  struct Mapped {
    std::uint64_t generation = 0;  // 0: none
    Segment memory;
    std::uint64_t base = 0;  // the region's address in its owner's memory
  };
  std::byte* entry_at(std::size_t process, std::size_t entry) const {
    return tables_ + (process * kRegionsPerProcess + entry) * kRegionBytes;
  }
  void release(std::byte* data) noexcept;

  std::byte* tables_;
  const std::size_t processes_, process_;
  mutable std::mutex owner_mutex_;  // owned_, next_generation_, tables_ (detach)
  std::vector<Owned> owned_;
  std::uint64_t next_generation_ = 2;
  std::atomic<std::size_t> live_{0};  // owned_.size(), read without the lock
  std::mutex reader_mutex_;           // mapped_
  std::vector<Mapped> mapped_;        // processes x kRegionsPerProcess, made on first use
};

// The mailbox's hold on its Regions: detaches them when it goes (or is
// replaced), before the segment that holds the tables is unmapped.
class RegionsHandle {
 public:
  RegionsHandle() = default;
  explicit RegionsHandle(std::shared_ptr<Regions> regions) : regions_(std::move(regions)) {}
  RegionsHandle(RegionsHandle&&) noexcept = default;
  RegionsHandle& operator=(RegionsHandle&& other) noexcept {
    if (this != &other) {
      if (regions_) regions_->detach();
      regions_ = std::move(other.regions_);
    }
    return *this;
  }
  RegionsHandle(const RegionsHandle&) = delete;
  RegionsHandle& operator=(const RegionsHandle&) = delete;
  ~RegionsHandle() {
    if (regions_) regions_->detach();
  }
  const std::shared_ptr<Regions>& get() const { return regions_; }

 private:
  std::shared_ptr<Regions> regions_;
};

}  // namespace ruccl::node
