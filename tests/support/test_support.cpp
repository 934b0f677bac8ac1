#include "test_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <iomanip>
#include <limits>
#include <stdexcept>
#include <thread>
#include <type_traits>

namespace ruccl::test {

// ---- half precision --------------------------------------------------------
std::uint16_t f32_to_f16(float value) {
  std::uint32_t x = 0;
  std::memcpy(&x, &value, sizeof x);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t exp = (x >> 23) & 0xFFu;
  std::uint32_t mant = x & 0x7FFFFFu;
  if (exp == 0xFF) return static_cast<std::uint16_t>(sign | 0x7C00u | (mant ? 0x200u | (mant >> 13) : 0u));
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (e <= 0) {  // f16 subnormal (or zero)
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - e;
    std::uint32_t h = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry may reach inf: correct
  return static_cast<std::uint16_t>(sign | h);
}

float f16_to_f32(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exp = (bits >> 10) & 0x1Fu;
  const std::uint32_t mant = bits & 0x3FFu;
  std::uint32_t x = 0;
  if (exp == 0) {
    const float mag = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -mag : mag;
  }
  if (exp == 31) {
    x = sign | 0x7F800000u | (mant << 13);
  } else {
    x = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float out = 0;
  std::memcpy(&out, &x, sizeof out);
  return out;
}

std::uint16_t f32_to_bf16(float value) {
  std::uint32_t x = 0;
  std::memcpy(&x, &value, sizeof x);
  if ((x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu)) {
    return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  }
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

float bf16_to_f32(std::uint16_t bits) {
  const std::uint32_t x = static_cast<std::uint32_t>(bits) << 16;
  float out = 0;
  std::memcpy(&out, &x, sizeof out);
  return out;
}

// ---- element codecs --------------------------------------------------------
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

namespace {
std::uint64_t from_int(std::int64_t v) { return static_cast<std::uint64_t>(v); }
std::int64_t to_int(std::uint64_t v) { return static_cast<std::int64_t>(v); }

void store_double(DataType dtype, double d, void* dst) {
  switch (dtype) {
    case DataType::kF16: {
      const std::uint16_t h = f32_to_f16(static_cast<float>(d));
      std::memcpy(dst, &h, 2);
      return;
    }
    case DataType::kBF16: {
      const std::uint16_t h = f32_to_bf16(static_cast<float>(d));
      std::memcpy(dst, &h, 2);
      return;
    }
    case DataType::kF32: {
      const float f = static_cast<float>(d);
      std::memcpy(dst, &f, 4);
      return;
    }
    case DataType::kF64:
      std::memcpy(dst, &d, 8);
      return;
    default:
      throw std::logic_error("store_double on a non-float dtype");
  }
}

double load_double(DataType dtype, const void* p) {
  switch (dtype) {
    case DataType::kF16: {
      std::uint16_t h = 0;
      std::memcpy(&h, p, 2);
      return f16_to_f32(h);
    }
    case DataType::kBF16: {
      std::uint16_t h = 0;
      std::memcpy(&h, p, 2);
      return bf16_to_f32(h);
    }
    case DataType::kF32: {
      float f = 0;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DataType::kF64: {
      double d = 0;
      std::memcpy(&d, p, 8);
      return d;
    }
    default:
      throw std::logic_error("load_double on a non-float dtype");
  }
}

template <typename T>
void store_int(std::uint64_t logical, void* dst) {
  const T v = static_cast<T>(logical);  // modular truncation (C++20)
  std::memcpy(dst, &v, sizeof v);
}

template <typename T>
T load_int(const void* p) {
  T v{};
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void reduce_int(ReduceOp op, std::span<const std::uint64_t> logical, void* dst) {
  using U = std::make_unsigned_t<T>;
  const std::size_t world = logical.size();
  U acc = 0;
  T out{};
  if (world == 1 && (op == ReduceOp::kLand || op == ReduceOp::kLor || op == ReduceOp::kLxor)) {
    out = static_cast<T>(logical[0]);  // nothing combines: the input is the result
    std::memcpy(dst, &out, sizeof out);
    return;
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      for (std::uint64_t v : logical) acc = static_cast<U>(std::uint64_t{acc} + static_cast<U>(static_cast<T>(v)));
      out = static_cast<T>(acc);
      if (op == ReduceOp::kMean) {
        if constexpr (std::is_signed_v<T>) {
          out = static_cast<T>(static_cast<std::int64_t>(out) / static_cast<std::int64_t>(world));
        } else {
          out = static_cast<T>(static_cast<std::uint64_t>(out) / world);
        }
      }
      break;
    case ReduceOp::kProd:
      acc = 1;
      for (std::uint64_t v : logical) acc = static_cast<U>(std::uint64_t{acc} * static_cast<U>(static_cast<T>(v)));
      out = static_cast<T>(acc);
      break;
    case ReduceOp::kMin:
      out = std::numeric_limits<T>::max();
      for (std::uint64_t v : logical) out = std::min(out, static_cast<T>(v));
      break;
    case ReduceOp::kMax:
      out = std::numeric_limits<T>::min();
      for (std::uint64_t v : logical) out = std::max(out, static_cast<T>(v));
      break;
    case ReduceOp::kBand:
      acc = static_cast<U>(~U{0});
      for (std::uint64_t v : logical) acc = static_cast<U>(acc & static_cast<U>(v));
      out = static_cast<T>(acc);
      break;
    case ReduceOp::kBor:
      for (std::uint64_t v : logical) acc = static_cast<U>(acc | static_cast<U>(v));
      out = static_cast<T>(acc);
      break;
    case ReduceOp::kBxor:
      for (std::uint64_t v : logical) acc = static_cast<U>(acc ^ static_cast<U>(v));
      out = static_cast<T>(acc);
      break;
    case ReduceOp::kLand: {
      bool all = true;
      for (std::uint64_t v : logical) all = all && static_cast<T>(v) != 0;
      out = static_cast<T>(all);
      break;
    }
    case ReduceOp::kLor: {
      bool any = false;
      for (std::uint64_t v : logical) any = any || static_cast<T>(v) != 0;
      out = static_cast<T>(any);
      break;
    }
    case ReduceOp::kLxor: {
      bool odd = false;
      for (std::uint64_t v : logical) odd = odd != (static_cast<T>(v) != 0);
      out = static_cast<T>(odd);
      break;
    }
  }
  std::memcpy(dst, &out, sizeof out);
}
}  // namespace

std::uint64_t reduce_input(DataType dtype, ReduceOp op, std::size_t rank, std::size_t index,
                           std::uint64_t salt) {
  if (is_floating(dtype)) {
    if (op == ReduceOp::kProd) {
      static constexpr std::int64_t kFactors[] = {1, -1, 2, -2, 1};
      return from_int(kFactors[(rank * 3 + index * 2 + salt) % 5]);
    }
    return from_int(static_cast<std::int64_t>((rank * 7 + index * 3 + salt) % 11) - 5);
  }
  const std::uint64_t bits =
      splitmix64((salt << 48) ^ (static_cast<std::uint64_t>(rank) << 36) ^ index);
  // Logical ops: about one element in three is zero (false), so and/or/xor all vary.
  if (op == ReduceOp::kLand || op == ReduceOp::kLor || op == ReduceOp::kLxor)
    return bits % 3 == 0 ? 0 : bits;
  return bits;
}

std::uint64_t move_input(DataType dtype, std::size_t rank, std::size_t index, std::uint64_t salt) {
  switch (dtype) {
    case DataType::kF16:
      return from_int(static_cast<std::int64_t>((rank * 37 + index * 11 + salt * 5) % 2001) - 1000);
    case DataType::kBF16:
      return from_int(static_cast<std::int64_t>((rank * 37 + index * 11 + salt * 5) % 257) - 128);
    case DataType::kF32:
      return from_int(static_cast<std::int64_t>((rank * 1000003 + index + salt * 7) % (1 << 24)) -
                      (1 << 23));
    case DataType::kF64:
      return from_int(static_cast<std::int64_t>((rank << 40) + index * 3 + salt * 7) - (1ll << 42));
    default:
      return splitmix64((salt << 48) ^ (static_cast<std::uint64_t>(rank) << 36) ^ index ^ 0x5555);
  }
}

void encode(DataType dtype, std::uint64_t logical, void* dst) {
  switch (dtype) {
    case DataType::kF16:
    case DataType::kBF16:
    case DataType::kF32:
    case DataType::kF64:
      store_double(dtype, static_cast<double>(to_int(logical)), dst);
      return;
    case DataType::kI8: return store_int<std::int8_t>(logical, dst);
    case DataType::kU8: return store_int<std::uint8_t>(logical, dst);
    case DataType::kBytes: return store_int<std::uint8_t>(logical, dst);
    case DataType::kI32: return store_int<std::int32_t>(logical, dst);
    case DataType::kI64: return store_int<std::int64_t>(logical, dst);
    case DataType::kU64: return store_int<std::uint64_t>(logical, dst);
  }
  throw std::logic_error("encode: unknown dtype");
}

void reference_reduce(DataType dtype, ReduceOp op, std::span<const std::uint64_t> logical,
                      void* dst) {
  switch (dtype) {
    case DataType::kF16:
    case DataType::kBF16:
    case DataType::kF32:
    case DataType::kF64: {
      double acc = 0;
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kMean:
          for (auto v : logical) acc += static_cast<double>(to_int(v));
          if (op == ReduceOp::kMean) acc /= static_cast<double>(logical.size());
          break;
        case ReduceOp::kProd:
          acc = 1;
          for (auto v : logical) acc *= static_cast<double>(to_int(v));
          break;
        case ReduceOp::kMin:
          acc = std::numeric_limits<double>::infinity();
          for (auto v : logical) acc = std::min(acc, static_cast<double>(to_int(v)));
          break;
        case ReduceOp::kMax:
          acc = -std::numeric_limits<double>::infinity();
          for (auto v : logical) acc = std::max(acc, static_cast<double>(to_int(v)));
          break;
        default: throw std::logic_error("reference_reduce: op takes integer dtypes only");
      }
      store_double(dtype, acc, dst);
      return;
    }
    case DataType::kI8: return reduce_int<std::int8_t>(op, logical, dst);
    case DataType::kU8: return reduce_int<std::uint8_t>(op, logical, dst);
    case DataType::kI32: return reduce_int<std::int32_t>(op, logical, dst);
    case DataType::kI64: return reduce_int<std::int64_t>(op, logical, dst);
    case DataType::kU64: return reduce_int<std::uint64_t>(op, logical, dst);
    case DataType::kBytes: break;
  }
  throw std::logic_error("reference_reduce: dtype does not reduce");
}

bool element_equal(DataType dtype, const void* a, const void* b) {
  if (std::memcmp(a, b, dtype_size(dtype)) == 0) return true;
  if (is_floating(dtype)) {
    const double x = load_double(dtype, a), y = load_double(dtype, b);
    return x == y || (std::isnan(x) && std::isnan(y));  // any NaN matches any NaN
  }
  return false;
}

std::string element_string(DataType dtype, const void* p) {
  std::ostringstream os;
  switch (dtype) {
    case DataType::kF16:
    case DataType::kBF16: {
      std::uint16_t h = 0;
      std::memcpy(&h, p, 2);
      os << load_double(dtype, p) << " (0x" << std::hex << std::setw(4) << std::setfill('0') << h
         << ")";
      break;
    }
    case DataType::kF32:
    case DataType::kF64: os << std::setprecision(17) << load_double(dtype, p); break;
    case DataType::kI8: os << int{load_int<std::int8_t>(p)}; break;
    case DataType::kU8:
    case DataType::kBytes: os << unsigned{load_int<std::uint8_t>(p)}; break;
    case DataType::kI32: os << load_int<std::int32_t>(p); break;
    case DataType::kI64: os << load_int<std::int64_t>(p); break;
    case DataType::kU64: os << load_int<std::uint64_t>(p); break;
  }
  return os.str();
}

std::optional<std::string> compare_elements(DataType dtype, const void* actual,
                                            const void* expected, std::size_t count) {
  const std::size_t size = dtype_size(dtype);
  const auto* a = static_cast<const std::byte*>(actual);
  const auto* e = static_cast<const std::byte*>(expected);
  if (count > 0 && actual == nullptr) return std::string("result data is null");
  std::size_t bad = 0;
  std::ostringstream os;
  for (std::size_t i = 0; i < count; ++i) {
    if (element_equal(dtype, a + i * size, e + i * size)) continue;
    if (bad < 4) {
      os << " [" << i << "] got " << element_string(dtype, a + i * size) << " expected "
         << element_string(dtype, e + i * size) << ";";
    }
    ++bad;
  }
  if (bad == 0) return std::nullopt;
  return std::to_string(bad) + " of " + std::to_string(count) + " elements differ:" + os.str();
}

Bytes make_buffer(DataType dtype, std::size_t count,
                  const std::function<std::uint64_t(std::size_t)>& logical) {
  const std::size_t size = dtype_size(dtype);
  Bytes out(count * size);
  for (std::size_t i = 0; i < count; ++i) encode(dtype, logical(i), out.data() + i * size);
  return out;
}

Bytes reduce_input_buffer(DataType dtype, ReduceOp op, std::size_t rank, std::size_t count,
                          std::uint64_t salt) {
  return make_buffer(dtype, count,
                     [&](std::size_t i) { return reduce_input(dtype, op, rank, i, salt); });
}

Bytes move_input_buffer(DataType dtype, std::size_t rank, std::size_t count, std::uint64_t salt) {
  return make_buffer(dtype, count, [&](std::size_t i) { return move_input(dtype, rank, i, salt); });
}

Bytes expected_reduction(DataType dtype, ReduceOp op, std::size_t world, std::size_t count,
                         std::uint64_t salt) {
  const std::size_t size = dtype_size(dtype);
  Bytes out(count * size);
  std::vector<std::uint64_t> logical(world);
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t r = 0; r < world; ++r) logical[r] = reduce_input(dtype, op, r, i, salt);
    reference_reduce(dtype, op, logical, out.data() + i * size);
  }
  return out;
}

Bytes filled(std::size_t bytes, std::uint8_t value) { return Bytes(bytes, std::byte{value}); }

// ---- failures --------------------------------------------------------------
void Failures::add(std::string what) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++total_;
  if (items_.size() < 200) items_.push_back(std::move(what));
}

void Failures::add(std::size_t rank, const std::string& what) {
  add("rank " + std::to_string(rank) + ": " + what);
}

bool Failures::empty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_ == 0;
}

std::size_t Failures::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_;
}

std::string Failures::report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::ostringstream os;
  os << total_ << " failure(s):\n";
  for (std::size_t i = 0; i < items_.size() && i < 40; ++i) os << "  " << items_[i] << "\n";
  if (total_ > 40) os << "  ... and " << (total_ - 40) << " more\n";
  return os.str();
}

void run_ranks(std::size_t count, Failures& failures,
               const std::function<void(std::size_t rank)>& fn, std::size_t first) {
  std::vector<std::thread> threads;
  threads.reserve(count);
  for (std::size_t r = first; r < first + count; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (const std::exception& e) {
        failures.add(r, std::string("exception: ") + e.what());
      } catch (...) {
        failures.add(r, "unknown exception");
      }
    });
  }
  for (auto& t : threads) t.join();
}

// ---- construction ------------------------------------------------------------
Config test_config(std::size_t n, std::chrono::milliseconds timeout) {
  return Config().with_num_devices(n).with_timeout(timeout);
}

std::vector<DeviceId> host_devices(std::size_t n, std::size_t first) {
  std::vector<DeviceId> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(host_device(first + i));
  return out;
}

std::shared_ptr<Communicator> make_comm(std::size_t n) { return make_comm(n, test_config(n)); }

std::shared_ptr<Communicator> make_comm(std::size_t n, const Config& config) {
  auto comm = Communicator::create(host_devices(n), make_host_adapter(), config);
  if (!comm.is_ok()) throw std::runtime_error("Communicator::create: " + comm.status().to_string());
  return std::move(comm).value();
}

std::string describe(const Status& status) {
  return status.is_ok() ? std::string("ok") : status.to_string();
}

std::string shape_of(const Shape& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

void check_bytes(Failures& f, std::size_t rank, const std::string& what, DataType dtype,
                 const void* actual, const Bytes& expected) {
  const std::size_t count = expected.size() / dtype_size(dtype);
  if (auto diff = compare_elements(dtype, actual, expected.data(), count)) {
    f.add(rank, what + ": " + *diff);
  }
}

bool check_tensor_form(Failures& f, std::size_t rank, const std::string& what, const Tensor& t,
                       DataType dtype, const Shape& shape, DeviceId device) {
  if (t.dtype() != dtype) {
    f.add(rank, what + ": dtype " + std::string(dtype_name(t.dtype())) + ", expected " +
                    std::string(dtype_name(dtype)));
    return false;
  }
  if (t.shape() != shape) {
    f.add(rank, what + ": shape " + shape_of(t.shape()) + ", expected " + shape_of(shape));
    return false;
  }
  if (t.device() != device) f.add(rank, what + ": result on device " + device_name(t.device()));
  return true;
}

void check_tensor(Failures& f, std::size_t rank, const std::string& what, const Tensor& t,
                  DataType dtype, const Shape& shape, const Bytes& expected,
                  std::optional<DeviceId> device) {
  if (!check_tensor_form(f, rank, what, t, dtype, shape, device.value_or(host_device(rank))))
    return;
  check_bytes(f, rank, what, dtype, t.data(), expected);
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

Status sum_on(Communicator& comm, std::size_t rank, std::size_t elements) {
  Bytes in = reduce_input_buffer(DataType::kF32, ReduceOp::kSum, rank, elements, 3);
  return comm.all_reduce(rank, view1(in, DataType::kF32, rank), ReduceOp::kSum).status();
}

std::string run_good(Communicator& comm, std::size_t count, std::size_t elements) {
  Failures f;
  run_ranks(comm.world_size(), f, [&](std::size_t rank) {
    for (std::size_t i = 0; i < count; ++i) {
      const Status s = sum_on(comm, rank, elements);
      RANK_CHECK(f, rank, s.is_ok(), "good collective " << i << ": " << s.to_string());
    }
  });
  return f.empty() ? std::string() : f.report();
}

}  // namespace ruccl::test
