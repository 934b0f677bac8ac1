// The channels of the node segment (node/mailbox.hpp) in one process, two
// node ranks: pieces in the slots and as addresses, flow control, the checks
// of what a peer wrote, the withdrawal of addresses after a failure, and the
// waits' deadline and abort. The collectives over them run in tests/mpi
// (ruccl_mpi_world_matrix_*: every collective over world::NodeRun).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <thread>
#include <tuple>
#include <vector>

#include "node/mailbox.hpp"
#include "node/segment.hpp"

namespace ruccl::node {
namespace {

using namespace std::chrono_literals;

struct OneProcessNode {
  std::atomic<bool> abort{false};
  MailboxShape shape;
  std::optional<Mailbox> box;
  explicit OneProcessNode(std::size_t slots = 2, std::size_t piece = 4096) {
    shape.ranks = 2;
    shape.processes = 1;
    shape.per_process = 2;
    shape.slot_bytes = 256;
    shape.lean_bytes = 256;
    shape.channel_slots = slots;
    shape.channel_piece = piece;
    const Tag tag{1, 2, 3};
    auto seg = Segment::create(segment_bytes(shape), "ruccl-test");
    EXPECT_TRUE(seg.is_ok()) << seg.status().to_string();
    Mailbox::lay_out(seg.value(), shape, tag);
    auto b = Mailbox::attach(std::move(seg).value(), shape, tag, 0, &abort);
    EXPECT_TRUE(b.is_ok()) << b.status().to_string();
    box.emplace(std::move(b).value());
    EXPECT_TRUE(box->watch_processes().is_ok());
  }
};

TEST(NodeChannels, PiecesFlowInOrderWithinTheSlots) {
  OneProcessNode node;
  Mailbox& box = *node.box;
  constexpr std::size_t kPieces = 50;
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < kPieces; ++i) {
      const std::size_t watch[1] = {1};
      ASSERT_TRUE(box.await(
                         0, watch, Clock::now() + 10s, [&] { return box.writable(0, 1, i); },
                         [] { return std::string("a free slot"); })
                      .is_ok());
      EXPECT_EQ(box.written(0, 1), i);
      std::span<std::byte> slot = box.piece_slot(0, 1, i);
      const std::size_t bytes = 8 + i * 13 % 4000;
      std::memset(slot.data(), static_cast<int>(i), bytes);
      box.publish_piece(0, 1, i, bytes);
    }
  });
  for (std::uint64_t i = 0; i < kPieces; ++i) {
    const std::size_t bytes = 8 + i * 13 % 4000;
    Result<Mailbox::Piece> p = Mailbox::Piece{};
    const std::size_t watch[1] = {0};
    ASSERT_TRUE(
        box.await(
               1, watch, Clock::now() + 10s,
               [&] { return !(p = box.readable(0, 1, i, bytes)).is_ok() || p.value().ready; },
               [] { return std::string("a piece"); })
            .is_ok());
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    ASSERT_EQ(p.value().bytes.size(), bytes);
    EXPECT_EQ(p.value().address, 0u);
    for (std::byte b : p.value().bytes) ASSERT_EQ(b, static_cast<std::byte>(i));
    box.release_piece(0, 1, i);
    EXPECT_EQ(box.consumed(0, 1), i + 1);
  }
  producer.join();
}

// A waiter on the lean lane fetches the lines of the message it expects
// while it polls (Mailbox::wait's `expect`): whatever it expected (the
// message's bytes, none, fewer, more than the slot holds), it gets each
// message whole and as written, also when it came first and polled while
// the writer wrote.
TEST(NodeMailbox, AWaiterFetchingAheadGetsEveryMessageWhole) {
  OneProcessNode node;
  Mailbox& box = *node.box;
  constexpr std::uint64_t kMessages = 400;
  const auto bytes_of = [](std::uint64_t seq) { return static_cast<std::size_t>(seq * 7 % 257); };
  std::thread writer([&] {
    for (std::uint64_t seq = 0; seq < kMessages; ++seq) {
      // (Slot seq's parity is seq - 2's: written once the reader is done with it.)
      if (seq > 0) {
        ASSERT_TRUE(box.wait(0, 1, seq - 1, Clock::now() + 10s, Lane::kLean).is_ok());
      }
      std::span<std::byte> slot = box.slot(0, seq, Lane::kLean);
      ASSERT_GE(slot.size(), bytes_of(seq));
      for (std::size_t i = 0; i < bytes_of(seq); ++i)
        slot[i] = static_cast<std::byte>((seq + i) & 0xff);
      box.publish(0, seq, bytes_of(seq), Lane::kLean);
    }
  });
  for (std::uint64_t seq = 0; seq < kMessages; ++seq) {
    const std::size_t expects[4] = {bytes_of(seq), 0, 100, 4096};
    auto m = box.wait(1, 0, seq, Clock::now() + 10s, Lane::kLean, expects[seq % 4]);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    ASSERT_EQ(m.value().lane, Lane::kLean);
    ASSERT_EQ(m.value().bytes.size(), bytes_of(seq));
    for (std::size_t i = 0; i < bytes_of(seq); ++i)
      ASSERT_EQ(m.value().bytes[i], static_cast<std::byte>((seq + i) & 0xff)) << seq << " " << i;
    box.prefetch_lean(0, seq + 1, expects[seq % 4]);  // (a hint: changes nothing)
    box.publish(1, seq, 0, Lane::kLean);
  }
  writer.join();
}

TEST(NodeChannels, AProducerMayRunAheadOnlyByTheSlots) {
  OneProcessNode node(3);
  Mailbox& box = *node.box;
  for (std::uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(box.writable(0, 1, i));
    box.publish_piece(0, 1, i, 16);
  }
  EXPECT_FALSE(box.writable(0, 1, 3));
  EXPECT_TRUE(box.writable(1, 0, 0));  // the other direction is another channel
  box.release_piece(0, 1, 0);
  EXPECT_TRUE(box.writable(0, 1, 3));
  EXPECT_FALSE(box.writable(0, 1, 4));
}

TEST(NodeChannels, APieceUnlikeTheExpectedOneIsAProtocolError) {
  OneProcessNode node;
  Mailbox& box = *node.box;
  EXPECT_FALSE(box.readable(0, 1, 0, 64).value().ready);  // nothing yet
  box.publish_piece(0, 1, 0, 64);
  auto wrong_size = box.readable(0, 1, 0, 32);
  ASSERT_FALSE(wrong_size.is_ok());
  EXPECT_EQ(wrong_size.status().code(), ErrorCode::kProtocolError);
  EXPECT_NE(wrong_size.status().message().find("rank 0"), std::string::npos)
      << wrong_size.status().message();
  // The same size under another message's stamp (another step, collective
  // or order of messages).
  box.release_piece(0, 1, 0);
  box.publish_piece(0, 1, 1, 64, 0, 7);
  EXPECT_TRUE(box.readable(0, 1, 1, 64, 7).value().ready);
  auto other_message = box.readable(0, 1, 1, 64, 8);
  ASSERT_FALSE(other_message.is_ok());
  EXPECT_EQ(other_message.status().code(), ErrorCode::kProtocolError);
  EXPECT_NE(other_message.status().message().find("message 7"), std::string::npos)
      << other_message.status().message();
  box.release_piece(0, 1, 1);
  // A piece too large for the slot, whatever both sides say.
  box.publish_piece(0, 1, 2, 8192);
  auto too_large = box.readable(0, 1, 2, 8192);
  ASSERT_FALSE(too_large.is_ok());
  EXPECT_EQ(too_large.status().code(), ErrorCode::kProtocolError);
}

TEST(NodeChannels, AnAddressPieceIsReadFromTheProducersMemory) {
  OneProcessNode node;
  Mailbox& box = *node.box;
  ASSERT_TRUE(box.reads_directly(1));
  std::vector<std::uint32_t> src(10000);
  std::iota(src.begin(), src.end(), 7u);
  const std::size_t bytes = src.size() * sizeof(std::uint32_t);  // larger than a slot: fine
  box.publish_piece(0, 1, 0, bytes, reinterpret_cast<std::uintptr_t>(src.data()));
  auto p = box.readable(0, 1, 0, bytes);
  ASSERT_TRUE(p.is_ok() && p.value().ready);
  ASSERT_EQ(p.value().address, reinterpret_cast<std::uintptr_t>(src.data()));
  std::vector<std::uint32_t> dst(src.size());
  ASSERT_TRUE(box.read_from(0, 1, p.value().address, dst.data(), bytes, Clock::now() + 1s).is_ok());
  EXPECT_EQ(dst, src);
  // An address that maps nothing is an error, not a fault.
  const Status bad = box.read_from(0, 1, 16, dst.data(), bytes, Clock::now() + 1s);
  EXPECT_EQ(bad.code(), ErrorCode::kProtocolError) << bad.to_string();
}

TEST(NodeChannels, WithdrawnAddressesGiveTheFailureNoticeNotTheMemory) {
  OneProcessNode node;
  Mailbox& box = *node.box;
  std::vector<std::byte> src(256, std::byte{5}), dst(256, std::byte{0});
  box.publish_piece(0, 1, 0, src.size(), reinterpret_cast<std::uintptr_t>(src.data()));
  box.withdraw(0, 1, Clock::now() + 1s);
  box.notify(0, 9, Status(ErrorCode::kDeviceError, "injected"));
  const Status s = box.read_from(0, 1, reinterpret_cast<std::uintptr_t>(src.data()), dst.data(),
                                 dst.size(), Clock::now() + 5s);
  EXPECT_EQ(s.code(), ErrorCode::kDeviceError) << s.to_string();
  EXPECT_NE(s.message().find("rank 0 reports"), std::string::npos) << s.message();
  EXPECT_EQ(dst[0], std::byte{0});
}

// A producer that withdraws waits for a read in progress to end; a reader
// stopped in the middle of one (SIGSTOP, a debugger) keeps it waiting only
// until a second past its deadline.
TEST(NodeChannels, WithdrawWaitsForAReadInProgressButNotForever) {
  OneProcessNode node;
  Mailbox& box = *node.box;
  // (A channel stays closed once withdrawn: one per case.)
  for (const auto& [from, to, hold] : {std::tuple{0u, 1u, 150ms}, std::tuple{1u, 0u, 5000ms}}) {
    std::atomic<bool> reading{false}, release{false};
    std::thread reader([&, from = from, to = to, hold = hold] {
      (void)box.read_guarded(from, to, Clock::now() + 10s, [&] {
        reading.store(true);
        const auto until = Clock::now() + hold;
        while (!release.load() && Clock::now() < until) std::this_thread::sleep_for(1ms);
        return Status::ok();
      });
    });
    const auto started = Clock::now();
    while (!reading.load() && Clock::now() < started + 5s) std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(reading.load()) << "the reader never began";
    const auto start = Clock::now();
    box.withdraw(from, to, start);  // (its deadline already here)
    const auto took = Clock::now() - start;
    if (hold == 150ms) {
      EXPECT_GE(took, 100ms);  // the read ended first
      EXPECT_LT(took, 1s);
    } else {
      EXPECT_GE(took, Mailbox::kWithdrawGrace);  // then it gave up
      EXPECT_LT(took, Mailbox::kWithdrawGrace + 1s);
    }
    release.store(true);
    reader.join();
  }
}

TEST(NodeChannels, AWaitEndsAtItsDeadlineAndOnAbort) {
  OneProcessNode node;
  Mailbox& box = *node.box;
  const std::size_t watch[1] = {1};
  const auto start = Clock::now();
  const Status t = box.await(
      0, watch, start + 60ms, [] { return false; }, [] { return std::string("nothing"); });
  EXPECT_EQ(t.code(), ErrorCode::kTimeout);
  EXPECT_GE(Clock::now() - start, 60ms);
  EXPECT_NE(t.message().find("waiting for nothing"), std::string::npos) << t.message();
  std::thread aborter([&] {
    std::this_thread::sleep_for(30ms);
    node.abort.store(true);
  });
  const Status a = box.await(
      0, watch, Clock::now() + 10s, [] { return false; }, [] { return std::string("x"); });
  aborter.join();
  EXPECT_EQ(a.code(), ErrorCode::kAborted);
}

TEST(NodeSegment, ItsSizeIsSealed) {
  auto seg = Segment::create(1 << 16, "ruccl-test");
  ASSERT_TRUE(seg.is_ok()) << seg.status().to_string();
  EXPECT_NE(::ftruncate(seg.value().fd(), 0), 0);  // no process can shrink it under the others
  EXPECT_NE(::ftruncate(seg.value().fd(), 1 << 20), 0);
}

TEST(NodeChannels, ThePieceSizeKeepsAllChannelsWithinTheirBound) {
  EXPECT_EQ(channel_piece_for(2), kChannelPiece);
  for (std::size_t ranks = 2; ranks <= 128; ++ranks) {
    const std::size_t piece = channel_piece_for(ranks);
    EXPECT_EQ(piece % 4096, 0u);
    EXPECT_GE(piece, 4096u);
    if (piece > 4096) {
      EXPECT_LE(ranks * (ranks - 1) * kChannelSlots * piece, kChannelBound) << ranks;
    }
  }
  EXPECT_EQ(channel_piece_for(128), 4096u);
}

}  // namespace
}  // namespace ruccl::node
