#include "transport_test_util.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

namespace ruccl::transport::test {

namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t seed_of(const MessageKey& key) {
  return mix(mix(mix(mix(key.salt) ^ key.src) ^ key.seq) ^ key.piece);
}

// Word j of a message: cheap, position-dependent, seed-dependent.
std::uint64_t word(std::uint64_t seed, std::size_t j) { return seed ^ (j * 0x9e3779b97f4a7c15ULL); }

}  // namespace

// The first 4 KiB word by word; every later 4 KiB block is a copy of the first
// with its block index stamped into its first word (memcpy keeps this cheap
// under the sanitizers, which check a memcpy once rather than per word).
void fill(Bytes& bytes, const MessageKey& key) {
  constexpr std::size_t kBlock = 4096;
  const std::uint64_t seed = seed_of(key);
  const std::size_t head = std::min(bytes.size(), kBlock);
  for (std::size_t at = 0; at < head; at += 8) {
    const std::uint64_t w = word(seed, at / 8);
    std::memcpy(bytes.data() + at, &w, std::min<std::size_t>(8, head - at));
  }
  for (std::size_t at = kBlock; at < bytes.size(); at += kBlock) {
    const std::size_t n = std::min(kBlock, bytes.size() - at);
    std::memcpy(bytes.data() + at, bytes.data(), n);
    const std::uint64_t stamp = word(~seed, at / kBlock);
    std::memcpy(bytes.data() + at, &stamp, std::min<std::size_t>(8, n));
  }
}

std::optional<std::string> mismatch(const Bytes& bytes, const MessageKey& key) {
  if (bytes.empty()) return std::nullopt;
  Bytes expected(bytes.size());
  fill(expected, key);
  if (std::memcmp(bytes.data(), expected.data(), bytes.size()) == 0) return std::nullopt;
  std::size_t first = 0;
  while (bytes[first] == expected[first]) ++first;
  return "message (src " + std::to_string(key.src) + " seq " + std::to_string(key.seq) +
         " piece " + std::to_string(key.piece) + ", " + std::to_string(bytes.size()) +
         " B) differs first at byte " + std::to_string(first);
}

void Step::add_sends(std::size_t peer, std::size_t rank, std::uint32_t comm, std::uint64_t seq,
                     std::uint64_t salt, const std::vector<std::size_t>& sizes) {
  for (std::uint32_t piece = 0; piece < sizes.size(); ++piece) {
    Bytes buffer(sizes[piece]);
    fill(buffer, {salt, rank, seq, piece});
    send_buffers.push_back(std::move(buffer));
    const std::uint64_t tag = make_tag({.comm = comm,
                                        .seq = seq,
                                        .step = 0,
                                        .src = static_cast<std::uint32_t>(rank),
                                        .piece = piece});
    sends.push_back({peer, nullptr, sizes[piece], tag});
  }
}

void Step::add_recvs(std::size_t peer, std::uint32_t comm, std::uint64_t seq, std::uint64_t salt,
                     const std::vector<std::size_t>& sizes) {
  for (std::uint32_t piece = 0; piece < sizes.size(); ++piece) {
    recv_buffers.emplace_back(sizes[piece], std::byte{0xee});
    expected.push_back({salt, peer, seq, piece});
    const std::uint64_t tag = make_tag({.comm = comm,
                                        .seq = seq,
                                        .step = 0,
                                        .src = static_cast<std::uint32_t>(peer),
                                        .piece = piece});
    recvs.push_back({peer, nullptr, sizes[piece], tag});
  }
}

void Step::finish() {
  for (std::size_t i = 0; i < sends.size(); ++i) sends[i].data = send_buffers[i].data();
  for (std::size_t i = 0; i < recvs.size(); ++i) recvs[i].data = recv_buffers[i].data();
}

std::string Step::check() const {
  std::string errors;
  for (std::size_t i = 0; i < recv_buffers.size(); ++i) {
    if (auto bad = mismatch(recv_buffers[i], expected[i])) errors += *bad + "; ";
  }
  return errors;
}

Step ring_step(std::size_t rank, std::size_t world, std::uint32_t comm, std::uint64_t seq,
               std::uint64_t salt, const std::vector<std::size_t>& sizes) {
  Step step;
  step.add_recvs((rank + world - 1) % world, comm, seq, salt, sizes);
  step.add_sends((rank + 1) % world, rank, comm, seq, salt, sizes);
  step.finish();
  return step;
}

Step all_to_all_step(std::size_t rank, std::size_t world, std::uint32_t comm, std::uint64_t seq,
                     std::uint64_t salt, const std::vector<std::size_t>& sizes) {
  Step step;
  for (std::size_t peer = 0; peer < world; ++peer) {
    step.add_recvs(peer, comm, seq, salt, sizes);
    step.add_sends(peer, rank, comm, seq, salt, sizes);
  }
  step.finish();
  return step;
}

std::string run_ranks(std::size_t world, const std::function<std::string(std::size_t)>& fn) {
  std::mutex mutex;
  std::string failures;
  std::vector<std::thread> threads;
  for (std::size_t rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      std::string error;
      try {
        error = fn(rank);
      } catch (const std::exception& e) {
        error = std::string("exception: ") + e.what();
      } catch (...) {
        error = "unknown exception";
      }
      if (error.empty()) return;
      std::lock_guard lock(mutex);
      failures += "rank " + std::to_string(rank) + ": " + error + "\n";
    });
  }
  for (auto& t : threads) t.join();
  return failures;
}

std::string ring_rounds(Transport& t, std::size_t rank, std::size_t world, std::uint32_t comm,
                        std::uint64_t first_seq, std::size_t iterations, std::uint64_t salt,
                        std::chrono::milliseconds step_deadline) {
  for (std::size_t i = 0; i < iterations; ++i) {
    const std::uint64_t seq = first_seq + i;
    // Every size every iteration; the 8 MiB message (UCX rendezvous) every 10th.
    std::vector<std::size_t> sizes = {0, 1, 4097};
    if (i % 10 == 0) sizes.push_back(std::size_t{8} << 20);
    Step step = ring_step(rank, world, comm, seq, salt, sizes);
    const Status s = t.exchange(step.sends, step.recvs, after(step_deadline));
    if (!s) return "iteration " + std::to_string(i) + ": " + describe(s);
    if (std::string bad = step.check(); !bad.empty()) {
      return "iteration " + std::to_string(i) + ": " + bad;
    }
  }
  return {};
}

std::string describe(const Status& status) { return status.to_string(); }

}  // namespace ruccl::transport::test
