// UCX transports in one process: each rank is a Transport driven by its own
// thread, and the worker addresses are exchanged in memory (no MPI).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "transport/transport.hpp"
#include "transport_test_util.hpp"

namespace ruccl::transport::test {
namespace {

using namespace std::chrono_literals;
using Ms = std::chrono::milliseconds;

Ms since(Clock::time_point start) {
  return std::chrono::duration_cast<Ms>(Clock::now() - start);
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// `n` transports connected to each other. Connecting does not wait for the
// peers, so the main thread sets the group up and the rank threads use it.
struct Group {
  std::vector<std::unique_ptr<Transport>> members;
  Transport& operator[](std::size_t rank) { return *members[rank]; }
  std::size_t size() const { return members.size(); }
};

std::string make_group(std::size_t n, Group& group, TransportOptions options = {}) {
  std::vector<std::vector<std::byte>> addresses;
  for (std::size_t rank = 0; rank < n; ++rank) {
    auto t = make_ucx_transport(options);
    if (!t) return "make_ucx_transport: " + describe(t.status());
    addresses.push_back((*t)->address());
    group.members.push_back(std::move(t).value());
  }
  for (std::size_t rank = 0; rank < n; ++rank) {
    if (Status s = group[rank].connect(addresses, after(5s)); !s) {
      return "connect rank " + std::to_string(rank) + ": " + describe(s);
    }
  }
  return {};
}

// Closes every member at once: a graceful close needs every peer progressing.
std::string close_group(Group& group, Ms bound = 5000ms) {
  return run_ranks(group.size(), [&](std::size_t rank) -> std::string {
    const Status s = group[rank].close(after(bound));
    return s ? std::string() : "close: " + describe(s);
  });
}

TEST(TransportInproc, BasicsAndArgumentChecks) {
  auto made = make_ucx_transport();
  ASSERT_TRUE(made) << describe(made.status());
  Transport& t = **made;
  EXPECT_TRUE(t.supports(MemoryType::kHost));
  std::printf("supports(kCuda) = %d\n", int(t.supports(MemoryType::kCuda)));
  EXPECT_FALSE(t.address().empty());

  std::byte byte{1};
  const SendOp send{0, &byte, 1, 42};
  EXPECT_EQ(t.exchange({&send, 1}, {}, after(1s)).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(t.exchange({}, {}, after(1s)));  // nothing to do is fine

  EXPECT_EQ(t.connect({}, after(1s)).code(), ErrorCode::kInvalidArgument);
  ASSERT_TRUE(t.connect({t.address()}, after(1s)));
  EXPECT_EQ(t.connect({t.address()}, after(1s)).code(), ErrorCode::kInvalidArgument);

  const SendOp out_of_range{1, &byte, 1, 42};
  EXPECT_EQ(t.exchange({&out_of_range, 1}, {}, after(1s)).code(), ErrorCode::kInvalidArgument);
  const RecvOp null_data{0, nullptr, 8, 42};
  EXPECT_EQ(t.exchange({}, {&null_data, 1}, after(1s)).code(), ErrorCode::kInvalidArgument);

  // A message to itself, and the lanes that carry it.
  std::byte got{0};
  const RecvOp recv{0, &got, 1, 42};
  const Status s = t.exchange({&send, 1}, {&recv, 1}, after(5s));
  EXPECT_TRUE(s) << describe(s);
  EXPECT_EQ(got, byte);
  const std::string lanes = t.describe_lanes(0);
  std::printf("lanes to self: %s\n", lanes.c_str());
  EXPECT_FALSE(lanes.empty());
  EXPECT_FALSE(contains(lanes, "no lanes"));
  EXPECT_TRUE(contains(t.describe_lanes(7), "not connected"));
  EXPECT_TRUE(t.close(after(2s)));
}

// The ring of every size, 100 back-to-back iterations with the seq changing.
TEST(TransportInproc, RingOfThreeHundredIterations) {
  Group group;
  ASSERT_EQ(make_group(3, group), "");
  const auto start = Clock::now();
  EXPECT_EQ(run_ranks(3, [&](std::size_t rank) {
              return ring_rounds(group[rank], rank, 3, /*comm=*/1, /*first_seq=*/0, 100,
                                 /*salt=*/11, 20000ms);
            }),
            "");
  std::printf("100 ring iterations of 3 ranks: %lld ms; lanes 0->1: %s\n",
              static_cast<long long>(since(start).count()), group[0].describe_lanes(1).c_str());
  EXPECT_EQ(close_group(group), "");
}

// Every rank sends to and receives from every rank (itself included) in one
// exchange: receives tell senders apart by the tag's src field alone.
TEST(TransportInproc, AllToAllIncludingSelf) {
  Group group;
  ASSERT_EQ(make_group(3, group), "");
  EXPECT_EQ(run_ranks(3, [&](std::size_t rank) -> std::string {
              for (std::uint64_t seq = 0; seq < 10; ++seq) {
                Step step = all_to_all_step(rank, 3, 2, seq, 5, {0, 1, 4097, 65536});
                if (Status s = group[rank].exchange(step.sends, step.recvs, after(20s)); !s) {
                  return "seq " + std::to_string(seq) + ": " + describe(s);
                }
                if (std::string bad = step.check(); !bad.empty()) return bad;
              }
              return {};
            }),
            "");
  EXPECT_EQ(close_group(group), "");
}

// A receive whose peer never sends: kTimeout at the deadline, naming the peer
// and the tag; the transport stays usable for other tags afterwards.
TEST(TransportInproc, ReceiveWithoutSenderTimesOut) {
  Group group;
  ASSERT_EQ(make_group(2, group), "");
  const std::uint64_t tag = make_tag({.comm = 3, .seq = 999, .step = 2, .src = 1, .piece = 0});
  EXPECT_EQ(run_ranks(2, [&](std::size_t rank) -> std::string {
              if (rank == 0) {
                Bytes buffer(16);
                const RecvOp recv{1, buffer.data(), buffer.size(), tag};
                const auto start = Clock::now();
                const Status s = group[0].exchange({}, {&recv, 1}, after(300ms));
                const Ms took = since(start);
                std::printf("timeout after %lld ms: %s\n", static_cast<long long>(took.count()),
                            describe(s).c_str());
                if (s.code() != ErrorCode::kTimeout) return "expected kTimeout: " + describe(s);
                if (!contains(s.message(), "waiting for rank 1") ||
                    !contains(s.message(), tag_string(tag))) {
                  return "the message does not name the rank and tag: " + describe(s);
                }
                if (took < 300ms || took > 2000ms) {
                  return "took " + std::to_string(took.count()) + " ms";
                }
                return {};
              }
              // Rank 1, blocked on a message rank 0 never sends, learns of rank
              // 0's timeout from its failure notice long before its own deadline,
              // and so does every later exchange (the transport stays failed).
              Bytes buffer(8);
              const RecvOp recv{0, buffer.data(), buffer.size(), make_tag({.comm = 3, .src = 0})};
              const auto start = Clock::now();
              for (int attempt = 0; attempt < 2; ++attempt) {
                const Status s = group[1].exchange({}, {&recv, 1}, after(20s));
                if (s.code() != ErrorCode::kTimeout || !contains(s.message(), "rank 0 reports") ||
                    !contains(s.message(), "waiting for rank 1"))
                  return "attempt " + std::to_string(attempt) + ": expected rank 0's notice: " +
                         describe(s);
              }
              if (since(start) > 5000ms)
                return "the notice took " + std::to_string(since(start).count()) + " ms";
              return {};
            }),
            "");
  // After a failure a graceful close is best effort (any outcome), but bounded.
  const auto closing = Clock::now();
  close_group(group, 500ms);
  EXPECT_LT(since(closing), 3000ms);
}

// The abort flag wakes every blocked exchange with kAborted.
TEST(TransportInproc, AbortFlagStopsExchange) {
  std::atomic<bool> abort{false};
  Group group;
  ASSERT_EQ(make_group(2, group, {.abort = &abort, .unwatched_peers = {}}), "");
  std::thread aborter([&] {
    std::this_thread::sleep_for(100ms);
    abort.store(true);
  });
  EXPECT_EQ(run_ranks(2, [&](std::size_t rank) -> std::string {
              Bytes buffer(16);
              const std::uint64_t tag = make_tag({.comm = 4, .src = 1 - std::uint32_t(rank)});
              const RecvOp recv{1 - rank, buffer.data(), buffer.size(), tag};
              const auto start = Clock::now();
              const Status s = group[rank].exchange({}, {&recv, 1}, after(10s));
              const Ms took = since(start);
              if (s.code() != ErrorCode::kAborted) return "expected kAborted: " + describe(s);
              if (took > 2000ms) return "took " + std::to_string(took.count()) + " ms";
              // Later calls see the flag at once.
              if (group[rank].exchange({}, {&recv, 1}, after(10s)).code() != ErrorCode::kAborted) {
                return "second exchange did not abort";
              }
              return {};
            }),
            "");
  aborter.join();
  // close honours the flag too (it returns at once, kAborted if a close was
  // still in flight); the destructors force-close what is left.
  const auto start = Clock::now();
  const Status s = group[0].close(after(5s));
  EXPECT_TRUE(s.is_ok() || s.code() == ErrorCode::kAborted) << describe(s);
  EXPECT_LT(since(start), 1000ms);
}

// A large send the peer never receives cannot be cancelled in UCX: the
// endpoint is force-closed so that the request ends before exchange returns.
TEST(TransportInproc, UnfinishedSendIsCutOffAtTheDeadline) {
  Group group;
  ASSERT_EQ(make_group(2, group), "");
  EXPECT_EQ(run_ranks(2, [&](std::size_t rank) -> std::string {
              if (rank == 1) {
                // Progress (so the rendezvous request arrives) without matching it.
                Bytes buffer(8);
                const RecvOp recv{0, buffer.data(), 8, make_tag({.comm = 5, .piece = 9})};
                const Status s = group[1].exchange({}, {&recv, 1}, after(600ms));
                if (s.code() != ErrorCode::kTimeout && s.code() != ErrorCode::kPeerFailure) {
                  return "rank 1: " + describe(s);
                }
                return {};
              }
              const auto start = Clock::now();
              Status s;
              {
                Bytes big(std::size_t{8} << 20, std::byte{7});
                const SendOp send{1, big.data(), big.size(), make_tag({.comm = 5, .piece = 1})};
                s = group[0].exchange({&send, 1}, {}, after(300ms));
              }  // `big` is freed: no request may refer to it any more
              std::printf("unfinished send after %lld ms: %s\n",
                          static_cast<long long>(since(start).count()), describe(s).c_str());
              if (s.code() != ErrorCode::kTimeout) return "expected kTimeout: " + describe(s);
              if (!contains(s.message(), "force-closed")) return "no cut-off noted: " + describe(s);
              std::byte one{1};
              const SendOp again{1, &one, 1, make_tag({.comm = 5, .piece = 2})};
              const Status next = group[0].exchange({&again, 1}, {}, after(1s));
              if (next.code() != ErrorCode::kAborted || !contains(next.message(), "closed")) {
                return "the cut-off peer should be unusable: " + describe(next);
              }
              return {};
            }),
            "");
  close_group(group, 500ms);  // peer 1's endpoint to 0 may have failed: any outcome
}

// A message of another size than the receive expects is an error, and nothing
// is written past the receive's bytes.
TEST(TransportInproc, WrongSizeIsAnErrorNotCorruption) {
  struct Case {
    std::size_t sent;
    std::size_t expected;
  };
  // Inline payloads both ways, a split message for an inline receive, and
  // split messages both ways.
  const Case cases[] = {{100, 64}, {64, 100}, {std::size_t{1} << 20, 4096},
                        {std::size_t{1} << 20, std::size_t{1} << 19}};
  constexpr std::size_t kGuard = 256;
  for (std::uint64_t seq = 0; seq < std::size(cases); ++seq) {
    const Case& c = cases[seq];
    Group group;  // a failed exchange leaves its transports failed: one group per case
    ASSERT_EQ(make_group(2, group), "");
    EXPECT_EQ(run_ranks(2, [&](std::size_t rank) -> std::string {
                const std::uint64_t tag = make_tag({.comm = 6, .seq = seq, .src = 0});
                if (rank == 0) {
                  Bytes data(c.sent, std::byte{0x5a});
                  const SendOp send{1, data.data(), data.size(), tag};
                  Status s = group[0].exchange({&send, 1}, {}, after(5s));
                  std::printf("case %llu sender: %s\n", static_cast<unsigned long long>(seq),
                              describe(s).c_str());
                  // A sender that finished first learns of the mismatch from the
                  // receiver's failure notice, at its next exchange.
                  Bytes none(8);
                  const RecvOp never{1, none.data(), none.size(), make_tag({.comm = 6, .src = 1})};
                  if (s) s = group[0].exchange({}, {&never, 1}, after(5s));
                  if (s.code() != ErrorCode::kShapeMismatch)
                    return "sender, case " + std::to_string(seq) + ": " + describe(s);
                  return {};
                }
                Bytes buffer(c.expected + kGuard, std::byte{0xee});
                const RecvOp recv{0, buffer.data(), c.expected, tag};
                const Status s = group[1].exchange({}, {&recv, 1}, after(5s));
                std::printf("case %llu receiver: %s\n", static_cast<unsigned long long>(seq),
                            describe(s).c_str());
                std::string errors;
                if (s.code() != ErrorCode::kShapeMismatch)
                  errors += "case " + std::to_string(seq) + ": " + describe(s) + "; ";
                for (std::size_t i = c.expected; i < buffer.size(); ++i) {
                  if (buffer[i] != std::byte{0xee}) {
                    errors += "case " + std::to_string(seq) + ": guard byte " + std::to_string(i) +
                              " overwritten; ";
                    break;
                  }
                }
                return errors;
              }),
              "");
    close_group(group, 500ms);
  }
}

// Two groups in one process, using the same tags at the same time: no state is
// shared between transports.
// A transport that forwards everything but exchange_rounds, which runs the
// base class's default (one exchange per round).
class Forwarding final : public Transport {
 public:
  explicit Forwarding(Transport& inner) : inner_(inner) {}
  std::vector<std::byte> address() const override { return inner_.address(); }
  Status connect(const std::vector<std::vector<std::byte>>& a, Clock::time_point d) override {
    return inner_.connect(a, d);
  }
  Status handshake(Clock::time_point d) override { return inner_.handshake(d); }
  Status exchange(std::span<const SendOp> s, std::span<const RecvOp> r,
                  Clock::time_point d) override {
    return inner_.exchange(s, r, d);
  }
  void notify_failure(std::uint64_t seq, const Status& e) override {
    inner_.notify_failure(seq, e);
  }
  void abort_notify(std::uint64_t seq, const Status& e) override { inner_.abort_notify(seq, e); }
  void watch_peers(std::function<Status(std::size_t)> alive) override {
    inner_.watch_peers(std::move(alive));
  }
  bool supports(MemoryType type) const override { return inner_.supports(type); }
  std::string describe_lanes(std::size_t peer) const override {
    return inner_.describe_lanes(peer);
  }
  Status close(Clock::time_point d) override { return inner_.close(d); }

 private:
  Transport& inner_;
};

// A ring step in rounds (round k: piece k to rank + 1, piece k from rank - 1),
// every receive into one of two buffers (round k into buffer k % 2), two
// rounds in flight: `done` sees each round's message whole, in order, before
// a later round reuses its buffer. Inline and zero-copy sizes alike.
std::string ring_in_rounds(Transport& t, std::size_t rank, std::size_t world, std::uint64_t seq,
                           const std::vector<std::size_t>& sizes) {
  Step step = ring_step(rank, world, /*comm=*/3, seq, /*salt=*/21, sizes);
  const std::size_t largest = *std::max_element(sizes.begin(), sizes.end());
  std::array<Bytes, 2> buffers{Bytes(largest), Bytes(largest)};
  std::vector<std::size_t> begin(sizes.size() + 1);
  for (std::size_t k = 0; k <= sizes.size(); ++k) begin[k] = k;
  for (std::size_t k = 0; k < sizes.size(); ++k) step.recvs[k].data = buffers[k % 2].data();
  std::string bad;
  std::size_t next = 0;
  const RoundDone done = [&](std::size_t k) -> Status {
    if (k != next++) bad += "round " + std::to_string(k) + " out of order; ";
    const Bytes got(buffers[k % 2].begin(),
                    buffers[k % 2].begin() + static_cast<std::ptrdiff_t>(sizes[k]));
    if (auto m = mismatch(got, step.expected[k]))
      bad += "round " + std::to_string(k) + ": " + *m + "; ";
    // Scribbled over: a later round must land whole again.
    std::fill(buffers[k % 2].begin(), buffers[k % 2].end(), std::byte{0xee});
    return Status::ok();
  };
  const Rounds rounds{step.sends, step.recvs, begin, begin, 2};
  if (Status s = t.exchange_rounds(rounds, done, after(20s)); !s) return describe(s);
  if (next != sizes.size()) bad += std::to_string(next) + " rounds delivered";
  return bad;
}

TEST(TransportInproc, RoundsDeliverInOrderBeforeTheirBuffersAreReused) {
  const std::vector<std::size_t> sizes = {1, 8000, 70000, 0, 3, 200000, 65536, 4096, 17};
  for (const bool forwarding : {false, true}) {
    Group group;
    ASSERT_EQ(make_group(3, group), "");
    std::vector<std::unique_ptr<Forwarding>> views;
    for (std::size_t r = 0; r < 3; ++r) views.push_back(std::make_unique<Forwarding>(group[r]));
    EXPECT_EQ(run_ranks(3,
                        [&](std::size_t rank) -> std::string {
                          Transport& t =
                              forwarding ? static_cast<Transport&>(*views[rank]) : group[rank];
                          for (std::uint64_t seq = 0; seq < 8; ++seq)
                            if (std::string bad = ring_in_rounds(t, rank, 3, seq, sizes);
                                !bad.empty())
                              return "seq " + std::to_string(seq) + ": " + bad;
                          return {};
                        }),
              "")
        << (forwarding ? "the default (one exchange per round)" : "UCX");
    EXPECT_EQ(close_group(group), "");
  }
}

// An error of `done` ends that rank's exchange with it, and the others hear
// of it at once (the failure notice), not at their deadlines.
TEST(TransportInproc, AnErrorOfDoneReachesThePeers) {
  Group group;
  ASSERT_EQ(make_group(3, group), "");
  const auto start = Clock::now();
  EXPECT_EQ(run_ranks(3,
                      [&](std::size_t rank) -> std::string {
                        const std::vector<std::size_t> sizes(6, 50000);
                        Step step = ring_step(rank, 3, /*comm=*/4, /*seq=*/9, /*salt=*/5, sizes);
                        std::vector<std::size_t> begin = {0, 1, 2, 3, 4, 5, 6};
                        const RoundDone done = [&](std::size_t k) -> Status {
                          if (rank == 1 && k == 2)
                            return Status(ErrorCode::kInternal, "combine failed");
                          return Status::ok();
                        };
                        const Status s = group[rank].exchange_rounds(Rounds{step.sends, step.recvs,
                                                                            begin, begin, 2},
                                                                     done, after(20s));
                        if (s) return "succeeded";
                        if (rank == 1 && (s.code() != ErrorCode::kInternal ||
                                          !contains(s.message(), "combine failed")))
                          return "rank 1: " + describe(s);
                        if (rank != 1 && !contains(s.message(), "rank 1 reports: combine failed"))
                          return describe(s);
                        return {};
                      }),
            "");
  EXPECT_LT(since(start), 5000ms);
}

// Round lists that do not describe the ops are a misuse: nothing is posted.
TEST(TransportInproc, RoundListsAreChecked) {
  auto made = make_ucx_transport();
  ASSERT_TRUE(made) << describe(made.status());
  Transport& t = **made;
  ASSERT_TRUE(t.connect({t.address()}, after(1s)));
  std::byte byte{1}, got{0};
  const SendOp send{0, &byte, 1, 42};
  const RecvOp recv{0, &got, 1, 42};
  const std::vector<std::size_t> one = {0, 1}, none = {0}, empty = {}, down = {0, 1, 0, 1};
  const auto code = [&](std::span<const std::size_t> sb, std::span<const std::size_t> rb,
                        std::size_t depth) {
    return t.exchange_rounds(Rounds{{&send, 1}, {&recv, 1}, sb, rb, depth}, nullptr, after(1s))
        .code();
  };
  EXPECT_EQ(code(none, one, 1), ErrorCode::kInvalidArgument);  // ends short of the sends
  EXPECT_EQ(code(empty, empty, 1), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(down, down, 1), ErrorCode::kInvalidArgument);  // decreases
  EXPECT_EQ(code(one, one, 0), ErrorCode::kInvalidArgument);    // no round in flight
  const std::vector<std::size_t> two = {0, 1, 1};
  EXPECT_EQ(code(two, one, 1), ErrorCode::kInvalidArgument);  // 2 rounds against 1
  EXPECT_EQ(got, std::byte{0});
  EXPECT_TRUE(t.exchange_rounds(Rounds{{&send, 1}, {&recv, 1}, one, one, 1}, nullptr, after(5s)));
  EXPECT_EQ(got, byte);
  EXPECT_TRUE(t.close(after(2s)));
}

TEST(TransportInproc, TwoGroupsSideBySide) {
  Group a;
  Group b;
  ASSERT_EQ(make_group(3, a), "");
  ASSERT_EQ(make_group(3, b), "");
  EXPECT_EQ(run_ranks(6, [&](std::size_t thread) {
              Group& g = thread < 3 ? a : b;
              const std::size_t rank = thread % 3;
              const std::uint64_t salt = thread < 3 ? 100 : 200;  // different data, same tags
              return ring_rounds(g[rank], rank, 3, 1, 0, 30, salt, 20000ms);
            }),
            "");
  EXPECT_EQ(close_group(a), "");
  EXPECT_EQ(close_group(b), "");
}

// A peer whose transport goes away (its endpoints force-closed, as when its
// process dies) is a typed error for a rank waiting on it, not a hang.
TEST(TransportInproc, VanishedPeerIsAnErrorNotAHang) {
  Group group;
  ASSERT_EQ(make_group(2, group), "");
  // Wire the endpoints up first.
  ASSERT_EQ(run_ranks(2, [&](std::size_t rank) {
              return ring_rounds(group[rank], rank, 2, 8, 0, 2, 3, 20000ms);
            }),
            "");
  std::thread vanish([&] {
    std::this_thread::sleep_for(100ms);
    group.members[1].reset();  // no close(): force-closes and destroys the worker
  });
  Bytes buffer(16);
  const RecvOp recv{1, buffer.data(), buffer.size(), make_tag({.comm = 8, .seq = 50, .src = 1})};
  const auto start = Clock::now();
  const Status s = group[0].exchange({}, {&recv, 1}, after(3s));
  const Ms took = since(start);
  vanish.join();
  std::printf("vanished peer after %lld ms: %s\n", static_cast<long long>(took.count()),
              describe(s).c_str());
  EXPECT_TRUE(s.code() == ErrorCode::kPeerFailure || s.code() == ErrorCode::kTimeout)
      << describe(s);
  EXPECT_TRUE(contains(s.message(), "rank 1")) << describe(s);
  const auto close_start = Clock::now();
  (void)group[0].close(after(500ms));
  EXPECT_LT(since(close_start), 1500ms);
}

// A peer that aborts tells the others, then its endpoints close: a rank that
// waits on it afterwards gets the abort (Aborted, the peer's reason), not the
// closed endpoint's PeerFailure, whichever of the two its progress meets first.
TEST(TransportInproc, AbortNoticeOutranksTheClosedEndpoint) {
  for (int round = 0; round < 3; ++round) {
    Group group;
    ASSERT_EQ(make_group(2, group), "");
    ASSERT_EQ(run_ranks(2,
                        [&](std::size_t rank) {
                          return ring_rounds(group[rank], rank, 2, 10, 0, 2, 3, 20000ms);
                        }),
              "");
    group[1].abort_notify(7, Status(ErrorCode::kAborted, "the test aborts rank 1"));
    group.members[1].reset();  // its endpoints close (no close(): force-closed)
    std::this_thread::sleep_for(std::chrono::milliseconds(50 * round));
    Bytes buffer(16);
    const RecvOp recv{1, buffer.data(), buffer.size(), make_tag({.comm = 10, .seq = 8, .src = 1})};
    const Status s = group[0].exchange({}, {&recv, 1}, after(3s));
    EXPECT_EQ(s.code(), ErrorCode::kAborted) << "round " << round << ": " << describe(s);
    EXPECT_TRUE(contains(s.message(), "the test aborts rank 1")) << describe(s);
    const Status again = group[0].exchange({}, {&recv, 1}, after(1s));
    EXPECT_EQ(again.code(), ErrorCode::kAborted) << describe(again);
  }
}

// close() and the destructor are bounded even when the peer never closes.
TEST(TransportInproc, CloseIsBoundedWithoutThePeer) {
  Group group;
  ASSERT_EQ(make_group(2, group), "");
  ASSERT_EQ(run_ranks(2, [&](std::size_t rank) {
              return ring_rounds(group[rank], rank, 2, 9, 0, 2, 3, 20000ms);
            }),
            "");
  const auto start = Clock::now();
  const Status s = group[0].close(after(300ms));
  std::printf("close without the peer: %lld ms: %s\n",
              static_cast<long long>(since(start).count()), describe(s).c_str());
  EXPECT_TRUE(s.is_ok() || s.code() == ErrorCode::kTimeout) << describe(s);
  EXPECT_LT(since(start), 1500ms);
  const auto destroy_start = Clock::now();
  group.members.clear();
  EXPECT_LT(since(destroy_start), 1500ms);
}

}  // namespace
}  // namespace ruccl::transport::test
