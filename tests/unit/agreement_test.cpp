// The agreement's trust boundary: fingerprint records off the wire
// (world::decode) and agree() over them, and the rendezvous's check that
// every local rank of a process agreed the same plan.
#include <gtest/gtest.h>

#include <thread>

#include "core/agreement.hpp"
#include "core/rendezvous.hpp"
#include "world/fingerprint_codec.hpp"

namespace ruccl {
namespace {

using core::Geometry;
using core::Plan;
using core::Request;

Request request(CollectiveKind kind, Shape shape) {
  Request q;
  q.kind = kind;
  q.dtype = DataType::kF32;
  q.shape = shape;
  q.in.shape = shape;
  q.max_chunk_bytes = 1 << 20;
  return q;
}

// What check_local derives for a request with input (row-split kinds by rows).
Geometry geometry_of(const Request& q) {
  const bool rows = q.kind == CollectiveKind::kAllGather ||
                    q.kind == CollectiveKind::kReduceScatter ||
                    q.kind == CollectiveKind::kAllToAllV;
  Geometry g;
  g.count = shape_count(q.shape).value_or(0);
  g.unit = rows ? core::row_unit(q.shape) : 1;
  g.rows = rows ? (q.shape.empty() ? 1 : q.shape[0]) : g.count;
  return g;
}

Result<world::Decoded> round_trip(const Request& q, const Result<Geometry>& g, std::size_t world) {
  const std::vector<std::uint64_t> words = world::encode(q, g, world);
  return world::decode(words, 1, world);
}

// agree() over `n` ranks, rank r's request from `make(r)`, with geometry_of.
template <typename Make>
Result<Plan> agree_over(std::size_t n, Make make) {
  std::vector<Request> qs;
  for (std::size_t r = 0; r < n; ++r) qs.push_back(make(r));
  std::vector<Result<Geometry>> gs;
  for (const Request& q : qs) gs.push_back(geometry_of(q));
  std::vector<const Request*> rp;
  std::vector<const Result<Geometry>*> gp;
  for (std::size_t r = 0; r < n; ++r) {
    rp.push_back(&qs[r]);
    gp.push_back(&gs[r]);
  }
  return core::agree(rp, gp, 7);
}

TEST(Fingerprint, RoundTripOfEveryKindAgreesAsTheOriginals) {
  const std::size_t world = 3;
  for (CollectiveKind kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kReduce, CollectiveKind::kAllGather,
        CollectiveKind::kReduceScatter, CollectiveKind::kAllToAllV, CollectiveKind::kBroadcast}) {
    Request q = request(kind, {6, 5});
    if (kind == CollectiveKind::kReduce) q.root = 2;
    if (kind == CollectiveKind::kAllToAllV) q.send_counts = {1, 2, 3};
    auto d = round_trip(q, geometry_of(q), world);
    ASSERT_TRUE(d.is_ok()) << collective_name(kind) << ": " << d.status().to_string();
    ASSERT_TRUE(d.value().geometry.is_ok());
    EXPECT_EQ(d.value().geometry.value().count, geometry_of(q).count);
    EXPECT_EQ(d.value().geometry.value().unit, geometry_of(q).unit);
    EXPECT_EQ(d.value().request.shape, q.shape);
  }
}

TEST(Fingerprint, DecodeRejectsAGeometryItsShapeDoesNotGive) {
  // The reduce root's claimed count drives the segments every rank sends.
  Request q = request(CollectiveKind::kReduce, {4});
  auto d = round_trip(q, Geometry{1000, 1, 1000}, 2);
  ASSERT_FALSE(d.is_ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kProtocolError) << d.status().to_string();
  EXPECT_NE(d.status().message().find("1000"), std::string::npos) << d.status().to_string();
}

TEST(Fingerprint, DecodeRejectsFieldsOutsideTheWorldOrTheShape) {
  Request reduce = request(CollectiveKind::kReduce, {4});
  reduce.root = 5;  // world of 2
  EXPECT_EQ(round_trip(reduce, geometry_of(reduce), 2).status().code(), ErrorCode::kProtocolError);

  Request a2a = request(CollectiveKind::kAllToAllV, {4, 2});
  a2a.send_counts = {3, 3};  // 6 rows of an input of 4
  EXPECT_EQ(round_trip(a2a, geometry_of(a2a), 2).status().code(), ErrorCode::kProtocolError);

  Request huge =
      request(CollectiveKind::kBroadcast, {std::size_t{1} << 62});  // f32: bytes overflow
  EXPECT_EQ(round_trip(huge, geometry_of(huge), 2).status().code(), ErrorCode::kProtocolError);

  Request no_input = request(CollectiveKind::kAllReduce, {4});
  no_input.has_input = false;
  EXPECT_EQ(round_trip(no_input, Geometry{0, 1, 0}, 2).status().code(), ErrorCode::kProtocolError);

  Request budget = request(CollectiveKind::kAllReduce, {4});
  budget.max_chunk_bytes = 0;
  EXPECT_EQ(round_trip(budget, geometry_of(budget), 2).status().code(), ErrorCode::kProtocolError);

  // A failed local check travels as its error, whatever the rest holds.
  auto failed = round_trip(reduce, Status(ErrorCode::kInvalidArgument, "null input"), 2);
  ASSERT_TRUE(failed.is_ok());
  EXPECT_EQ(failed.value().geometry.status().code(), ErrorCode::kInvalidArgument);
}

TEST(Fingerprint, AgreeTakesNoRootFromAKindWithoutOne) {
  // Rank 0's root field of an all-reduce is unused: it must not index anything.
  auto plan = agree_over(3, [](std::size_t r) {
    Request q = request(CollectiveKind::kAllReduce, {8});
    if (r == 0) q.root = std::size_t{1} << 40;
    return q;
  });
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(plan.value().root, 0u);
}

TEST(Fingerprint, AgreeRefusesARootOutsideTheWorld) {
  auto plan = agree_over(3, [](std::size_t) {
    Request q = request(CollectiveKind::kReduce, {8});
    q.root = 3;
    return q;
  });
  ASSERT_FALSE(plan.is_ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::kProtocolError);
  EXPECT_NE(plan.status().message().find("collective #7"), std::string::npos);
  EXPECT_NE(plan.status().message().find("rank 0"), std::string::npos);
}

TEST(Fingerprint, AgreeRefusesSendCountsOfAnotherWorld) {
  auto plan = agree_over(3, [](std::size_t r) {
    Request q = request(CollectiveKind::kAllToAllV, {3, 2});
    q.send_counts = r == 1 ? std::vector<std::size_t>{3} : std::vector<std::size_t>{1, 1, 1};
    return q;
  });
  ASSERT_FALSE(plan.is_ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::kProtocolError);
  EXPECT_NE(plan.status().message().find("rank 1"), std::string::npos) << plan.status().to_string();
}

TEST(Fingerprint, AgreeRefusesABroadcastWhoseBytesOverflow) {
  auto plan = agree_over(2, [](std::size_t r) {
    Request q = request(CollectiveKind::kBroadcast, r == 0 ? Shape{std::size_t{1} << 62} : Shape{});
    q.has_input = r == 0;
    return q;
  });
  ASSERT_FALSE(plan.is_ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::kProtocolError) << plan.status().to_string();
}

// Item 6: what the record cannot carry is a local error every peer decodes.
TEST(Fingerprint, TooManyDimsTravelAsAShapeError) {
  Request q = request(CollectiveKind::kAllReduce, Shape(17, 1));
  const Status s = world::check_encodable(q, 1);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), ErrorCode::kShapeMismatch);
  EXPECT_NE(s.message().find("rank 1"), std::string::npos);
  auto d = round_trip(q, s, 2);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(d.value().geometry.status().code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(d.value().geometry.status().message(), s.message());
  EXPECT_TRUE(world::check_encodable(request(CollectiveKind::kAllReduce, Shape(16, 1)), 0));
}

// Item 8: two local ranks arriving with different agreed outcomes.
std::vector<Result<core::Rendezvous::Generation*>> arrive_both(const Result<Plan>& a,
                                                               const Result<Plan>& b) {
  core::Rendezvous rv(2, std::chrono::milliseconds(100));
  const Request q = request(CollectiveKind::kAllReduce, {4});
  const Result<Geometry> g = geometry_of(q);
  std::vector<Result<core::Rendezvous::Generation*>> got(2, Status(ErrorCode::kInternal,
                                                                   "not arrived"));
  std::vector<Result<Plan>> plans;
  const Result<Plan>* agreed[2] = {&a, &b};
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      got[r] = rv.arrive(r, 3, q, g, core::Clock::now() + std::chrono::seconds(10), agreed[r]);
    });
  for (auto& t : threads) t.join();
  for (std::size_t r = 0; r < 2; ++r) {
    // Copy the outcome out before departing (the generation resets).
    if (got[r].is_ok() && !got[r].value()->plan.is_ok()) got[r] = got[r].value()->plan.status();
    if (got[r].is_ok()) rv.depart(r);
  }
  return got;
}

TEST(Fingerprint, LocalRanksRunOnePlanOrNone) {
  Plan p;
  p.geometry = Geometry{4, 1, 4};
  p.shape = {4};
  Plan ring = p, one_shot = p;
  one_shot.one_shot = true;
  auto same = arrive_both(ring, ring);
  EXPECT_TRUE(same[0].is_ok() && same[1].is_ok());

  auto differ = arrive_both(ring, one_shot);
  for (const auto& r : differ) {
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kProtocolError) << r.status().to_string();
  }
  Plan other = p;
  other.message_elements = 2;
  for (const auto& r : arrive_both(other, p))
    EXPECT_EQ(r.status().code(), ErrorCode::kProtocolError);

  // One local rank's agreement failed: every local rank gets that error.
  const Result<Plan> lost = Status(ErrorCode::kPeerFailure, "rank 3 is gone");
  for (const auto& r : arrive_both(p, lost)) {
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kPeerFailure) << r.status().to_string();
  }
}

}  // namespace
}  // namespace ruccl
