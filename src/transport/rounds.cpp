// Transport::exchange_rounds's default (one exchange per round) and the
// checks of a Rounds (transport.hpp). No UCX.
#include <string>

#include "transport/transport.hpp"

namespace ruccl::transport {

Status check_rounds(const Rounds& rounds) {
  const auto check = [](std::span<const std::size_t> begin, std::size_t ops, const char* what) {
    const auto bad = [&](const std::string& why) {
      return Status(ErrorCode::kInvalidArgument,
                    std::string("exchange_rounds: the ") + what + " list " + why);
    };
    if (begin.empty() || begin.front() != 0 || begin.back() != ops)
      return bad("must run from 0 to " + std::to_string(ops) + " (" + std::to_string(begin.size()) +
                 " entries)");
    for (std::size_t r = 1; r < begin.size(); ++r)
      if (begin[r] < begin[r - 1]) return bad("decreases at round " + std::to_string(r));
    return Status::ok();
  };
  RUCCL_TRY(check(rounds.send_begin, rounds.sends.size(), "send"));
  RUCCL_TRY(check(rounds.recv_begin, rounds.recvs.size(), "receive"));
  if (rounds.send_begin.size() != rounds.recv_begin.size())
    return Status(ErrorCode::kInvalidArgument,
                  "exchange_rounds: " + std::to_string(rounds.send_begin.size() - 1) +
                      " rounds of sends, " + std::to_string(rounds.recv_begin.size() - 1) +
                      " of receives");
  if (rounds.depth == 0)
    return Status(ErrorCode::kInvalidArgument, "exchange_rounds: a depth of 0 rounds in flight");
  return Status::ok();
}

Status Transport::exchange_rounds(const Rounds& rounds, const RoundDone& done,
                                  Clock::time_point deadline) {
  RUCCL_TRY(check_rounds(rounds));
  for (std::size_t r = 0; r < rounds.rounds(); ++r) {
    const std::size_t s = rounds.send_begin[r], v = rounds.recv_begin[r];
    RUCCL_TRY(exchange(rounds.sends.subspan(s, rounds.send_begin[r + 1] - s),
                       rounds.recvs.subspan(v, rounds.recv_begin[r + 1] - v), deadline));
    if (done) RUCCL_TRY(done(r));
  }
  return Status::ok();
}

}  // namespace ruccl::transport
