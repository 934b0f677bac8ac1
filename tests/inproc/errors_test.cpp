// Disagreements between ranks, bad arguments and device faults: every rank
// gets the same typed error naming the rank that differs and the collective's
// sequence number, and the group still works for the next collective.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace ruccl::test {
namespace {

constexpr std::size_t kWorld = 3;

// Runs fn on every rank, returns the statuses in rank order.
std::vector<Status> on_every_rank(std::size_t world, Failures& f,
                                  const std::function<Status(std::size_t)>& fn) {
  std::vector<Status> out(world);
  run_ranks(world, f, [&](std::size_t rank) { out[rank] = fn(rank); });
  return out;
}

// Every rank failed with `code` and every message contains every needle.
void expect_everywhere(const std::vector<Status>& got, ErrorCode code,
                       const std::vector<std::string>& needles) {
  for (std::size_t r = 0; r < got.size(); ++r) {
    EXPECT_EQ(got[r].code(), code) << "rank " << r << ": " << describe(got[r]);
    for (const auto& n : needles) {
      EXPECT_TRUE(contains(got[r].message(), n))
          << "rank " << r << ": message lacks '" << n << "': " << describe(got[r]);
    }
  }
}

// An all_reduce that must succeed with exact values.
void expect_group_works(Communicator& comm) {
  Failures f;
  const std::size_t world = comm.world_size();
  run_ranks(world, f, [&](std::size_t rank) {
    Bytes in = reduce_input_buffer(DataType::kF32, ReduceOp::kSum, rank, 9, 7);
    auto r = comm.all_reduce(rank, view1(in, DataType::kF32, rank), ReduceOp::kSum);
    if (!r.is_ok()) return f.add(rank, "follow-up all_reduce: " + describe(r.status()));
    check_tensor(f, rank, "follow-up all_reduce", *r, DataType::kF32, {9},
                 expected_reduction(DataType::kF32, ReduceOp::kSum, world, 9, 7));
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

struct Mismatch {
  const char* name;
  ErrorCode code;
  std::vector<std::string> needles;
  std::function<Status(Communicator&, std::size_t rank)> call;
};

Status all_reduce_of(Communicator& c, std::size_t rank, DataType dt, Shape shape, ReduceOp op) {
  Bytes in(shape_count(shape).value() * dtype_size(dt));
  return c.all_reduce(rank, view(in, dt, shape, rank), op).status();
}

std::vector<Mismatch> mismatches() {
  std::vector<Mismatch> m;
  m.push_back({"dtype", ErrorCode::kDtypeMismatch, {"rank 1", "f64", "f32", "#0"},
               [](Communicator& c, std::size_t r) {
                 return all_reduce_of(c, r, r == 1 ? DataType::kF64 : DataType::kF32, {4}, ReduceOp::kSum);
               }});
  m.push_back({"count", ErrorCode::kShapeMismatch, {"rank 1", "#0"}, [](Communicator& c, std::size_t r) {
                 return all_reduce_of(c, r, DataType::kF32, {r == 1 ? 5u : 4u}, ReduceOp::kSum);
               }});
  m.push_back({"shape", ErrorCode::kShapeMismatch, {"rank 1", "#0"}, [](Communicator& c, std::size_t r) {
                 Bytes in(6 * 4);
                 const Shape s = r == 1 ? Shape{2, 3} : Shape{3, 2};
                 return c.all_gather(r, view(in, DataType::kF32, s, r)).status();
               }});
  m.push_back({"op", ErrorCode::kOpMismatch, {"rank 1", "max", "sum", "#0"}, [](Communicator& c, std::size_t r) {
                 return all_reduce_of(c, r, DataType::kI32, {4}, r == 1 ? ReduceOp::kMax : ReduceOp::kSum);
               }});
  m.push_back({"root", ErrorCode::kRootMismatch, {"rank 1", "#0"}, [](Communicator& c, std::size_t r) {
                 Bytes in(16);
                 return c.reduce(r, view1(in, DataType::kF32, r), ReduceOp::kSum, r == 1 ? 2 : 0).status();
               }});
  m.push_back({"no broadcast sender", ErrorCode::kBroadcastSenderCount, {"#0"},
               [](Communicator& c, std::size_t r) { return c.broadcast(r, nullptr).status(); }});
  m.push_back({"two broadcast senders", ErrorCode::kBroadcastSenderCount, {"#0", "2"},
               [](Communicator& c, std::size_t r) {
                 Bytes in(16);
                 const TensorView v = view1(in, DataType::kF32, r);
                 return c.broadcast(r, r == 1 ? nullptr : &v).status();
               }});
  m.push_back({"collective", ErrorCode::kCollectiveMismatch, {"rank 1", "all_gather", "all_reduce", "#0"},
               [](Communicator& c, std::size_t r) {
                 Bytes in(16);
                 const TensorView v = view1(in, DataType::kF32, r);
                 return r == 1 ? c.all_gather(r, v).status() : c.all_reduce(r, v, ReduceOp::kSum).status();
               }});
  m.push_back({"null data", ErrorCode::kInvalidArgument, {"rank 1", "#0"}, [](Communicator& c, std::size_t r) {
                 Bytes in(16);
                 TensorView v = view1(in, DataType::kF32, r);
                 if (r == 1) v.data = nullptr;
                 return c.all_reduce(r, v, ReduceOp::kSum).status();
               }});
  m.push_back({"root out of range", ErrorCode::kInvalidArgument, {"#0"}, [](Communicator& c, std::size_t r) {
                 Bytes in(16);
                 return c.reduce(r, view1(in, DataType::kF32, r), ReduceOp::kSum, kWorld).status();
               }});
  m.push_back({"unknown op", ErrorCode::kInvalidArgument, {"rank 2", "#0"}, [](Communicator& c, std::size_t r) {
                 return all_reduce_of(c, r, DataType::kF32, {4}, r == 2 ? static_cast<ReduceOp>(99) : ReduceOp::kSum);
               }});
  m.push_back({"unknown dtype", ErrorCode::kInvalidArgument, {"rank 2", "#0"}, [](Communicator& c, std::size_t r) {
                 return all_reduce_of(c, r, r == 2 ? static_cast<DataType>(99) : DataType::kF32, {4}, ReduceOp::kSum);
               }});
  m.push_back({"overflowing shape", ErrorCode::kInvalidArgument, {"rank 0", "#0"}, [](Communicator& c, std::size_t r) {
                 Bytes in(16);
                 TensorView v = view1(in, DataType::kF32, r);
                 if (r == 0) v.shape = {std::size_t{1} << 40, std::size_t{1} << 40};
                 return c.all_reduce(r, v, ReduceOp::kSum).status();
               }});
  m.push_back({"broadcast output size", ErrorCode::kShapeMismatch, {"rank 1", "#0"}, [](Communicator& c, std::size_t r) {
                 Bytes in(16), out(r == 1 ? 12 : 16);
                 const TensorView v = view1(in, DataType::kF32, r);
                 return c.broadcast_into(r, r == 0 ? &v : nullptr, view1(out, DataType::kF32, r));
               }});
  m.push_back({"all_to_all_v row width", ErrorCode::kShapeMismatch, {"rank 1", "#0"}, [](Communicator& c, std::size_t r) {
                 const std::size_t width = r == 1 ? 2 : 3;
                 Bytes in(kWorld * width * 4);
                 std::vector<std::size_t> ones(kWorld, 1);
                 return c.all_to_all_v(r, view(in, DataType::kF32, {kWorld, width}, r), ones).status();
               }});
  m.push_back({"all_to_all_v output too small", ErrorCode::kShapeMismatch, {"rank 2", "#0"}, [](Communicator& c, std::size_t r) {
                 Bytes in(kWorld * 4), out(r == 2 ? 8 : kWorld * 4);
                 std::vector<std::size_t> ones(kWorld, 1), recv;
                 return c.all_to_all_v_into(r, view1(in, DataType::kF32, r), ones, view1(out, DataType::kF32, r), recv);
               }});
  m.push_back({"budget disagreement", ErrorCode::kInvalidArgument, {"rank 1", "#0"}, [](Communicator& c, std::size_t r) {
                 Bytes in(16);
                 return c.all_reduce(r, view1(in, DataType::kF32, r), ReduceOp::kSum,
                                     CallOptions{r == 1 ? 64 : 128}).status();
               }});
  return m;
}

TEST(Mismatch, EveryRankSeesTheSameTypedErrorAndTheGroupRecovers) {
  for (const Mismatch& m : mismatches()) {
    SCOPED_TRACE(m.name);
    auto comm = make_comm(kWorld);
    Failures f;
    auto got = on_every_rank(kWorld, f, [&](std::size_t r) { return m.call(*comm, r); });
    EXPECT_TRUE(f.empty()) << f.report();
    expect_everywhere(got, m.code, m.needles);
    expect_group_works(*comm);
  }
}

// A mismatch later in a sequence names that collective's sequence number.
TEST(Mismatch, NamesTheSequenceNumber) {
  auto comm = make_comm(kWorld);
  expect_group_works(*comm);  // #0
  expect_group_works(*comm);  // #1
  Failures f;
  auto got = on_every_rank(kWorld, f, [&](std::size_t r) {
    return all_reduce_of(*comm, r, DataType::kF32, {4}, r == 2 ? ReduceOp::kMin : ReduceOp::kSum);
  });
  expect_everywhere(got, ErrorCode::kOpMismatch, {"#2", "rank 2"});
  for (std::size_t r = 0; r < kWorld; ++r) EXPECT_EQ(comm->next_sequence(r), 3u);
}

TEST(BadArguments, OutputOfTheWrongSizeOnOneRank) {
  auto comm = make_comm(kWorld);
  Failures f;
  auto got = on_every_rank(kWorld, f, [&](std::size_t r) {
    Bytes in(16), out(r == 2 ? 12 : 16);
    return comm->all_reduce_into(r, view1(in, DataType::kF32, r), view1(out, DataType::kF32, r),
                                 ReduceOp::kSum);
  });
  for (std::size_t r = 0; r < kWorld; ++r) {
    EXPECT_TRUE(got[r].code() == ErrorCode::kShapeMismatch || got[r].code() == ErrorCode::kInvalidArgument)
        << "rank " << r << ": " << describe(got[r]);
    EXPECT_EQ(got[r].code(), got[0].code()) << "rank " << r;
    EXPECT_TRUE(contains(got[r].message(), "rank 2")) << describe(got[r]);
  }
  expect_group_works(*comm);
}

TEST(BadArguments, ViewOnAnotherDevice) {
  auto comm = make_comm(kWorld);
  Failures f;
  auto got = on_every_rank(kWorld, f, [&](std::size_t r) {
    Bytes in(16);
    TensorView v = view1(in, DataType::kF32, r);
    if (r == 1) v.device = host_device(7);
    return comm->all_reduce(r, v, ReduceOp::kSum).status();
  });
  for (std::size_t r = 0; r < kWorld; ++r) {
    EXPECT_TRUE(got[r].code() == ErrorCode::kInvalidArgument || got[r].code() == ErrorCode::kDeviceError)
        << "rank " << r << ": " << describe(got[r]);
    EXPECT_TRUE(contains(got[r].message(), "rank 1")) << describe(got[r]);
  }
  expect_group_works(*comm);
}

TEST(BadArguments, RankOutOfRangeFailsAtOnceAndLeavesTheGroupAlone) {
  auto comm = make_comm(kWorld);
  Bytes in(16);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = comm->all_reduce(kWorld, view1(in, DataType::kF32, 0), ReduceOp::kSum);
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << describe(r.status());
  Status s = comm->broadcast_into(99, nullptr, view1(in, DataType::kF32, 0));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << describe(s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  expect_group_works(*comm);
}

TEST(Create, RejectsBadGroups) {
  auto dup = Communicator::create({host_device(0), host_device(1), host_device(0)},
                                  make_host_adapter(), test_config(3));
  ASSERT_FALSE(dup.is_ok());
  EXPECT_TRUE(dup.status().code() == ErrorCode::kInvalidArgument ||
              dup.status().code() == ErrorCode::kDuplicateRegistration)
      << describe(dup.status());
  EXPECT_TRUE(contains(dup.status().message(), "host:0")) << describe(dup.status());

  auto empty = Communicator::create({}, make_host_adapter(), test_config(1));
  ASSERT_FALSE(empty.is_ok());
  EXPECT_EQ(empty.status().code(), ErrorCode::kInvalidArgument) << describe(empty.status());

  auto no_adapter = Communicator::create(host_devices(2), nullptr, test_config(2));
  ASSERT_FALSE(no_adapter.is_ok());
  EXPECT_EQ(no_adapter.status().code(), ErrorCode::kInvalidArgument) << describe(no_adapter.status());

  auto bad_config = Communicator::create(host_devices(2), make_host_adapter(),
                                         test_config(2).with_max_chunk_bytes(0));
  ASSERT_FALSE(bad_config.is_ok());
  EXPECT_TRUE(bad_config.status().code() == ErrorCode::kInvalidArgument ||
              bad_config.status().code() == ErrorCode::kBudgetTooSmall)
      << describe(bad_config.status());
  auto bad_timeout = Communicator::create(host_devices(2), make_host_adapter(),
                                          test_config(2, std::chrono::milliseconds(0)));
  ASSERT_FALSE(bad_timeout.is_ok());
  EXPECT_EQ(bad_timeout.status().code(), ErrorCode::kInvalidArgument) << describe(bad_timeout.status());

  auto wrong_kind = Communicator::create({cuda_device(0), cuda_device(1)}, make_host_adapter(),
                                         test_config(2));
  EXPECT_FALSE(wrong_kind.is_ok()) << "cuda devices served by the host adapter";
}

TEST(Create, Accessors) {
  auto comm = make_comm(3);
  EXPECT_EQ(comm->world_size(), 3u);
  EXPECT_EQ(comm->devices(), host_devices(3));
  EXPECT_EQ(comm->config().timeout(), test_config(3).timeout());
  EXPECT_FALSE(comm->aborted());
  for (std::size_t r = 0; r < 3; ++r) EXPECT_EQ(comm->next_sequence(r), 0u);
  auto host = make_adapter(DeviceKind::kHost);
  ASSERT_TRUE(host.is_ok()) << describe(host.status());
  EXPECT_EQ((*host)->kind(), DeviceKind::kHost);
  auto cuda = make_adapter(DeviceKind::kCuda);
  if (!cuda.is_ok()) {
    EXPECT_EQ(cuda.status().code(), ErrorCode::kUnsupported) << describe(cuda.status());
  }
}

// ---- device faults -------------------------------------------------------------
enum class Verb { kPrepare, kCopy, kReduce, kFinish };
const char* verb_name(Verb v) {
  switch (v) {
    case Verb::kPrepare: return "prepare";
    case Verb::kCopy: return "copy";
    case Verb::kReduce: return "reduce";
    case Verb::kFinish: return "finish";
  }
  return "?";
}

// Wraps the host adapter; on `fail_rank`, the `fail_at`-th call of `verb`
// returns kDeviceError or throws.
class FaultyAdapter : public HostForwardingAdapter {
 public:
  FaultyAdapter(Verb verb, std::size_t fail_rank, std::size_t fail_at, bool throws)
      : verb_(verb), fail_rank_(fail_rank), fail_at_(fail_at), throws_(throws) {}
  Result<std::shared_ptr<AdapterState>> prepare(const TensorView& view, DeviceId device) override {
    // prepare has no rank argument: the device index is the rank here.
    RUCCL_TRY(maybe_fail(Verb::kPrepare, device.index));
    return HostForwardingAdapter::prepare(view, device);
  }
  // The other verbs have no rank argument either: the queue's device index is the rank.
  Result<Ticket> copy(const Queue& q, void* dst, const void* src, std::size_t bytes) override {
    RUCCL_TRY(maybe_fail(Verb::kCopy, q.device.index));
    return HostForwardingAdapter::copy(q, dst, src, bytes);
  }
  Result<Ticket> reduce(const Queue& q, void* dst, const void* a, const void* b, std::size_t n,
                        DataType dt, ReduceOp op) override {
    RUCCL_TRY(maybe_fail(Verb::kReduce, q.device.index));
    return HostForwardingAdapter::reduce(q, dst, a, b, n, dt, op);
  }
  Status finish(const Queue& q) override {
    RUCCL_TRY(maybe_fail(Verb::kFinish, q.device.index));
    return HostForwardingAdapter::finish(q);
  }
  bool fired() const { return fired_.load(); }

 private:
  Status maybe_fail(Verb verb, std::size_t rank) {
    if (verb != verb_ || rank != fail_rank_) return Status::ok();
    if (calls_.fetch_add(1) != fail_at_) return Status::ok();
    fired_ = true;
    if (throws_) throw std::runtime_error("injected fault");
    return Status(ErrorCode::kDeviceError, "injected fault");
  }
  Verb verb_;
  std::size_t fail_rank_, fail_at_;
  bool throws_;
  std::atomic<std::size_t> calls_{0};
  std::atomic<bool> fired_{false};
};

TEST(DeviceFault, EveryRankGetsDeviceErrorNamingTheFailingRank) {
  constexpr std::size_t kRanks = 4;
  for (Verb verb : {Verb::kPrepare, Verb::kCopy, Verb::kReduce, Verb::kFinish}) {
    for (bool throws : {false, true}) {
      for (std::size_t fail_at : {0u, 2u}) {
        SCOPED_TRACE(std::string(verb_name(verb)) + (throws ? " throws" : " fails") + " at call " +
                     std::to_string(fail_at));
        auto adapter = std::make_shared<FaultyAdapter>(verb, 1, fail_at, throws);
        auto created = Communicator::create(host_devices(kRanks), adapter, test_config(kRanks));
        ASSERT_TRUE(created.is_ok()) << describe(created.status());
        auto comm = created.value();
        Failures f;
        std::vector<Status> got(kRanks);
        const auto t0 = std::chrono::steady_clock::now();
        run_ranks(kRanks, f, [&](std::size_t rank) {
          // all_reduce, all_gather, reduce_scatter, ... (every verb runs in some
          // of them); stop at the first error (the faulty call).
          for (int i = 0; i < 9; ++i) {
            Bytes in = reduce_input_buffer(DataType::kI32, ReduceOp::kSum, rank, 100, i);
            const TensorView v = view1(in, DataType::kI32, rank);
            switch (i % 3) {
              case 0: got[rank] = comm->all_reduce(rank, v, ReduceOp::kSum).status(); break;
              case 1: got[rank] = comm->all_gather(rank, v).status(); break;
              default: got[rank] = comm->reduce_scatter(rank, v, ReduceOp::kSum).status(); break;
            }
            if (!got[rank].is_ok()) break;
          }
        });
        EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
        EXPECT_TRUE(f.empty()) << f.report();
        ASSERT_TRUE(adapter->fired()) << "the fault was never reached";
        expect_everywhere(got, ErrorCode::kDeviceError, {"rank 1"});
      }
    }
  }
}

}  // namespace
}  // namespace ruccl::test
