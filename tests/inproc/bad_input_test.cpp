// Bad input to every public entry point, in one table (issue 7, item 5).
//
// Each row is one misuse of one entry point of the Communicator (and the
// creation, Tensor and BoundedCommunicator calls around it), of the Session
// (the seed API) or of the C API (ruccl.h): null pointers, counts whose byte
// size overflows size_t, zero and too-small budgets, duplicate devices, ranks
// and roots out of range, unknown dtypes and ops, calls after finish or abort,
// a double finish, calls after reset. For every row the test checks
//   - the error code, on every rank that called, and a substring of each
//     message (what was wrong, and which rank passed it);
//   - that every rank's input and output buffers hold what they held before
//     (a rejected call writes nothing);
//   - where the API promises that a rejected call loses nothing, that the same
//     group then runs a checked all-reduce.
// It runs under ASan+UBSan and TSan (label inproc): no row may crash, leak or
// race, and none waits for a deadline (every rank that would wait is answered).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ruccl/ruccl.h"
#include "test_support.hpp"

namespace ruccl::test {
namespace {

constexpr std::size_t kWorld = 3;
constexpr std::size_t kCount = 8;                        // f32 elements per rank
constexpr std::size_t kHuge = SIZE_MAX / 2 + 1;          // x2 (bytes, world) overflows
constexpr std::size_t kOverflowingF32 = SIZE_MAX / 4 + 1;  // x4 bytes overflows

enum class Api { kCommunicator, kSession, kC };
const char* api_name(Api api) {
  switch (api) {
    case Api::kCommunicator: return "Communicator";
    case Api::kSession: return "Session";
    case Api::kC: return "C API";
  }
  return "?";
}

// Who calls: every rank (the bad argument is on one rank or all, and every rank
// must get the same error) or rank 0 alone (a local error nobody waits for).
enum class Callers { kEvery, kRank0 };
// What the API promises after the rejected call.
enum class After {
  kLosesNothing,   // the group runs the next collective
  kRegisterAgain,  // (Session) registering the missing peers completes a working group
  kNothing,        // no promise (finished, aborted, poisoned round, creation)
};

Config config() { return test_config(kWorld, std::chrono::seconds(20)); }

// The groups a row runs against, fresh for every row: one per API, over host
// devices 0..kWorld-1, and each rank's buffers.
struct Fixture {
  Fixture() {
    comm = make_comm(kWorld, config());
    for (PeerId p = 0; p < kWorld; ++p)
      EXPECT_TRUE(session.register_peer(p, host_device(p), config()).is_ok());
    ruccl_config_t* cfg = nullptr;
    EXPECT_EQ(ruccl_config_create(&cfg), RUCCL_SUCCESS);
    EXPECT_EQ(ruccl_config_set_timeout_ms(cfg, 20000), RUCCL_SUCCESS);
    EXPECT_EQ(ruccl_comm_create_local(kWorld, RUCCL_DEVICE_HOST, nullptr, cfg, &c), RUCCL_SUCCESS);
    ruccl_config_destroy(cfg);
    for (std::size_t r = 0; r < kWorld; ++r) {
      in.push_back(reduce_input_buffer(DataType::kF32, ReduceOp::kSum, r, kCount, 11));
      out.push_back(filled(kWorld * kCount * 4, 0xab));  // room for all_gather
    }
    in_before = in;
    out_before = out;
  }
  ~Fixture() { ruccl_comm_destroy(c); }
  Fixture(const Fixture&) = delete;
  Fixture& operator=(const Fixture&) = delete;

  TensorView in_view(std::size_t r) { return view1(in[r], DataType::kF32, r); }
  TensorView out_view(std::size_t r, std::size_t count = kCount) {
    return view(out[r], DataType::kF32, {count}, r);
  }

  std::shared_ptr<Communicator> comm;
  Session session;  // peers 0..kWorld-1 registered
  Session fresh;    // nobody registered
  ruccl_comm_t* c = nullptr;
  std::vector<Bytes> in, out, in_before, out_before;
};

// A C result as a Status: the code (the values match ErrorCode) and the message.
Status c_status(ruccl_result_t code, const char* message) {
  if (code == RUCCL_SUCCESS) return Status::ok();
  return Status(static_cast<ErrorCode>(code), message);
}
Status c_status(ruccl_result_t code, const ruccl_comm_t* comm, std::size_t rank) {
  return c_status(code, ruccl_comm_last_error(comm, rank));
}
// (Callers get the code first, then the message: a call's arguments are
// evaluated in no set order, and the message must be read after the call.)
// A step a row needs before its bad call; its failure fails the row.
Status setup(const Status& s, const char* what) {
  return s.is_ok() ? s : Status(ErrorCode::kInternal, std::string("setup ") + what + ": " + s.to_string());
}

struct Row {
  Api api;
  const char* name;
  ErrorCode code;
  const char* says;  // every failing call's message contains it
  Callers callers;
  After after;
  std::function<Status(Fixture&, std::size_t rank)> call;
};

// Shorthands for "rank 1 passes the bad argument, the others a good one".
bool bad(std::size_t rank) { return rank == 1; }

std::vector<Row> communicator_rows() {
  using A = After;
  const Api api = Api::kCommunicator;
  return {
      {api, "null input", ErrorCode::kInvalidArgument, "rank 1 passed a null input pointer",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         TensorView v = f.in_view(r);
         if (bad(r)) v.data = nullptr;
         return f.comm->all_reduce(r, v, ReduceOp::kSum).status();
       }},
      {api, "null output", ErrorCode::kInvalidArgument, "rank 1 passed a null output pointer",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         TensorView o = f.out_view(r);
         if (bad(r)) o.data = nullptr;
         return f.comm->all_reduce_into(r, f.in_view(r), o, ReduceOp::kSum);
       }},
      {api, "count whose byte size overflows", ErrorCode::kInvalidArgument, "overflows size_t",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         TensorView v = f.in_view(r);
         if (bad(r)) v.shape = {kOverflowingF32};
         return f.comm->all_reduce(r, v, ReduceOp::kSum).status();
       }},
      {api, "shape whose count overflows", ErrorCode::kInvalidArgument, "rank 1 passed input of shape",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         TensorView v = f.in_view(r);
         if (bad(r)) v.shape = {std::size_t{1} << 40, std::size_t{1} << 40};
         return f.comm->reduce(r, v, ReduceOp::kSum, 0).status();
       }},
      {api, "all_gather whose gathered size overflows", ErrorCode::kInvalidArgument,
       "gathered byte size overflows", Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         TensorView v = view1(f.in[r], DataType::kU8, r);
         if (bad(r)) v.shape = {kHuge};
         return f.comm->all_gather(r, v).status();
       }},
      {api, "unknown dtype", ErrorCode::kInvalidArgument, "rank 1 passed an unknown dtype",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         TensorView v = f.in_view(r);
         if (bad(r)) v.dtype = static_cast<DataType>(0x7f);
         return f.comm->all_gather(r, v).status();
       }},
      {api, "unknown op", ErrorCode::kInvalidArgument, "unknown reduction op", Callers::kEvery,
       A::kLosesNothing, [](Fixture& f, std::size_t r) {
         return f.comm->reduce_scatter(r, f.in_view(r), bad(r) ? static_cast<ReduceOp>(0x7f) : ReduceOp::kSum)
             .status();
       }},
      {api, "bytes reduced", ErrorCode::kInvalidArgument, "cannot be reduced", Callers::kEvery,
       A::kLosesNothing, [](Fixture& f, std::size_t r) {
         return f.comm->all_reduce(r, view1(f.in[r], DataType::kBytes, r), ReduceOp::kMax).status();
       }},
      {api, "zero budget for one call", ErrorCode::kBudgetTooSmall, "max_chunk_bytes=0",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         return f.comm->all_reduce(r, f.in_view(r), ReduceOp::kSum, CallOptions{0}).status();
       }},
      {api, "budget below one element", ErrorCode::kBudgetTooSmall, "max_chunk_bytes=3",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         return f.comm->all_reduce(r, f.in_view(r), ReduceOp::kSum, CallOptions{3}).status();
       }},
      {api, "BoundedCommunicator budget below one row", ErrorCode::kBudgetTooSmall, "max_chunk_bytes=4",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         BoundedCommunicator bounded(f.comm, 4);
         return bounded.all_gather(r, view(f.in[r], DataType::kF32, {4, 2}, r)).status();
       }},
      {api, "reduce root out of range", ErrorCode::kInvalidArgument, "root 3 outside a world of 3",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         return f.comm->reduce_into(r, f.in_view(r), f.out_view(r), ReduceOp::kSum, kWorld);
       }},
      {api, "broadcast output of the wrong size", ErrorCode::kShapeMismatch, "rank 1 passed shape [7]",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         const TensorView in = f.in_view(r);
         return f.comm->broadcast_into(r, r == 0 ? &in : nullptr, f.out_view(r, bad(r) ? 7 : kCount));
       }},
      {api, "view on another device", ErrorCode::kInvalidArgument, "rank 1 passed input on host:9",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         TensorView v = f.in_view(r);
         if (bad(r)) v.device = host_device(9);
         return f.comm->all_reduce(r, v, ReduceOp::kMin).status();
       }},
      {api, "all_to_all_v with too few send counts", ErrorCode::kInvalidArgument,
       "rank 1 passed 2 send counts for a world of 3", Callers::kEvery, A::kLosesNothing,
       [](Fixture& f, std::size_t r) {
         const std::vector<std::size_t> counts = bad(r) ? std::vector<std::size_t>{4, 4}
                                                        : std::vector<std::size_t>{4, 2, 2};
         return f.comm->all_to_all_v(r, f.in_view(r), counts).status();
       }},
      {api, "all_to_all_v send counts whose sum overflows", ErrorCode::kInvalidArgument,
       "sum overflows size_t", Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         const std::vector<std::size_t> counts = bad(r) ? std::vector<std::size_t>{kHuge, kHuge, 8}
                                                        : std::vector<std::size_t>{4, 2, 2};
         return f.comm->all_to_all_v(r, f.in_view(r), counts).status();
       }},
      {api, "rank out of range", ErrorCode::kInvalidArgument, "rank 3 is not served", Callers::kRank0,
       A::kLosesNothing, [](Fixture& f, std::size_t) {
         return f.comm->all_reduce(kWorld, f.in_view(0), ReduceOp::kSum).status();
       }},
      {api, "call after abort", ErrorCode::kAborted, "stop", Callers::kEvery, A::kNothing,
       [](Fixture& f, std::size_t r) {
         if (r == 0) f.comm->abort("stop");
         f.comm->abort("stop");  // every rank: aborting twice is harmless
         return f.comm->all_reduce(r, f.in_view(r), ReduceOp::kSum).status();
       }},
      {api, "create with duplicate devices", ErrorCode::kInvalidArgument,
       "ranks 0 and 2 both use host:0", Callers::kRank0, A::kNothing, [](Fixture&, std::size_t) {
         return Communicator::create({host_device(0), host_device(1), host_device(0)},
                                     make_host_adapter(), config())
             .status();
       }},
      {api, "create with no devices", ErrorCode::kInvalidArgument, "at least one device",
       Callers::kRank0, A::kNothing, [](Fixture&, std::size_t) {
         return Communicator::create({}, make_host_adapter(), config()).status();
       }},
      {api, "create with no adapter", ErrorCode::kInvalidArgument, "adapter is null", Callers::kRank0,
       A::kNothing, [](Fixture&, std::size_t) {
         return Communicator::create(host_devices(2), nullptr, config()).status();
       }},
      {api, "create with a zero budget", ErrorCode::kBudgetTooSmall, "max_chunk_bytes",
       Callers::kRank0, A::kNothing, [](Fixture&, std::size_t) {
         return Communicator::create(host_devices(2), make_host_adapter(),
                                     config().with_max_chunk_bytes(0))
             .status();
       }},
      {api, "Tensor::host of an unknown dtype", ErrorCode::kInvalidArgument, "unknown dtype",
       Callers::kRank0, A::kNothing, [](Fixture&, std::size_t) {
         return Tensor::host(static_cast<DataType>(0x7f), {4}).status();
       }},
      {api, "Tensor::host whose byte size overflows", ErrorCode::kInvalidArgument, "overflows",
       Callers::kRank0, A::kNothing, [](Fixture&, std::size_t) {
         return Tensor::host(DataType::kF64, {kHuge}).status();
       }},
  };
}

std::vector<Row> session_rows() {
  using A = After;
  const Api api = Api::kSession;
  return {
      {api, "null input", ErrorCode::kInvalidArgument, "rank 1 passed a null input pointer",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         TensorView v = f.in_view(r);
         if (bad(r)) v.data = nullptr;
         return f.session.all_reduce(r, v, ReduceOp::kSum).status();
       }},
      {api, "count whose byte size overflows", ErrorCode::kInvalidArgument, "overflows size_t",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         TensorView v = f.in_view(r);
         if (bad(r)) v.shape = {kOverflowingF32};
         return f.session.all_gather(r, v).status();
       }},
      {api, "unknown dtype", ErrorCode::kInvalidArgument, "unknown dtype", Callers::kEvery,
       A::kLosesNothing, [](Fixture& f, std::size_t r) {
         TensorView v = f.in_view(r);
         if (bad(r)) v.dtype = static_cast<DataType>(0x7f);
         return f.session.reduce_scatter(r, v, ReduceOp::kSum).status();
       }},
      {api, "unknown op", ErrorCode::kInvalidArgument, "unknown reduction op", Callers::kEvery,
       A::kLosesNothing, [](Fixture& f, std::size_t r) {
         return f.session.all_reduce(r, f.in_view(r), bad(r) ? static_cast<ReduceOp>(0x7f) : ReduceOp::kMean)
             .status();
       }},
      {api, "reduce to a root that is no peer", ErrorCode::kInvalidArgument,
       "root peer 42 is not registered", Callers::kEvery, A::kLosesNothing,
       [](Fixture& f, std::size_t r) {
         return f.session.reduce(r, f.in_view(r), ReduceOp::kSum, 42).status();
       }},
      {api, "broadcast with two senders", ErrorCode::kBroadcastSenderCount, "2", Callers::kEvery,
       A::kLosesNothing, [](Fixture& f, std::size_t r) {
         return f.session.broadcast(r, bad(r) ? std::nullopt : std::optional(f.in_view(r))).status();
       }},
      {api, "all_to_all_v with counts that miss rows", ErrorCode::kShapeMismatch,
       "rank 1 passed send counts summing to 7", Callers::kEvery, A::kLosesNothing,
       [](Fixture& f, std::size_t r) {
         const std::vector<std::size_t> counts = bad(r) ? std::vector<std::size_t>{4, 2, 1}
                                                        : std::vector<std::size_t>{4, 2, 2};
         return f.session.all_to_all_v(r, f.in_view(r), counts).status();
       }},
      {api, "call from a peer that never registered", ErrorCode::kMissingRegistration,
       "peer 99 is not registered", Callers::kRank0, A::kLosesNothing, [](Fixture& f, std::size_t) {
         return f.session.all_reduce(99, f.in_view(0), ReduceOp::kSum).status();
       }},
      {api, "register a peer id twice", ErrorCode::kDuplicateRegistration,
       "peer 0 is already registered", Callers::kRank0, A::kRegisterAgain, [](Fixture& f, std::size_t) {
         RUCCL_TRY(setup(f.fresh.register_peer(0, host_device(0), config()), "register"));
         return f.fresh.register_peer(0, host_device(5), config());
       }},
      {api, "register a device twice", ErrorCode::kDuplicateRegistration,
       "peer 1 registered device host:0, which peer 0 already uses", Callers::kRank0, A::kRegisterAgain,
       [](Fixture& f, std::size_t) {
         RUCCL_TRY(setup(f.fresh.register_peer(0, host_device(0), config()), "register"));
         return f.fresh.register_peer(1, host_device(0), config());
       }},
      {api, "register with a zero budget", ErrorCode::kBudgetTooSmall, "max_chunk_bytes",
       Callers::kRank0, A::kRegisterAgain, [](Fixture& f, std::size_t) {
         return f.fresh.register_peer(0, host_device(0), config().with_max_chunk_bytes(0));
       }},
      {api, "register with zero devices", ErrorCode::kInvalidArgument, "num_devices must be at least 1",
       Callers::kRank0, A::kRegisterAgain, [](Fixture& f, std::size_t) {
         return f.fresh.register_peer(0, host_device(0), config().with_num_devices(0));
       }},
      {api, "budget below one element", ErrorCode::kBudgetTooSmall, "max_chunk_bytes=2",
       Callers::kEvery, A::kNothing, [](Fixture& f, std::size_t r) {
         const Config tiny = config().with_max_chunk_bytes(2);
         RUCCL_TRY(setup(f.fresh.register_peer(r, host_device(r), tiny), "register"));
         return f.fresh.all_reduce(r, f.in_view(r), ReduceOp::kSum).status();
       }},
      {api, "peers disagree on the group size", ErrorCode::kDeviceCountMismatch,
       "peer 1 registered with num_devices=2, peer 0 with num_devices=3", Callers::kRank0, A::kNothing,
       [](Fixture& f, std::size_t) {
         // Peer 1's bad size poisons the round: peer 0, already waiting for the
         // group, gets the same error at once (no deadline).
         RUCCL_TRY(setup(f.fresh.register_peer(0, host_device(0), config()), "register"));
         const Status s = f.fresh.register_peer(1, host_device(1), config().with_num_devices(2));
         if (s.code() != ErrorCode::kDeviceCountMismatch)
           return Status(ErrorCode::kInternal, "peer 1's registration: " + describe(s));
         return f.fresh.all_reduce(0, f.in_view(0), ReduceOp::kSum).status();
       }},
      {api, "call after finish", ErrorCode::kFinished, "peer 0 already called finish_collective",
       Callers::kRank0, A::kNothing, [](Fixture& f, std::size_t) {
         RUCCL_TRY(setup(f.session.finish_collective(0), "finish"));
         return f.session.broadcast(0, f.in_view(0)).status();
       }},
      {api, "double finish", ErrorCode::kFinished, "peer 0 already called finish_collective",
       Callers::kRank0, A::kNothing, [](Fixture& f, std::size_t) {
         RUCCL_TRY(setup(f.session.finish_collective(0), "finish"));
         return f.session.finish_collective(0);
       }},
      {api, "finish after the round ended", ErrorCode::kMissingRegistration, "not registered",
       Callers::kEvery, A::kNothing, [](Fixture& f, std::size_t r) {
         RUCCL_TRY(setup(f.session.all_reduce(r, f.in_view(r), ReduceOp::kSum).status(), "all_reduce"));
         RUCCL_TRY(setup(f.session.finish_collective(r), "finish"));
         // Wait for the round to end (every peer finished), then finish again.
         Status again = f.session.finish_collective(r);
         while (again.code() == ErrorCode::kFinished) again = f.session.finish_collective(r);
         return again;
       }},
      {api, "call after reset, then register again", ErrorCode::kMissingRegistration,
       "call register_peer first", Callers::kRank0, A::kRegisterAgain, [](Fixture& f, std::size_t) {
         for (PeerId p = 0; p < kWorld; ++p)
           RUCCL_TRY(setup(f.fresh.register_peer(p, host_device(p), config()), "register"));
         f.fresh.reset_collective();
         return f.fresh.all_reduce(0, f.in_view(0), ReduceOp::kSum).status();
       }},
  };
}

// ruccl_comm_create_local through a config that keeps the message; a
// communicator it returns despite failing would be a leak, reported here.
Status create_local(std::size_t n, ruccl_device_kind_t kind, const std::size_t* indices) {
  ruccl_config_t* cfg = nullptr;
  if (ruccl_config_create(&cfg) != RUCCL_SUCCESS) return Status(ErrorCode::kInternal, "config");
  ruccl_comm_t* comm = nullptr;
  const ruccl_result_t code = ruccl_comm_create_local(n, kind, indices, cfg, &comm);
  Status s = c_status(code, ruccl_config_last_error(cfg));
  if (!s.is_ok() && comm != nullptr) s = Status(ErrorCode::kInternal, "a failed creation returned a comm");
  ruccl_comm_destroy(comm);
  ruccl_config_destroy(cfg);
  return s;
}

// C rows: rank 1 passes the bad argument unless the row says otherwise.
std::vector<Row> c_rows() {
  using A = After;
  const Api api = Api::kC;
  auto all_reduce = [](Fixture& f, std::size_t r, const void* in, void* out, std::size_t count,
                       ruccl_dtype_t dtype, ruccl_op_t op) {
    return c_status(ruccl_all_reduce(f.c, r, in, out, count, dtype, op, nullptr), f.c, r);
  };
  return {
      {api, "null sendbuf", ErrorCode::kInvalidArgument, "rank 1 passed a null input pointer",
       Callers::kEvery, A::kLosesNothing, [=](Fixture& f, std::size_t r) {
         return all_reduce(f, r, bad(r) ? nullptr : f.in[r].data(), f.out[r].data(), kCount, RUCCL_F32, RUCCL_SUM);
       }},
      {api, "null recvbuf", ErrorCode::kInvalidArgument, "rank 1 passed a null output pointer",
       Callers::kEvery, A::kLosesNothing, [=](Fixture& f, std::size_t r) {
         return all_reduce(f, r, f.in[r].data(), bad(r) ? nullptr : f.out[r].data(), kCount, RUCCL_F32, RUCCL_SUM);
       }},
      {api, "count whose byte size overflows", ErrorCode::kInvalidArgument, "overflows size_t",
       Callers::kEvery, A::kLosesNothing, [=](Fixture& f, std::size_t r) {
         return all_reduce(f, r, f.in[r].data(), f.out[r].data(), bad(r) ? kOverflowingF32 : kCount,
                           RUCCL_F32, RUCCL_SUM);
       }},
      {api, "unknown dtype", ErrorCode::kInvalidArgument, "rank 1 passed an unknown dtype",
       Callers::kEvery, A::kLosesNothing, [=](Fixture& f, std::size_t r) {
         return all_reduce(f, r, f.in[r].data(), f.out[r].data(), kCount, bad(r) ? 42 : RUCCL_F32, RUCCL_SUM);
       }},
      {api, "unknown op", ErrorCode::kInvalidArgument, "unknown reduction op", Callers::kEvery,
       A::kLosesNothing, [=](Fixture& f, std::size_t r) {
         return all_reduce(f, r, f.in[r].data(), f.out[r].data(), kCount, RUCCL_F32, bad(r) ? -1 : RUCCL_SUM);
       }},
      {api, "all_gather whose size overflows", ErrorCode::kInvalidArgument, "overflows size_t",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         return c_status(ruccl_all_gather(f.c, r, f.in[r].data(), f.out[r].data(), bad(r) ? kHuge : kCount,
                                          RUCCL_U8, nullptr),
                         f.c, r);
       }},
      {api, "reduce_scatter whose size overflows", ErrorCode::kInvalidArgument, "overflows size_t",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         return c_status(ruccl_reduce_scatter(f.c, r, f.in[r].data(), f.out[r].data(), bad(r) ? kHuge : 2,
                                              RUCCL_U8, RUCCL_SUM, nullptr),
                         f.c, r);
       }},
      {api, "reduce root out of range", ErrorCode::kInvalidArgument, "root 7 outside a world of 3",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         return c_status(ruccl_reduce(f.c, r, f.in[r].data(), f.out[r].data(), kCount, RUCCL_F32,
                                      RUCCL_SUM, 7, nullptr),
                         f.c, r);
       }},
      {api, "broadcast root out of range", ErrorCode::kInvalidArgument, "root 7 is outside a world of 3",
       Callers::kEvery, A::kLosesNothing, [](Fixture& f, std::size_t r) {
         return c_status(ruccl_broadcast(f.c, r, f.in[r].data(), f.out[r].data(), kCount, RUCCL_F32, 7, nullptr),
                         f.c, r);
       }},
      {api, "all_to_all_v with NULL send_counts", ErrorCode::kInvalidArgument,
       "rank 1 passed 0 send counts for a world of 3", Callers::kEvery, A::kLosesNothing,
       [](Fixture& f, std::size_t r) {
         static const std::size_t counts[kWorld] = {4, 2, 2};
         std::size_t recv[kWorld] = {};
         return c_status(ruccl_all_to_all_v(f.c, r, f.in[r].data(), bad(r) ? nullptr : counts,
                                            f.out[r].data(), kCount, recv, RUCCL_F32, nullptr),
                         f.c, r);
       }},
      {api, "rank out of range", ErrorCode::kInvalidArgument, "rank 3 is not served", Callers::kRank0,
       A::kLosesNothing, [=](Fixture& f, std::size_t) {
         return c_status(ruccl_all_reduce(f.c, kWorld, f.in[0].data(), f.out[0].data(), kCount,
                                          RUCCL_F32, RUCCL_SUM, nullptr),
                         f.c, kWorld);
       }},
      {api, "call after abort", ErrorCode::kAborted, "ruccl_comm_abort", Callers::kEvery, A::kNothing,
       [=](Fixture& f, std::size_t r) {
         if (ruccl_comm_abort(f.c, nullptr) != RUCCL_SUCCESS) return Status(ErrorCode::kInternal, "abort");
         return all_reduce(f, r, f.in[r].data(), f.out[r].data(), kCount, RUCCL_F32, RUCCL_SUM);
       }},
      {api, "NULL comm", ErrorCode::kInvalidArgument, "comm is NULL", Callers::kRank0, A::kLosesNothing,
       [](Fixture& f, std::size_t) {
         std::size_t n = 0;
         const std::size_t counts[kWorld] = {4, 2, 2};
         const ruccl_result_t codes[] = {
             ruccl_all_reduce(nullptr, 0, f.in[0].data(), f.out[0].data(), kCount, RUCCL_F32, RUCCL_SUM, nullptr),
             ruccl_reduce(nullptr, 0, f.in[0].data(), f.out[0].data(), kCount, RUCCL_F32, RUCCL_SUM, 0, nullptr),
             ruccl_broadcast(nullptr, 0, f.in[0].data(), f.out[0].data(), kCount, RUCCL_F32, 0, nullptr),
             ruccl_all_gather(nullptr, 0, f.in[0].data(), f.out[0].data(), kCount, RUCCL_F32, nullptr),
             ruccl_reduce_scatter(nullptr, 0, f.in[0].data(), f.out[0].data(), 2, RUCCL_F32, RUCCL_SUM, nullptr),
             ruccl_all_to_all_v(nullptr, 0, f.in[0].data(), counts, f.out[0].data(), kCount, nullptr,
                                RUCCL_F32, nullptr),
             ruccl_comm_abort(nullptr, "x"),
             ruccl_comm_world_size(nullptr, &n),
             ruccl_comm_first_rank(nullptr, &n),
             ruccl_comm_local_count(nullptr, &n),
             ruccl_config_load_env(nullptr),
             ruccl_config_set_segment_bytes(nullptr, 1),
         };
         for (ruccl_result_t code : codes)
           if (code != RUCCL_ERROR_INVALID_ARGUMENT) return Status(ErrorCode::kInternal, "a NULL comm passed");
         return c_status(RUCCL_ERROR_INVALID_ARGUMENT, ruccl_comm_last_error(nullptr, 0));
       }},
      {api, "NULL output of a query", ErrorCode::kInvalidArgument, "", Callers::kRank0, A::kLosesNothing,
       [](Fixture& f, std::size_t) {
         for (ruccl_result_t code : {ruccl_comm_world_size(f.c, nullptr), ruccl_comm_first_rank(f.c, nullptr),
                                     ruccl_comm_local_count(f.c, nullptr), ruccl_config_create(nullptr)})
           if (code != RUCCL_ERROR_INVALID_ARGUMENT) return Status(ErrorCode::kInternal, "a NULL output passed");
         return Status(ErrorCode::kInvalidArgument, "");
       }},
      {api, "config with a zero budget", ErrorCode::kBudgetTooSmall, "max_chunk_bytes", Callers::kRank0,
       A::kLosesNothing, [](Fixture&, std::size_t) {
         ruccl_config_t* cfg = nullptr;
         if (ruccl_config_create(&cfg) != RUCCL_SUCCESS) return Status(ErrorCode::kInternal, "config");
         const ruccl_result_t code = ruccl_config_set_max_chunk_bytes(cfg, 0);
         const Status s = c_status(code, ruccl_config_last_error(cfg));
         ruccl_config_destroy(cfg);
         return s;
       }},
      {api, "budget below one element", ErrorCode::kBudgetTooSmall, "max_chunk_bytes=3",
       Callers::kRank0, A::kLosesNothing, [](Fixture& f, std::size_t) {
         ruccl_config_t* cfg = nullptr;
         ruccl_comm_t* one = nullptr;
         if (ruccl_config_create(&cfg) != RUCCL_SUCCESS || ruccl_config_set_max_chunk_bytes(cfg, 3) != RUCCL_SUCCESS ||
             ruccl_comm_create_local(1, RUCCL_DEVICE_HOST, nullptr, cfg, &one) != RUCCL_SUCCESS) {
           ruccl_config_destroy(cfg);
           return Status(ErrorCode::kInternal, "setup of a one-rank communicator");
         }
         const Status s = c_status(ruccl_all_reduce(one, 0, f.in[0].data(), f.out[0].data(), kCount,
                                                    RUCCL_F32, RUCCL_SUM, nullptr),
                                   one, 0);
         ruccl_comm_destroy(one);
         ruccl_config_destroy(cfg);
         return s;
       }},
      {api, "create with duplicate devices", ErrorCode::kInvalidArgument, "both use host:4",
       Callers::kRank0, A::kLosesNothing, [](Fixture&, std::size_t) {
         const std::size_t devices[] = {4, 1, 4};
         return create_local(3, RUCCL_DEVICE_HOST, devices);
       }},
      {api, "create with no devices", ErrorCode::kInvalidArgument, "at least one local device",
       Callers::kRank0, A::kLosesNothing, [](Fixture&, std::size_t) {
         return create_local(0, RUCCL_DEVICE_HOST, nullptr);
       }},
      {api, "create with an unknown device kind", ErrorCode::kInvalidArgument, "unknown device kind value 9",
       Callers::kRank0, A::kLosesNothing, [](Fixture&, std::size_t) {
         return create_local(2, 9, nullptr);
       }},
      {api, "create with a NULL output", ErrorCode::kInvalidArgument, "comm (the output pointer) is NULL",
       Callers::kRank0, A::kLosesNothing, [](Fixture&, std::size_t) {
         ruccl_config_t* cfg = nullptr;
         if (ruccl_config_create(&cfg) != RUCCL_SUCCESS) return Status(ErrorCode::kInternal, "config");
         const ruccl_result_t code = ruccl_comm_create_local(2, RUCCL_DEVICE_HOST, nullptr, cfg, nullptr);
         const Status s = c_status(code, ruccl_config_last_error(cfg));
         ruccl_config_destroy(cfg);
         return s;
       }},
  };
}

// ---- the follow-up checks ------------------------------------------------------

// A checked all-reduce on every rank of the row's group.
void expect_group_works(Fixture& f, Api api, Session& session) {
  Failures failures;
  const Bytes expected = expected_reduction(DataType::kF32, ReduceOp::kSum, kWorld, kCount, 3);
  run_ranks(kWorld, failures, [&](std::size_t r) {
    Bytes in = reduce_input_buffer(DataType::kF32, ReduceOp::kSum, r, kCount, 3);
    Bytes out(in.size());
    Status s;
    switch (api) {
      case Api::kCommunicator:
        s = f.comm->all_reduce_into(r, view1(in, DataType::kF32, r), view1(out, DataType::kF32, r),
                                    ReduceOp::kSum);
        break;
      case Api::kSession: {
        auto t = session.all_reduce(r, view1(in, DataType::kF32, r), ReduceOp::kSum);
        s = t.status();
        if (t.is_ok()) std::memcpy(out.data(), t->data(), out.size());
        break;
      }
      case Api::kC:
        s = c_status(ruccl_all_reduce(f.c, r, in.data(), out.data(), kCount, RUCCL_F32, RUCCL_SUM, nullptr),
                     f.c, r);
        break;
    }
    if (!s.is_ok()) return failures.add(r, "follow-up all_reduce: " + describe(s));
    check_bytes(failures, r, "follow-up all_reduce", DataType::kF32, out.data(), expected);
  });
  EXPECT_TRUE(failures.empty()) << failures.report();
}

// Registers every peer of the fresh session that is not registered yet.
void register_the_rest(Session& session) {
  for (PeerId p = 0; p < kWorld; ++p) {
    const Status s = session.register_peer(p, host_device(p), config());
    EXPECT_TRUE(s.is_ok() || s.code() == ErrorCode::kDuplicateRegistration) << describe(s);
  }
}

TEST(BadInput, EveryEntryPointAnswersWithAClearErrorAndLosesNothing) {
  std::vector<Row> rows = communicator_rows();
  for (auto* more : {&session_rows, &c_rows})
    for (Row& row : (*more)()) rows.push_back(std::move(row));
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(api_name(row.api)) + ": " + row.name);
    Fixture f;
    Failures failures;
    std::vector<Status> got(kWorld);
    const std::size_t callers = row.callers == Callers::kEvery ? kWorld : 1;
    const auto t0 = Clock::now();
    run_ranks(callers, failures, [&](std::size_t r) { got[r] = row.call(f, r); });
    EXPECT_LT(seconds_since(t0), 10.0) << "a row waited for a deadline";
    EXPECT_TRUE(failures.empty()) << failures.report();
    for (std::size_t r = 0; r < callers; ++r) {
      EXPECT_EQ(got[r].code(), row.code) << "rank " << r << ": " << describe(got[r]);
      EXPECT_TRUE(contains(got[r].message(), row.says))
          << "rank " << r << ": message lacks '" << row.says << "': " << describe(got[r]);
    }
    for (std::size_t r = 0; r < kWorld; ++r) {
      EXPECT_EQ(f.in[r], f.in_before[r]) << "rank " << r << "'s input changed";
      EXPECT_EQ(f.out[r], f.out_before[r]) << "rank " << r << "'s output was written";
    }
    switch (row.after) {
      case After::kLosesNothing: expect_group_works(f, row.api, f.session); break;
      case After::kRegisterAgain:
        register_the_rest(f.fresh);
        expect_group_works(f, row.api, f.fresh);
        break;
      case After::kNothing: break;
    }
  }
}

// A rank's check is kept for the same request again (a loop over the same
// buffers checks once); any argument that changes is checked anew: a null
// output, a short one, another rank's device, another budget, then the good
// call again.
TEST(BadInput, ARepeatedCallIsCheckedAgainWhenAnArgumentChanges) {
  constexpr std::size_t kRanks = 2, kN = 8;
  auto comm = make_comm(kRanks, test_config(kRanks, std::chrono::seconds(20)));
  Failures f;
  run_ranks(kRanks, f, [&](std::size_t rank) {
    std::vector<float> in(kN + 1, 1.0f + static_cast<float>(rank)), out(kN + 1, 0.0f);
    const DeviceId dev = host_device(rank);
    const TensorView vin = TensorView::of(in.data(), DataType::kF32, kN, dev);
    const TensorView vout = TensorView::of(out.data(), DataType::kF32, kN, dev);
    const auto good = [&](const char* when) {
      std::fill(out.begin(), out.end(), 0.0f);
      const Status s = comm->all_reduce_into(rank, vin, vout, ReduceOp::kSum);
      RANK_CHECK(f, rank, s.is_ok() && out[kN - 1] == 3.0f && out[kN] == 0.0f,
                 when << ": " << describe(s) << " got " << out[kN - 1]);
    };
    const auto bad = [&](const char* what, const TensorView& o, ErrorCode code,
                         CallOptions opt = {}) {
      const Status s = comm->all_reduce_into(rank, vin, o, ReduceOp::kSum, opt);
      RANK_CHECK(f, rank, s.code() == code, what << ": " << describe(s));
    };
    good("first");
    good("again");
    bad("a null output", TensorView::of(nullptr, DataType::kF32, kN, dev),
        ErrorCode::kInvalidArgument);
    good("after the null output");
    bad("a longer output", TensorView::of(out.data(), DataType::kF32, kN + 1, dev),
        ErrorCode::kShapeMismatch);
    good("after the longer output");
    bad("another rank's device",
        TensorView::of(out.data(), DataType::kF32, kN, host_device(1 - rank)),
        ErrorCode::kInvalidArgument);
    good("after the other device");
    bad("a zero budget", vout, ErrorCode::kBudgetTooSmall, CallOptions{0});
    good("after the zero budget");
  });
  EXPECT_TRUE(f.empty()) << f.report();
}

}  // namespace
}  // namespace ruccl::test
