// Helpers shared by the in-process and the MPI transport tests.
//
//  - message contents with a closed form: byte i of the message (src, seq,
//    piece) of a group `salt`, so a misrouted or shifted message is caught;
//  - ring and all-to-all step builders that own their buffers;
//  - run_ranks: one thread per rank, every rank's failure reported together.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace ruccl::transport::test {

using Bytes = std::vector<std::byte>;

inline Clock::time_point after(std::chrono::milliseconds d) { return Clock::now() + d; }

struct MessageKey {
  std::uint64_t salt = 0;
  std::size_t src = 0;
  std::uint64_t seq = 0;
  std::uint32_t piece = 0;
};

// Fills `bytes` with the closed-form contents of `key`.
void fill(Bytes& bytes, const MessageKey& key);
// nullopt if `bytes` holds exactly the contents of `key`, else where they differ.
std::optional<std::string> mismatch(const Bytes& bytes, const MessageKey& key);

// One rank's messages of one step, with their buffers.
struct Step {
  std::vector<Bytes> send_buffers;
  std::vector<Bytes> recv_buffers;
  std::vector<MessageKey> expected;  // per receive
  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs;

  // Sends of every size in `sizes` (piece k has sizes[k] bytes) to `peer`.
  void add_sends(std::size_t peer, std::size_t rank, std::uint32_t comm, std::uint64_t seq,
                 std::uint64_t salt, const std::vector<std::size_t>& sizes);
  void add_recvs(std::size_t peer, std::uint32_t comm, std::uint64_t seq, std::uint64_t salt,
                 const std::vector<std::size_t>& sizes);
  // Call once every op is added: fixes the ops' data pointers.
  void finish();
  // Checks every received buffer; empty when all are right.
  std::string check() const;
};

// A ring step: send every size to rank+1, receive every size from rank-1.
Step ring_step(std::size_t rank, std::size_t world, std::uint32_t comm, std::uint64_t seq,
               std::uint64_t salt, const std::vector<std::size_t>& sizes);
// An all-to-all step: every size to and from every rank, itself included.
Step all_to_all_step(std::size_t rank, std::size_t world, std::uint32_t comm, std::uint64_t seq,
                     std::uint64_t salt, const std::vector<std::size_t>& sizes);

// Runs fn(rank) on one thread per rank; returns "rank r: <error>" for each rank
// whose fn returned a non-empty string or threw, joined by newlines.
std::string run_ranks(std::size_t world, const std::function<std::string(std::size_t)>& fn);

// Exchanges `iterations` ring steps (seq = first_seq + i) and checks the data.
std::string ring_rounds(Transport& t, std::size_t rank, std::size_t world, std::uint32_t comm,
                        std::uint64_t first_seq, std::size_t iterations, std::uint64_t salt,
                        std::chrono::milliseconds step_deadline);

std::string describe(const Status& status);

}  // namespace ruccl::transport::test
