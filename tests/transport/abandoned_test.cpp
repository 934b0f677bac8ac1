// After an exchange returned Timeout, UCX must not touch the caller's buffers
// (transport.hpp, Ownership). Two transports in one process over shared
// memory (unwatched endpoints, which cannot be force-closed), UCX's
// rendezvous off (UCX_RNDV_THRESH=inf, set by ctest): a large send becomes
// eager fragments that the sender's progress copies out of the caller's
// buffer as the receiver makes room. The receiver stalls, so the sender's
// exchange times out with the send unfinished and abandoned. The caller then
// poisons its buffer and closes the transport while the late receiver
// finally receives: no poisoned byte may reach the receiver (before the seal,
// close() progressed the worker and the abandoned send went on reading the
// poisoned buffer).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "transport/transport.hpp"
#include "transport_test_util.hpp"

namespace ruccl::transport::test {
namespace {

using namespace std::chrono_literals;

constexpr std::byte kPoison{0xEE};

TEST(TransportAbandoned, TimedOutSendNeverReadsTheBufferAgain) {
  const char* rndv = std::getenv("UCX_RNDV_THRESH");
  if (rndv == nullptr || std::string(rndv) != "inf") GTEST_SKIP() << "needs UCX_RNDV_THRESH=inf";
  std::vector<std::unique_ptr<Transport>> t;
  std::vector<std::vector<std::byte>> addresses;
  for (int i = 0; i < 2; ++i) {
    auto made = make_ucx_transport({.abort = nullptr, .unwatched_peers = {true, true}});
    ASSERT_TRUE(made) << describe(made.status());
    addresses.push_back((*made)->address());
    t.push_back(std::move(made).value());
  }
  for (auto& x : t) ASSERT_TRUE(x->connect(addresses, after(5000ms)));

  constexpr std::size_t kBytes = std::size_t{16} << 20;  // far more than the shm FIFOs hold
  std::vector<std::byte> payload(kBytes, std::byte{0x11});
  const std::uint64_t tag = make_tag({3, 7, 0, 0, 0});
  const SendOp send{1, payload.data(), payload.size(), tag, 7};
  const Status sent = t[0]->exchange(std::span(&send, 1), {}, after(300ms));
  ASSERT_EQ(sent.code(), ErrorCode::kTimeout) << describe(sent);
  std::printf("sender: %s\n", sent.message().c_str());
  // The call returned: the buffer is the caller's again.
  std::fill(payload.begin(), payload.end(), kPoison);

  // The late receiver, while the sender's transport closes (and, before the
  // seal, progressed its worker).
  std::vector<std::byte> got(kBytes, std::byte{0});
  Status received;
  std::thread late([&] {
    const RecvOp recv{0, got.data(), got.size(), tag, 7};
    received = t[1]->exchange({}, std::span(&recv, 1), after(1500ms));
  });
  const Status closed = t[0]->close(after(1500ms));
  late.join();
  std::printf("close: %s; receiver: %s\n", closed ? "ok" : closed.message().c_str(),
              received ? "ok" : received.message().substr(0, 200).c_str());
  const auto poisoned = std::count(got.begin(), got.end(), kPoison);
  EXPECT_EQ(poisoned, 0) << "bytes of the poisoned buffer reached the receiver after the "
                            "sender's exchange had returned";
  EXPECT_FALSE(received.is_ok()) << "the receiver got a whole message the sender abandoned";
}

}  // namespace
}  // namespace ruccl::transport::test
