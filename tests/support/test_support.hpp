// Shared helpers of the ruccl tests.
//
//  - half-precision converters (f16 / bf16 bit patterns <-> float),
//  - element codecs: a "logical" value per (dtype, rank, index) stored into a
//    typed buffer, and the closed-form reference reduction of such values,
//  - Failures: a thread-safe collector so that rank threads never assert with
//    gtest macros; the test joins the threads and reports everything at once,
//  - run_ranks: one std::thread per rank, exceptions turned into failures,
//  - small constructors for communicators and views.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "ruccl/ruccl.hpp"

namespace ruccl::test {

// ---- half precision --------------------------------------------------------
std::uint16_t f32_to_f16(float value);   // round to nearest even, inf/nan kept
float f16_to_f32(std::uint16_t bits);
std::uint16_t f32_to_bf16(float value);  // round to nearest even, nan kept
float bf16_to_f32(std::uint16_t bits);

// ---- element codecs --------------------------------------------------------
using Bytes = std::vector<std::byte>;

// The dtypes that reduce (every dtype but kBytes).
inline constexpr DataType kReducible[] = {DataType::kF16, DataType::kBF16, DataType::kF32,
                                          DataType::kF64, DataType::kI8,   DataType::kU8,
                                          DataType::kI32, DataType::kI64,  DataType::kU64};

std::uint64_t splitmix64(std::uint64_t x);

// Logical input of element `index` on `rank` for a reduction test. Floats: a
// small integer (held as int64 bits), chosen so that every reduction over at
// most 8 ranks is exact in every float format (Prod uses +-1, +-2 only).
// Integers: a 64-bit hash, truncated to the element type by encode(), so that
// Sum and Prod wrap.
std::uint64_t reduce_input(DataType dtype, ReduceOp op, std::size_t rank, std::size_t index,
                           std::uint64_t salt = 0);
// Logical value for data-movement tests: distinct-ish and exact in the dtype
// (floats: integers within the format's exact range).
std::uint64_t move_input(DataType dtype, std::size_t rank, std::size_t index,
                         std::uint64_t salt = 0);

// Stores a logical value as one element of `dtype` at dst.
void encode(DataType dtype, std::uint64_t logical, void* dst);
// The reference reduction of one element: `logical` holds one value per rank.
void reference_reduce(DataType dtype, ReduceOp op, std::span<const std::uint64_t> logical,
                      void* dst);

bool element_equal(DataType dtype, const void* a, const void* b);
std::string element_string(DataType dtype, const void* p);
// nullopt when equal, else the first mismatches and how many elements differ.
std::optional<std::string> compare_elements(DataType dtype, const void* actual,
                                            const void* expected, std::size_t count);

// Buffers built from a generator over the element index.
Bytes make_buffer(DataType dtype, std::size_t count,
                  const std::function<std::uint64_t(std::size_t)>& logical);
Bytes reduce_input_buffer(DataType dtype, ReduceOp op, std::size_t rank, std::size_t count,
                          std::uint64_t salt = 0);
Bytes move_input_buffer(DataType dtype, std::size_t rank, std::size_t count,
                        std::uint64_t salt = 0);
// Expected all-reduce result over `world` ranks of reduce_input_buffer.
Bytes expected_reduction(DataType dtype, ReduceOp op, std::size_t world, std::size_t count,
                         std::uint64_t salt = 0);
Bytes filled(std::size_t bytes, std::uint8_t value);

// ---- failures --------------------------------------------------------------
class Failures {
 public:
  void add(std::string what);
  void add(std::size_t rank, const std::string& what);
  bool empty() const;
  std::size_t size() const;
  std::string report() const;  // the first 40, and how many more

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> items_;
  std::size_t total_ = 0;
};

// Records a failure of `rank` unless `cond` holds; `msg` is a stream expression.
#define RANK_CHECK(failures, rank, cond, msg)                                             \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::ostringstream ruccl_check_os_;                                                 \
      ruccl_check_os_ << msg;                                                             \
      (failures).add((rank), std::string("check failed: " #cond " -- ") +                 \
                                 ruccl_check_os_.str());                                  \
    }                                                                                     \
  } while (0)

// Runs fn(rank) on one thread per rank (ranks first .. first + count - 1) and
// joins them all. An exception in a rank becomes a failure.
void run_ranks(std::size_t count, Failures& failures,
               const std::function<void(std::size_t rank)>& fn, std::size_t first = 0);

// ---- construction ------------------------------------------------------------
// A config for n ranks with a test-sized timeout (a hang becomes an error).
Config test_config(std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(30));

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
std::vector<DeviceId> host_devices(std::size_t n, std::size_t first = 0);
// Communicator over host devices 0..n-1 and the host adapter; throws on failure.
std::shared_ptr<Communicator> make_comm(std::size_t n);
std::shared_ptr<Communicator> make_comm(std::size_t n, const Config& config);

inline TensorView view(Bytes& buf, DataType dtype, Shape shape, std::size_t rank) {
  return TensorView{buf.empty() ? nullptr : buf.data(), dtype, std::move(shape),
                    host_device(rank), nullptr};
}
inline TensorView view1(Bytes& buf, DataType dtype, std::size_t rank) {
  return view(buf, dtype, Shape{buf.size() / dtype_size(dtype)}, rank);
}

// ---- good collectives around faults --------------------------------------------
// One f32 sum all_reduce of `elements` on `rank` (reduce_input_buffer's
// inputs); its status.
Status sum_on(Communicator& comm, std::size_t rank, std::size_t elements = 9);
// `count` such all_reduces on every rank, each of which must succeed: the
// failures' report, "" when every one did (ASSERT_EQ(run_good(...), "")).
std::string run_good(Communicator& comm, std::size_t count, std::size_t elements = 9);

std::string describe(const Status& status);
std::string shape_of(const Shape& shape);
// A tensor's dtype and shape (false, with a failure, when either differs: the
// contents are not worth comparing) and its device (a failure if it differs).
bool check_tensor_form(Failures& f, std::size_t rank, const std::string& what, const Tensor& t,
                       DataType dtype, const Shape& shape, DeviceId device);
// Checks a value-form tensor: dtype, shape, device and contents. The device is
// host_device(rank) unless given.
void check_tensor(Failures& f, std::size_t rank, const std::string& what, const Tensor& t,
                  DataType dtype, const Shape& shape, const Bytes& expected,
                  std::optional<DeviceId> device = std::nullopt);
// Checks raw bytes with dtype-aware reporting.
void check_bytes(Failures& f, std::size_t rank, const std::string& what, DataType dtype,
                 const void* actual, const Bytes& expected);

bool contains(const std::string& haystack, const std::string& needle);

// Forwards every verb to the host adapter; tests override the verbs they
// delay, count or break.
class HostForwardingAdapter : public DeviceAdapter {
 public:
  DeviceKind kind() const noexcept override { return inner_->kind(); }
  Result<std::shared_ptr<AdapterState>> prepare(const TensorView& v, DeviceId d) override {
    return inner_->prepare(v, d);
  }
  Status begin(const Queue& q, const AdapterState* p) override { return inner_->begin(q, p); }
  Status finish(const Queue& q) override { return inner_->finish(q); }
  Result<std::shared_ptr<void>> allocate(DeviceId d, std::size_t b) override {
    return inner_->allocate(d, b);
  }
  Result<std::shared_ptr<void>> allocate_host_staging(DeviceId d, std::size_t bytes) override {
    return inner_->allocate_host_staging(d, bytes);
  }
  Result<Ticket> copy(const Queue& q, void* dst, const void* src, std::size_t bytes) override {
    return inner_->copy(q, dst, src, bytes);
  }
  Result<Ticket> reduce(const Queue& q, void* dst, const void* a, const void* b, std::size_t n,
                        DataType dt, ReduceOp op) override {
    return inner_->reduce(q, dst, a, b, n, dt, op);
  }
  Result<Ticket> divide(const Queue& q, void* d, std::size_t n, DataType dt,
                        std::size_t div) override {
    return inner_->divide(q, d, n, dt, div);
  }
  Status wait(const Queue& q, Ticket t) override { return inner_->wait(q, t); }

 protected:
  std::shared_ptr<DeviceAdapter> inner_ = make_host_adapter();
};

}  // namespace ruccl::test
