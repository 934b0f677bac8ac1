// The executors' side of the device contract without a communicator: resolve()
// (the one bounds check), and a received message combined through the host
// adapter's memory verbs in every mode.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "core/work.hpp"

namespace ruccl {
namespace {

using core::kElsewhere;

struct OneRank {
  std::vector<float> input{1, 2, 3, 4};
  std::vector<float> recv{10, 20, 30, 40};
  Work work;
  OneRank(ReduceOp op) {
    work.dtype = DataType::kF32;
    work.op = op;
    work.world = 1;
    RankBuffers b;
    b.input = input.data();
    b.input_count = input.size();
    b.send = recv.data();
    b.send_count = recv.size();
    b.recv = recv.data();
    b.recv_count = recv.size();
    work.ranks.push_back(b);
  }
};

Status combine(DeviceAdapter& adapter, const Work& work, std::size_t dst_offset, const float* msg,
               std::size_t count, Combine how) {
  return core::completed(adapter, work.ranks[0].queue(),
                         core::combine(adapter, work, 0, dst_offset, msg, count, how));
}

TEST(HostAdapter, CombineAppliesAReceivedMessageInEveryMode) {
  auto adapter = make_host_adapter();
  const float msg[2] = {100, 200};
  {
    OneRank r(ReduceOp::kSum);
    ASSERT_TRUE(combine(*adapter, r.work, 1, msg, 2, Combine::kCopy).is_ok());
    EXPECT_EQ(r.recv, (std::vector<float>{10, 100, 200, 40}));
  }
  {
    OneRank r(ReduceOp::kSum);
    ASSERT_TRUE(combine(*adapter, r.work, 2, msg, 2, Combine::kReduce).is_ok());
    EXPECT_EQ(r.recv, (std::vector<float>{10, 20, 130, 240}));
  }
  {
    OneRank r(ReduceOp::kMax);
    ASSERT_TRUE(combine(*adapter, r.work, 0, msg, 2, Combine::kReduceInput).is_ok());
    EXPECT_EQ(r.recv, (std::vector<float>{100, 200, 30, 40}));  // max(input, msg)
  }
  {
    OneRank r(ReduceOp::kProd);
    ASSERT_TRUE(combine(*adapter, r.work, 2, msg, 2, Combine::kReduceInput).is_ok());
    EXPECT_EQ(r.recv, (std::vector<float>{10, 20, 300, 800}));  // input * msg
  }
}

TEST(HostAdapter, CombineOutOfBoundsIsAnErrorAndWritesNothing) {
  auto adapter = make_host_adapter();
  const float msg[2] = {100, 200};
  OneRank r(ReduceOp::kSum);
  Status s = combine(*adapter, r.work, 3, msg, 2, Combine::kCopy);
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  EXPECT_NE(s.message().find("out of bounds"), std::string::npos) << s.to_string();
  EXPECT_EQ(r.recv, (std::vector<float>{10, 20, 30, 40}));
}

TEST(HostAdapter, BytesNeverReduce) {
  auto adapter = make_host_adapter();
  std::vector<unsigned char> in{1, 2}, recv{3, 4};
  Work w;
  w.dtype = DataType::kBytes;
  w.world = 1;
  RankBuffers b;
  b.input = in.data();
  b.input_count = 2;
  b.recv = recv.data();
  b.recv_count = 2;
  w.ranks.push_back(b);
  const unsigned char msg[2] = {9, 9};
  Status s = core::combine(*adapter, w, 0, 0, msg, 2, Combine::kReduce).status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(recv, (std::vector<unsigned char>{3, 4}));
  EXPECT_TRUE(core::combine(*adapter, w, 0, 0, msg, 2, Combine::kCopy).is_ok());
  EXPECT_EQ(recv, (std::vector<unsigned char>{9, 9}));
}

// ---- resolve ------------------------------------------------------------------

TEST(Resolve, PointsIntoTheBuffersOfBothEnds) {
  OneRank r(ReduceOp::kSum);
  const auto* in = reinterpret_cast<const std::byte*>(r.input.data());
  auto* recv = reinterpret_cast<std::byte*>(r.recv.data());
  auto got = core::resolve(r.work, Transfer{0, Range{1, 2}, 2, Source::kInput},
                           Combine::kReduceInput, 0, 0);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got.value().src, in + 4);
  EXPECT_EQ(got.value().dst, recv + 8);
  EXPECT_EQ(got.value().own, in + 8);
  EXPECT_EQ(got.value().count, 2u);
  EXPECT_EQ(got.value().bytes, 8u);
  // One end only: the other stays null; a send buffer is read by default.
  got = core::resolve(r.work, Transfer{5, Range{3, 1}, 0}, Combine::kCopy, 0, kElsewhere);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got.value().src, recv + 12);
  EXPECT_EQ(got.value().dst, nullptr);
  EXPECT_EQ(got.value().own, nullptr);
}

TEST(Resolve, EveryRangeOutsideItsBufferIsInternal) {
  OneRank r(ReduceOp::kSum);
  const std::size_t huge = static_cast<std::size_t>(-1);
  struct Case {
    Transfer t;
    Combine how;
    std::size_t from, to;
    const char* names;
  };
  const Case cases[] = {
      {{0, Range{3, 2}, 0}, Combine::kCopy, 0, kElsewhere, "send buffer"},
      {{0, Range{1, huge}, 0}, Combine::kCopy, 0, kElsewhere, "send buffer"},  // wraps
      {{0, Range{4, 1}, 0, Source::kInput}, Combine::kCopy, 0, kElsewhere, "input of 4"},
      {{0, Range{0, 2}, 3}, Combine::kCopy, kElsewhere, 0, "recv buffer"},
      {{0, Range{0, 1}, huge}, Combine::kReduce, kElsewhere, 0, "recv buffer"},
      {{0, Range{0, 1}, 0}, Combine::kCopy, 1, kElsewhere, "source rank"},
      {{0, Range{0, 1}, 0}, Combine::kCopy, kElsewhere, 1, "destination rank"},
  };
  for (const Case& c : cases) {
    auto got = core::resolve(r.work, c.t, c.how, c.from, c.to);
    ASSERT_FALSE(got.is_ok()) << c.names;
    EXPECT_EQ(got.status().code(), ErrorCode::kInternal);
    EXPECT_NE(got.status().message().find(c.names), std::string::npos) << got.status().to_string();
  }
  // kReduceInput also needs the destination's input there.
  r.work.ranks[0].input_count = 1;
  auto got =
      core::resolve(r.work, Transfer{0, Range{0, 2}, 0}, Combine::kReduceInput, kElsewhere, 0);
  ASSERT_FALSE(got.is_ok());
  EXPECT_NE(got.status().message().find("own input range"), std::string::npos);
  // A null buffer holds nothing; an empty transfer needs nothing.
  r.work.ranks[0].input = nullptr;
  EXPECT_FALSE(core::resolve(r.work, Transfer{0, Range{0, 1}, 0, Source::kInput}, Combine::kCopy, 0,
                             kElsewhere)
                   .is_ok());
  EXPECT_TRUE(core::resolve(r.work, Transfer{0, Range{9, 0}, 9, Source::kInput},
                            Combine::kReduceInput, 0, 0)
                  .is_ok());
}

// ---- exchange: the in-process step over the memory verbs -------------------------

// The host adapter, except that copy and reduce only queue their work until
// wait(); begin() records the producers it was ordered after.
class Deferring final : public DeviceAdapter {
 public:
  DeviceKind kind() const noexcept override { return DeviceKind::kHost; }
  Result<std::shared_ptr<AdapterState>> prepare(const TensorView& v, DeviceId d) override {
    return host_->prepare(v, d);
  }
  Status begin(const Queue&, const AdapterState* producer) override {
    producers.push_back(producer);
    return Status::ok();
  }
  Status finish(const Queue&) override { return Status::ok(); }
  Result<std::shared_ptr<void>> allocate(DeviceId d, std::size_t bytes) override {
    return host_->allocate(d, bytes);
  }
  Result<Ticket> copy(const Queue& q, void* dst, const void* src, std::size_t bytes) override {
    return later([=, this] { return host_->copy(q, dst, src, bytes).status(); });
  }
  Result<Ticket> reduce(const Queue& q, void* dst, const void* a, const void* b, std::size_t n,
                        DataType dt, ReduceOp op) override {
    return later([=, this] { return host_->reduce(q, dst, a, b, n, dt, op).status(); });
  }
  Result<Ticket> divide(const Queue& q, void* d, std::size_t n, DataType dt,
                        std::size_t div) override {
    return later([=, this] { return host_->divide(q, d, n, dt, div).status(); });
  }
  Status wait(const Queue&, Ticket t) override {
    for (; done_ < t && done_ < queued_.size(); ++done_) RUCCL_TRY(queued_[done_]());
    return Status::ok();
  }
  std::size_t pending() const { return queued_.size() - done_; }
  std::vector<const AdapterState*> producers;

 private:
  Ticket later(std::function<Status()> f) {
    queued_.push_back(std::move(f));
    return queued_.size();
  }
  std::shared_ptr<DeviceAdapter> host_ = make_host_adapter();
  std::vector<std::function<Status()>> queued_;
  std::size_t done_ = 0;
};

struct TwoRanks {
  std::vector<float> in0{1, 2}, in1{10, 20}, out0{0, 0};
  Work work;
  std::shared_ptr<AdapterState> state0 = std::make_shared<AdapterState>(),
                                state1 = std::make_shared<AdapterState>();
  TwoRanks() {
    work.world = 2;
    work.ranks.resize(2);
    work.ranks[0] =
        RankBuffers{host_device(0), nullptr, in0.data(), 2, out0.data(), 2, out0.data(), 2, state0};
    work.ranks[1] =
        RankBuffers{host_device(1), nullptr, in1.data(), 2, in1.data(), 2, nullptr, 0, state1};
  }
};

TEST(Exchange, PullsAfterEachSourcesProducerAndReturnsWithItsWorkDone) {
  TwoRanks r;
  Deferring adapter;
  const Transfer in[] = {{1, Range{0, 2}, 0, Source::kInput}};
  ASSERT_TRUE(core::exchange(adapter, r.work, 0, in, Combine::kReduceInput).is_ok());
  EXPECT_EQ(r.out0, (std::vector<float>{11, 22}));
  EXPECT_EQ(adapter.pending(), 0u);
  EXPECT_EQ(adapter.producers, (std::vector<const AdapterState*>{r.state1.get()}));
}

TEST(Exchange, AFailedStepStillWaitsForWhatItQueued) {
  TwoRanks r;
  Deferring adapter;
  const Transfer in[] = {{1, Range{0, 1}, 0}, {1, Range{1, 2}, 0}};  // the second leaves the buffer
  Status s = core::exchange(adapter, r.work, 0, in, Combine::kCopy);
  EXPECT_EQ(s.code(), ErrorCode::kInternal) << s.to_string();
  EXPECT_NE(s.message().find("out of bounds"), std::string::npos) << s.to_string();
  EXPECT_EQ(adapter.pending(), 0u) << "the first copy was left queued";
  EXPECT_EQ(r.out0, (std::vector<float>{10, 0}));
}

}  // namespace
}  // namespace ruccl
