// The host adapter's verbs on one rank's buffers, without a communicator:
// combine (a received message) in every mode, and its bounds checks.
#include <gtest/gtest.h>

#include <vector>

#include "ruccl/device.hpp"

namespace ruccl {
namespace {

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

TEST(HostAdapter, CombineAppliesAReceivedMessageInEveryMode) {
  auto adapter = make_host_adapter();
  const float msg[2] = {100, 200};
  {
    OneRank r(ReduceOp::kSum);
    ASSERT_TRUE(adapter->combine(r.work, 0, 1, msg, 2, Combine::kCopy).is_ok());
    EXPECT_EQ(r.recv, (std::vector<float>{10, 100, 200, 40}));
  }
  {
    OneRank r(ReduceOp::kSum);
    ASSERT_TRUE(adapter->combine(r.work, 0, 2, msg, 2, Combine::kReduce).is_ok());
    EXPECT_EQ(r.recv, (std::vector<float>{10, 20, 130, 240}));
  }
  {
    OneRank r(ReduceOp::kMax);
    ASSERT_TRUE(adapter->combine(r.work, 0, 0, msg, 2, Combine::kReduceInput).is_ok());
    EXPECT_EQ(r.recv, (std::vector<float>{100, 200, 30, 40}));  // max(input, msg)
  }
  {
    OneRank r(ReduceOp::kProd);
    ASSERT_TRUE(adapter->combine(r.work, 0, 2, msg, 2, Combine::kReduceInput).is_ok());
    EXPECT_EQ(r.recv, (std::vector<float>{10, 20, 300, 800}));  // input * msg
  }
}

TEST(HostAdapter, CombineOutOfBoundsIsAnErrorAndWritesNothing) {
  auto adapter = make_host_adapter();
  const float msg[2] = {100, 200};
  OneRank r(ReduceOp::kSum);
  Status s = adapter->combine(r.work, 0, 3, msg, 2, Combine::kCopy);
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
  Status s = adapter->combine(w, 0, 0, msg, 2, Combine::kReduce);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(recv, (std::vector<unsigned char>{3, 4}));
  EXPECT_TRUE(adapter->combine(w, 0, 0, msg, 2, Combine::kCopy).is_ok());
  EXPECT_EQ(recv, (std::vector<unsigned char>{9, 9}));
}

}  // namespace
}  // namespace ruccl
