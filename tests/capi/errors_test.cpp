// The C API's bad-input table: every entry point answers bad input with a
// clear code and message, and no C++ exception crosses it.
//
// Collective rows run on a 2-rank in-process communicator where only rank 1
// passes the bad argument: both ranks must get the same code (the error
// reaches every rank), and rank 0's message must name rank 1.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ruccl/ruccl.h"
#include "ruccl/status.hpp"

namespace {

std::string last(const ruccl_comm_t* comm, std::size_t rank) {
  return ruccl_comm_last_error(comm, rank);
}

struct Config {
  ruccl_config_t* config = nullptr;
  Config() {
    EXPECT_EQ(ruccl_config_create(&config), RUCCL_SUCCESS);
    EXPECT_EQ(ruccl_config_set_timeout_ms(config, 20000), RUCCL_SUCCESS);
  }
  ~Config() { ruccl_config_destroy(config); }
};

struct Comm {
  ruccl_comm_t* comm = nullptr;
  explicit Comm(std::size_t n, ruccl_config_t* config = nullptr) {
    Config defaults;
    EXPECT_EQ(ruccl_comm_create_local(n, RUCCL_DEVICE_HOST, nullptr,
                                      config ? config : defaults.config, &comm),
              RUCCL_SUCCESS);
  }
  ~Comm() { ruccl_comm_destroy(comm); }
};

// One rank's call: (comm, rank) -> code.
using RankCall = std::function<ruccl_result_t(ruccl_comm_t*, std::size_t)>;

struct Outcome {
  ruccl_result_t code[2];
  std::string message[2];
};

// Rank 0 runs `good`, rank 1 runs `bad`, each on its own thread.
Outcome run_pair(ruccl_comm_t* comm, const RankCall& good, const RankCall& bad) {
  Outcome o{};
  std::thread t1([&] { o.code[1] = bad(comm, 1); });
  o.code[0] = good(comm, 0);
  t1.join();
  for (std::size_t r = 0; r < 2; ++r) o.message[r] = last(comm, r);
  return o;
}

struct CollectiveRow {
  const char* name;
  RankCall good;
  RankCall bad;
  ruccl_result_t code;
  const char* rank0_says;  // a substring of rank 0's message
};

// Each rank's own buffers (ranks run concurrently: never share an output).
float g_in[2][64], g_out[2][64];
std::size_t g_counts[2] = {4, 4};

enum class Buf { kIn, kOut, kNull };
void* buf(Buf b, std::size_t rank) {
  switch (b) {
    case Buf::kIn: return g_in[rank];
    case Buf::kOut: return g_out[rank];
    case Buf::kNull: return nullptr;
  }
  return nullptr;
}

RankCall all_reduce(Buf in, Buf out, std::size_t count, ruccl_dtype_t dtype = RUCCL_F32,
                    ruccl_op_t op = RUCCL_SUM) {
  return [=](ruccl_comm_t* c, std::size_t rank) {
    return ruccl_all_reduce(c, rank, buf(in, rank), buf(out, rank), count, dtype, op, nullptr);
  };
}

RankCall all_to_all_v(Buf in, const std::size_t* counts, Buf out, std::size_t capacity) {
  return [=](ruccl_comm_t* c, std::size_t rank) {
    return ruccl_all_to_all_v(c, rank, buf(in, rank), counts, buf(out, rank), capacity, nullptr,
                              RUCCL_F32, nullptr);
  };
}

const RankCall kGoodAllReduce = all_reduce(Buf::kIn, Buf::kOut, 8);
constexpr std::size_t kHuge = SIZE_MAX / 2 + 1;  // times 2 (world, or bytes) overflows

std::vector<CollectiveRow> collective_rows() {
  return {
      {"null input", kGoodAllReduce, all_reduce(Buf::kNull, Buf::kOut, 8),
       RUCCL_ERROR_INVALID_ARGUMENT, "rank 1 passed a null input pointer"},
      {"null output", kGoodAllReduce, all_reduce(Buf::kIn, Buf::kNull, 8),
       RUCCL_ERROR_INVALID_ARGUMENT, "rank 1 passed a null output pointer"},
      {"count whose byte size overflows", kGoodAllReduce,
       all_reduce(Buf::kIn, Buf::kOut, SIZE_MAX / 2), RUCCL_ERROR_INVALID_ARGUMENT,
       "overflows size_t"},
      {"unknown dtype", kGoodAllReduce,
       all_reduce(Buf::kIn, Buf::kOut, 8, static_cast<ruccl_dtype_t>(42)),
       RUCCL_ERROR_INVALID_ARGUMENT, "unknown dtype"},
      {"unknown op", kGoodAllReduce,
       all_reduce(Buf::kIn, Buf::kOut, 8, RUCCL_F32, static_cast<ruccl_op_t>(42)),
       RUCCL_ERROR_INVALID_ARGUMENT, "unknown reduction op"},
      {"bytes cannot be reduced", all_reduce(Buf::kIn, Buf::kOut, 8, RUCCL_BYTES),
       all_reduce(Buf::kIn, Buf::kOut, 8, RUCCL_BYTES), RUCCL_ERROR_INVALID_ARGUMENT,
       "cannot be reduced"},
      {"count mismatch", kGoodAllReduce, all_reduce(Buf::kIn, Buf::kOut, 9),
       RUCCL_ERROR_SHAPE_MISMATCH, "rank 1"},
      {"dtype mismatch", kGoodAllReduce, all_reduce(Buf::kIn, Buf::kOut, 8, RUCCL_I32),
       RUCCL_ERROR_DTYPE_MISMATCH, "rank 1"},
      {"op mismatch", kGoodAllReduce, all_reduce(Buf::kIn, Buf::kOut, 8, RUCCL_F32, RUCCL_MAX),
       RUCCL_ERROR_OP_MISMATCH, "rank 1"},
      {"collective mismatch", kGoodAllReduce,
       [](ruccl_comm_t* c, std::size_t rank) {
         return ruccl_broadcast(c, rank, g_in[rank], g_out[rank], 8, RUCCL_F32, 0, nullptr);
       },
       RUCCL_ERROR_COLLECTIVE_MISMATCH, "broadcast"},
      {"all_gather size overflows",
       [](ruccl_comm_t* c, std::size_t rank) {
         return ruccl_all_gather(c, rank, g_in[rank], g_out[rank], 4, RUCCL_U8, nullptr);
       },
       [](ruccl_comm_t* c, std::size_t rank) {
         return ruccl_all_gather(c, rank, g_in[rank], g_out[rank], kHuge, RUCCL_U8, nullptr);
       },
       RUCCL_ERROR_INVALID_ARGUMENT, "overflows size_t"},
      {"reduce_scatter size overflows",
       [](ruccl_comm_t* c, std::size_t rank) {
         return ruccl_reduce_scatter(c, rank, g_in[rank], g_out[rank], 4, RUCCL_U8, RUCCL_SUM, nullptr);
       },
       [](ruccl_comm_t* c, std::size_t rank) {
         return ruccl_reduce_scatter(c, rank, g_in[rank], g_out[rank], kHuge, RUCCL_U8, RUCCL_SUM, nullptr);
       },
       RUCCL_ERROR_INVALID_ARGUMENT, "overflows size_t"},
      {"reduce root outside the world",
       [](ruccl_comm_t* c, std::size_t rank) {
         return ruccl_reduce(c, rank, g_in[rank], g_out[rank], 8, RUCCL_F32, RUCCL_SUM, 2, nullptr);
       },
       [](ruccl_comm_t* c, std::size_t rank) {
         return ruccl_reduce(c, rank, g_in[rank], g_out[rank], 8, RUCCL_F32, RUCCL_SUM, 2, nullptr);
       },
       RUCCL_ERROR_INVALID_ARGUMENT, "root 2 outside a world of 2"},
      {"broadcast root outside the world",
       [](ruccl_comm_t* c, std::size_t rank) {
         return ruccl_broadcast(c, rank, g_in[rank], g_out[rank], 8, RUCCL_F32, 5, nullptr);
       },
       [](ruccl_comm_t* c, std::size_t rank) {
         return ruccl_broadcast(c, rank, g_in[rank], g_out[rank], 8, RUCCL_F32, 5, nullptr);
       },
       RUCCL_ERROR_INVALID_ARGUMENT, "root 5 is outside a world of 2"},
      {"all_to_all_v null send_counts", all_to_all_v(Buf::kIn, g_counts, Buf::kOut, 64),
       all_to_all_v(Buf::kIn, nullptr, Buf::kOut, 64), RUCCL_ERROR_INVALID_ARGUMENT,
       "0 send counts for a world of 2"},
      {"all_to_all_v in-place", all_to_all_v(Buf::kIn, g_counts, Buf::kOut, 64),
       all_to_all_v(Buf::kIn, g_counts, Buf::kIn, 64), RUCCL_ERROR_INVALID_ARGUMENT,
       "out-of-place only"},
      {"all_to_all_v output too small", all_to_all_v(Buf::kIn, g_counts, Buf::kOut, 64),
       all_to_all_v(Buf::kIn, g_counts, Buf::kOut, 3), RUCCL_ERROR_SHAPE_MISMATCH, "rank 1"},
  };
}

TEST(CApiErrors, CollectiveTable) {
  for (const CollectiveRow& row : collective_rows()) {
    SCOPED_TRACE(row.name);
    Comm c(2);
    const Outcome o = run_pair(c.comm, row.good, row.bad);
    EXPECT_EQ(o.code[0], row.code) << ruccl_error_string(o.code[0]) << ": " << o.message[0];
    EXPECT_EQ(o.code[1], row.code) << ruccl_error_string(o.code[1]) << ": " << o.message[1];
    EXPECT_NE(o.message[0].find(row.rank0_says), std::string::npos) << o.message[0];
    EXPECT_NE(o.message[1].find(ruccl_error_string(row.code)), std::string::npos) << o.message[1];
    // The communicator stays usable after an argument error.
    const Outcome again = run_pair(c.comm, kGoodAllReduce, kGoodAllReduce);
    EXPECT_EQ(again.code[0], RUCCL_SUCCESS) << again.message[0];
    EXPECT_EQ(again.code[1], RUCCL_SUCCESS) << again.message[1];
    EXPECT_EQ(again.message[0], "");  // a success clears the rank's message
  }
}

TEST(CApiErrors, BudgetTooSmallForOneElement) {
  Config config;
  ASSERT_EQ(ruccl_config_set_max_chunk_bytes(config.config, 3), RUCCL_SUCCESS);
  Comm c(2, config.config);
  const Outcome o = run_pair(c.comm, kGoodAllReduce, kGoodAllReduce);
  EXPECT_EQ(o.code[0], RUCCL_ERROR_BUDGET_TOO_SMALL) << o.message[0];
  EXPECT_EQ(o.code[1], RUCCL_ERROR_BUDGET_TOO_SMALL) << o.message[1];
  EXPECT_NE(o.message[0].find("3"), std::string::npos) << o.message[0];
}

TEST(CApiErrors, RankOutOfRange) {
  Comm c(2);
  EXPECT_EQ(ruccl_all_reduce(c.comm, 5, g_in[0], g_out[0], 8, RUCCL_F32, RUCCL_SUM, nullptr),
            RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last(c.comm, 5).find("rank 5 is not served by this communicator"), std::string::npos)
      << last(c.comm, 5);
  EXPECT_EQ(last(c.comm, 99), last(c.comm, 5));  // one shared slot for foreign ranks
  EXPECT_EQ(last(c.comm, 0), "");
}

TEST(CApiErrors, NullCommunicator) {
  ruccl_comm_t* none = nullptr;
  std::size_t n = 0;
  EXPECT_EQ(ruccl_all_reduce(none, 0, g_in[0], g_out[0], 8, RUCCL_F32, RUCCL_SUM, nullptr),
            RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ruccl_reduce(none, 0, g_in[0], g_out[0], 8, RUCCL_F32, RUCCL_SUM, 0, nullptr),
            RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ruccl_broadcast(none, 0, g_in[0], g_out[0], 8, RUCCL_F32, 0, nullptr),
            RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ruccl_all_gather(none, 0, g_in[0], g_out[0], 8, RUCCL_F32, nullptr),
            RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ruccl_reduce_scatter(none, 0, g_in[0], g_out[0], 8, RUCCL_F32, RUCCL_SUM, nullptr),
            RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ruccl_all_to_all_v(none, 0, g_in[0], g_counts, g_out[0], 8, nullptr, RUCCL_F32, nullptr),
            RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ruccl_comm_abort(none, "x"), RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ruccl_comm_world_size(none, &n), RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ruccl_comm_first_rank(none, &n), RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ruccl_comm_local_count(none, &n), RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ruccl_comm_last_error(none, 0), "comm is NULL");
  EXPECT_EQ(ruccl_comm_destroy(none), RUCCL_SUCCESS);  // like free(NULL)

  Comm c(1);
  EXPECT_EQ(ruccl_comm_world_size(c.comm, nullptr), RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ruccl_comm_first_rank(c.comm, nullptr), RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ruccl_comm_local_count(c.comm, nullptr), RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ruccl_comm_abort(c.comm, nullptr), RUCCL_SUCCESS);  // NULL reason is fine
  EXPECT_EQ(ruccl_all_reduce(c.comm, 0, g_in[0], g_out[0], 8, RUCCL_F32, RUCCL_SUM, nullptr),
            RUCCL_ERROR_ABORTED);
}

TEST(CApiErrors, ConfigSetters) {
  Config c;
  EXPECT_EQ(ruccl_config_create(nullptr), RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ruccl_config_set_max_chunk_bytes(nullptr, 8), RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ruccl_config_last_error(nullptr), "config is NULL");
  EXPECT_STREQ(ruccl_config_last_error(c.config), "");

  struct Row {
    const char* name;
    std::function<ruccl_result_t()> call;
    ruccl_result_t code;
    const char* says;
  };
  const Row rows[] = {
      {"zero budget", [&] { return ruccl_config_set_max_chunk_bytes(c.config, 0); },
       RUCCL_ERROR_BUDGET_TOO_SMALL, "max_chunk_bytes"},
      {"zero segment", [&] { return ruccl_config_set_segment_bytes(c.config, 0); },
       RUCCL_ERROR_INVALID_ARGUMENT, "segment_bytes"},
      {"zero timeout", [&] { return ruccl_config_set_timeout_ms(c.config, 0); },
       RUCCL_ERROR_INVALID_ARGUMENT, "timeout must be positive"},
      {"endless timeout", [&] { return ruccl_config_set_timeout_ms(c.config, UINT64_MAX); },
       RUCCL_ERROR_INVALID_ARGUMENT, "never waits without a deadline"},
      {"unknown strategy",
       [&] { return ruccl_config_set_strategy(c.config, static_cast<ruccl_strategy_t>(7)); },
       RUCCL_ERROR_INVALID_ARGUMENT, "unknown strategy value 7"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(row.call(), row.code);
    EXPECT_NE(std::string(ruccl_config_last_error(c.config)).find(row.says), std::string::npos)
        << ruccl_config_last_error(c.config);
  }
  // A failed setter leaves the config as it was: the 20 s timeout still holds.
  EXPECT_EQ(ruccl_config_set_strategy(c.config, RUCCL_STRATEGY_FLAT_RING), RUCCL_SUCCESS);
  EXPECT_EQ(ruccl_config_set_max_chunk_bytes(c.config, 1 << 20), RUCCL_SUCCESS);
}

TEST(CApiErrors, ConfigFromEnvironment) {
  Config c;
  ::setenv("RUCCL_TIMEOUT", "soon", 1);
  EXPECT_EQ(ruccl_config_load_env(c.config), RUCCL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ruccl_config_last_error(c.config)).find("RUCCL_TIMEOUT='soon'"),
            std::string::npos)
      << ruccl_config_last_error(c.config);
  ::setenv("RUCCL_TIMEOUT", "2.5", 1);
  EXPECT_EQ(ruccl_config_load_env(c.config), RUCCL_SUCCESS);
  ::unsetenv("RUCCL_TIMEOUT");
}

TEST(CApiErrors, Creation) {
  Config c;
  ruccl_comm_t* comm = reinterpret_cast<ruccl_comm_t*>(&c);  // must be reset to NULL
  struct Row {
    const char* name;
    std::function<ruccl_result_t()> call;
    ruccl_result_t code;
    const char* says;
  };
  const std::size_t duplicate[] = {0, 1, 0};
  const Row rows[] = {
      {"no devices",
       [&] { return ruccl_comm_create_local(0, RUCCL_DEVICE_HOST, nullptr, c.config, &comm); },
       RUCCL_ERROR_INVALID_ARGUMENT, "at least one local device"},
      {"unknown device kind",
       [&] {
         return ruccl_comm_create_local(2, static_cast<ruccl_device_kind_t>(7), nullptr, c.config,
                                        &comm);
       },
       RUCCL_ERROR_INVALID_ARGUMENT, "unknown device kind value 7"},
      {"duplicate devices",
       [&] { return ruccl_comm_create_local(3, RUCCL_DEVICE_HOST, duplicate, c.config, &comm); },
       RUCCL_ERROR_INVALID_ARGUMENT, "devices must be distinct: ranks 0 and 2 both use host:0"},
      {"null output",
       [&] { return ruccl_comm_create_local(2, RUCCL_DEVICE_HOST, nullptr, c.config, nullptr); },
       RUCCL_ERROR_INVALID_ARGUMENT, "comm (the output pointer) is NULL"},
      // The throwing path: a device list no vector can hold throws inside
      // ruccl (std::length_error); the C API turns it into Internal.
      {"absurd device count",
       [&] {
         return ruccl_comm_create_local(SIZE_MAX / 8, RUCCL_DEVICE_HOST, nullptr, c.config, &comm);
       },
       RUCCL_ERROR_INTERNAL, "unexpected exception"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(row.call(), row.code);
    EXPECT_EQ(comm, nullptr);
    EXPECT_NE(std::string(ruccl_config_last_error(c.config)).find(row.says), std::string::npos)
        << ruccl_config_last_error(c.config);
    EXPECT_NE(std::string(ruccl_config_last_error(c.config)).find("ruccl_comm_create_local"),
              std::string::npos);
  }
  // NULL config: the defaults, and the code alone on failure.
  EXPECT_EQ(ruccl_comm_create_local(0, RUCCL_DEVICE_HOST, nullptr, nullptr, &comm),
            RUCCL_ERROR_INVALID_ARGUMENT);
}

// CUDA devices: Unsupported in a build without the backend or without a GPU.
TEST(CApiErrors, CudaDevicesWhereTheyMayBeMissing) {
  Config c;
  ruccl_comm_t* comm = nullptr;
  const ruccl_result_t r = ruccl_comm_create_local(2, RUCCL_DEVICE_CUDA, nullptr, c.config, &comm);
  if (r == RUCCL_SUCCESS) {
    ruccl_comm_destroy(comm);
    GTEST_SKIP() << "a usable GPU: nothing to check here";
  }
  EXPECT_EQ(r, RUCCL_ERROR_UNSUPPORTED) << ruccl_config_last_error(c.config);
}

// Without MPI initialised (or without MPI in the build), creation over MPI
// fails cleanly instead of calling into an uninitialised MPI.
TEST(CApiErrors, MpiCreationWithoutMpi) {
  Config c;
  ruccl_comm_t* comm = nullptr;
  const ruccl_result_t r = ruccl_comm_create_mpi_f(0, 1, RUCCL_DEVICE_HOST, nullptr, c.config, &comm);
  EXPECT_TRUE(r == RUCCL_ERROR_INVALID_ARGUMENT || r == RUCCL_ERROR_UNSUPPORTED)
      << ruccl_error_string(r);
  EXPECT_EQ(comm, nullptr);
  const std::string message = ruccl_config_last_error(c.config);
  EXPECT_TRUE(message.find("MPI is not initialised") != std::string::npos ||
              message.find("built without MPI") != std::string::npos)
      << message;
}

// Every C code names the same kind as the C++ ErrorCode of the same value.
TEST(CApiErrors, CodesMatchTheCppErrorCodes) {
  EXPECT_STREQ(ruccl_error_string(RUCCL_SUCCESS), "Success");
  for (int code = 1; code <= static_cast<int>(ruccl::kLastErrorCode); ++code)
    EXPECT_EQ(ruccl_error_string(static_cast<ruccl_result_t>(code)),
              ruccl::error_code_name(static_cast<ruccl::ErrorCode>(code)));
  EXPECT_STREQ(ruccl_error_string(static_cast<ruccl_result_t>(1000)), "Unknown");
  EXPECT_EQ(ruccl_dtype_size(RUCCL_BF16), 2u);
  EXPECT_EQ(ruccl_dtype_size(RUCCL_U64), 8u);
  EXPECT_EQ(ruccl_dtype_size(static_cast<ruccl_dtype_t>(77)), 0u);
}

}  // namespace
