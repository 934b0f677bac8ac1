// world_collectives_test: every collective of a world communicator, checked
// against closed forms, under both global strategies.
//
//   mpirun -np P world_collectives_test [--devices-per-process D]
//
// Every process drives D host devices, one thread each (global rank =
// first_rank() + local index). Two world communicators are created up front,
// one per GlobalStrategy (hierarchical, flat_ring), and live side by side: the
// same suite runs on each, then the two are used alternately. The suite:
//   all_reduce   Sum/Mean/Min/Max/Prod x f32/f64/i32/i64/u8/f16/bf16 x counts
//                {0, 1, 2, 7, world-1, world+1, 1003} (+ 65537 and a 2-D shape),
//                value / into / in-place forms
//   reduce       roots 0, last, middle; value / into / in-place; the non-roots'
//                outputs untouched
//   broadcast    roots 0, last, middle; value / into / in-place; u8, bytes, f16...
//   all_gather   1-D, 2-D, 3-D and zero-row shapes; value / into / in-place
//   reduce_scatter  rows {0, 1, world-1, world, world+1, 2 world+3, 1003} x
//                row widths {1, 3}; value / into / in-place (shard inside `in`)
//   all_to_all_v ragged counts with zeros, all-zero, all-to-one; rows of 1 and 3;
//                value / into (with a spare row that must stay untouched)
//   budgets      CallOptions::max_chunk_bytes of one element / one row (many
//                messages), and below one element: kBudgetTooSmall everywhere
//   sequences    200 tiny all-reduces back to back, then mixed kinds, roots
//                and sizes back to back (messages of consecutive collectives
//                must not mix)
// Inputs of non-in-place calls must be unchanged. Values are exact in every
// dtype (tests/support's reduce_input / move_input; float Prod factors vary by
// index here). Both communicators are then used alternately from the same
// threads, and concurrently from separate threads.
// Failures are collected per process (never thrown); at the end the processes
// all-reduce their failure counts with ruccl and every process prints its own.
// Exit 0 only if no rank anywhere failed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ruccl/ruccl.hpp"
#include "ruccl/world.hpp"
#include "test_support.hpp"

namespace {

using namespace ruccl;
using namespace ruccl::test;

enum class Form { kValue, kInto, kInPlace };
const char* form_name(Form f) {
  switch (f) {
    case Form::kValue: return "value";
    case Form::kInto: return "into";
    case Form::kInPlace: return "in-place";
  }
  return "?";
}
Form form_of(std::size_t i) { return static_cast<Form>(i % 3); }

Shape rows_shape(std::size_t rows, std::size_t width) {
  return width == 1 ? Shape{rows} : Shape{rows, width};
}

std::vector<std::size_t> unique_sizes(std::vector<std::size_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Reduction inputs: tests/support's reduce_input, except float Prod, whose
// factors there do not vary with the index (index * 5 % 5 == 0); here they do
// (+-1, +-2, so products over up to 9 ranks stay exact in every float format).
std::uint64_t input_logical(DataType dt, ReduceOp op, std::size_t rank, std::size_t index,
                            std::uint64_t salt) {
  if (is_floating(dt) && op == ReduceOp::kProd) {
    static constexpr std::int64_t kFactors[] = {1, -1, 2, -2, 1};
    return static_cast<std::uint64_t>(kFactors[(rank * 3 + index * 2 + salt) % 5]);
  }
  return reduce_input(dt, op, rank, index, salt);
}
Bytes input_buffer(DataType dt, ReduceOp op, std::size_t rank, std::size_t count,
                   std::uint64_t salt) {
  return make_buffer(dt, count, [&](std::size_t i) { return input_logical(dt, op, rank, i, salt); });
}
Bytes expected_result(DataType dt, ReduceOp op, std::size_t world, std::size_t count,
                      std::uint64_t salt) {
  const std::size_t size = dtype_size(dt);
  Bytes out(count * size);
  std::vector<std::uint64_t> logical(world);
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t r = 0; r < world; ++r) logical[r] = input_logical(dt, op, r, i, salt);
    reference_reduce(dt, op, logical, out.data() + i * size);
  }
  return out;
}

Bytes slice(const Bytes& b, std::size_t offset, std::size_t bytes) {
  return Bytes(b.begin() + static_cast<std::ptrdiff_t>(offset),
               b.begin() + static_cast<std::ptrdiff_t>(offset + bytes));
}

// One rank's view of one run of the suite.
struct Rank {
  Communicator& comm;
  std::size_t rank;   // global
  DeviceId dev;       // this rank's local device
  std::size_t world;
  Failures& f;
  std::string label;  // the strategy

  TensorView view(Bytes& b, DataType dt, Shape shape) const {
    return TensorView{b.empty() ? nullptr : b.data(), dt, std::move(shape), dev, nullptr};
  }
  TensorView view_at(Bytes& b, std::size_t byte_offset, DataType dt, Shape shape) const {
    return TensorView{b.data() + byte_offset, dt, std::move(shape), dev, nullptr};
  }
  void fail(const std::string& what) { f.add(rank, label + ": " + what); }
  void check(const std::string& what, const Tensor& t, DataType dt, const Shape& shape,
             const Bytes& expected) {
    check_tensor(f, rank, label + ": " + what, t, dt, shape, expected, dev);
  }
  void check_raw(const std::string& what, DataType dt, const void* actual, const Bytes& expected) {
    check_bytes(f, rank, label + ": " + what, dt, actual, expected);
  }
  void unchanged(const std::string& what, const Bytes& now, const Bytes& before) {
    if (now != before) fail(what + ": input changed");
  }

  // ---- all_reduce ------------------------------------------------------------
  void all_reduce_case(DataType dt, ReduceOp op, const Shape& shape, Form form, std::uint64_t salt,
                       CallOptions opts = {}) {
    const std::size_t count = shape_count(shape).value_or(0);
    const std::string what = "all_reduce " + std::string(dtype_name(dt)) + " " +
                             std::string(op_name(op)) + " " + shape_of(shape) + " " +
                             form_name(form) +
                             (opts.max_chunk_bytes ? " budget " + std::to_string(*opts.max_chunk_bytes) : "");
    Bytes in = input_buffer(dt, op, rank, count, salt);
    const Bytes original = in;
    const Bytes want = expected_result(dt, op, world, count, salt);
    const TensorView iv = view(in, dt, shape);
    switch (form) {
      case Form::kValue: {
        auto r = comm.all_reduce(rank, iv, op, opts);
        if (!r) return fail(what + ": " + describe(r.status()));
        check(what, *r, dt, shape, want);
        unchanged(what, in, original);
        return;
      }
      case Form::kInto: {
        Bytes out = filled(in.size(), 0xA5);
        Status s = comm.all_reduce_into(rank, iv, view(out, dt, shape), op, opts);
        if (!s.is_ok()) return fail(what + ": " + describe(s));
        check_raw(what, dt, out.data(), want);
        unchanged(what, in, original);
        return;
      }
      case Form::kInPlace: {
        Status s = comm.all_reduce_into(rank, iv, iv, op, opts);
        if (!s.is_ok()) return fail(what + ": " + describe(s));
        check_raw(what, dt, in.data(), want);
        return;
      }
    }
  }

  void all_reduces() {
    const DataType dtypes[] = {DataType::kF32, DataType::kF64, DataType::kI32, DataType::kI64,
                               DataType::kU8,  DataType::kF16, DataType::kBF16};
    const auto counts = unique_sizes({0, 1, 2, 7, world - 1, world + 1, 1003});
    std::size_t i = 0;
    for (DataType dt : dtypes)
      for (ReduceOp op : kAllReduceOps)
        for (std::size_t n : counts) {
          all_reduce_case(dt, op, Shape{n}, form_of(i), i);
          ++i;
        }
    // One large count per dtype, and a 2-D shape with odd rows.
    std::size_t k = 0;
    for (DataType dt : dtypes) {
      all_reduce_case(dt, kAllReduceOps[k % 5], Shape{65537}, form_of(k), 1000 + k);
      all_reduce_case(dt, kAllReduceOps[(k + 2) % 5], Shape{world + 2, 3}, form_of(k + 1), 2000 + k);
      ++k;
    }
    // The two remaining reducible dtypes, once each.
    all_reduce_case(DataType::kI8, ReduceOp::kSum, Shape{1003}, Form::kValue, 3000);
    all_reduce_case(DataType::kU64, ReduceOp::kProd, Shape{world + 1}, Form::kInto, 3001);
  }

  // ---- reduce ----------------------------------------------------------------
  void reduce_case(DataType dt, ReduceOp op, std::size_t count, std::size_t root, Form form,
                   std::uint64_t salt, CallOptions opts = {}) {
    const std::string what = "reduce " + std::string(dtype_name(dt)) + " " +
                             std::string(op_name(op)) + " count " + std::to_string(count) +
                             " root " + std::to_string(root) + " " + form_name(form) +
                             (opts.max_chunk_bytes ? " budget " + std::to_string(*opts.max_chunk_bytes) : "");
    Bytes in = input_buffer(dt, op, rank, count, salt);
    const Bytes original = in;
    const Bytes want = expected_result(dt, op, world, count, salt);
    const TensorView iv = view(in, dt, Shape{count});
    const bool is_root = rank == root;
    switch (form) {
      case Form::kValue: {
        auto r = comm.reduce(rank, iv, op, root, opts);
        if (!r) return fail(what + ": " + describe(r.status()));
        if (r->has_value() != is_root)
          return fail(what + (is_root ? ": no result at the root" : ": a result off the root"));
        if (is_root) check(what, **r, dt, Shape{count}, want);
        unchanged(what, in, original);
        return;
      }
      case Form::kInto: {
        // Non-roots alternate between an untouched sentinel buffer and an empty view.
        const bool empty_out = !is_root && rank % 2 == 1;
        Bytes out = filled(empty_out ? 0 : in.size(), 0x5A);
        const Bytes sentinel = out;
        const TensorView ov = empty_out ? TensorView{nullptr, dt, Shape{0}, dev, nullptr}
                                        : view(out, dt, Shape{count});
        Status s = comm.reduce_into(rank, iv, ov, op, root, opts);
        if (!s.is_ok()) return fail(what + ": " + describe(s));
        if (is_root) check_raw(what, dt, out.data(), want);
        else if (out != sentinel) fail(what + ": a non-root's output was written");
        unchanged(what, in, original);
        return;
      }
      case Form::kInPlace: {
        Status s = comm.reduce_into(rank, iv, iv, op, root, opts);
        if (!s.is_ok()) return fail(what + ": " + describe(s));
        if (is_root) check_raw(what, dt, in.data(), want);
        else unchanged(what + " (non-root, in-place)", in, original);
        return;
      }
    }
  }

  std::vector<std::size_t> roots() const { return unique_sizes({0, world - 1, world / 2}); }

  void reduces() {
    std::size_t i = 0;
    for (std::size_t root : roots()) {
      reduce_case(DataType::kF32, ReduceOp::kSum, 1003, root, form_of(i++), 100 + root);
      reduce_case(DataType::kI32, ReduceOp::kMax, 7, root, form_of(i++), 110 + root);
      reduce_case(DataType::kBF16, ReduceOp::kMean, world + 1, root, form_of(i++), 120 + root);
      reduce_case(DataType::kU8, ReduceOp::kProd, 2, root, form_of(i++), 130 + root);
      reduce_case(DataType::kF64, ReduceOp::kMin, 0, root, form_of(i++), 140 + root);
      reduce_case(DataType::kI64, ReduceOp::kSum, 1, root, form_of(i++), 150 + root);
    }
    reduce_case(DataType::kF16, ReduceOp::kSum, 65537, world - 1, Form::kInto, 160);
  }

  // ---- broadcast -------------------------------------------------------------
  void broadcast_case(DataType dt, const Shape& shape, std::size_t root, Form form,
                      std::uint64_t salt, CallOptions opts = {}) {
    const std::size_t count = shape_count(shape).value_or(0);
    const std::string what = "broadcast " + std::string(dtype_name(dt)) + " " + shape_of(shape) +
                             " root " + std::to_string(root) + " " + form_name(form) +
                             (opts.max_chunk_bytes ? " budget " + std::to_string(*opts.max_chunk_bytes) : "");
    const Bytes want = move_input_buffer(dt, root, count, salt);
    const bool is_root = rank == root;
    Bytes in = is_root ? want : Bytes{};
    const TensorView iv = view(in, dt, shape);
    switch (form) {
      case Form::kValue: {
        auto r = comm.broadcast(rank, is_root ? &iv : nullptr, opts);
        if (!r) return fail(what + ": " + describe(r.status()));
        check(what, *r, dt, shape, want);
        if (is_root) unchanged(what, in, want);
        return;
      }
      case Form::kInto: {
        Bytes out = filled(want.size(), 0xC3);
        Status s = comm.broadcast_into(rank, is_root ? &iv : nullptr, view(out, dt, shape), opts);
        if (!s.is_ok()) return fail(what + ": " + describe(s));
        check_raw(what, dt, out.data(), want);
        if (is_root) unchanged(what, in, want);
        return;
      }
      case Form::kInPlace: {
        // The root's output is its input; the others receive into their own buffer.
        Bytes out = is_root ? Bytes{} : filled(want.size(), 0xC3);
        Bytes& target = is_root ? in : out;
        const TensorView ov = view(target, dt, shape);
        Status s = comm.broadcast_into(rank, is_root ? &iv : nullptr, ov, opts);
        if (!s.is_ok()) return fail(what + ": " + describe(s));
        check_raw(what, dt, target.data(), want);
        return;
      }
    }
  }

  void broadcasts() {
    std::size_t i = 0;
    for (std::size_t root : roots()) {
      broadcast_case(DataType::kF64, Shape{1003}, root, form_of(i++), 200 + root);
      broadcast_case(DataType::kU8, Shape{world + 1}, root, form_of(i++), 210 + root);
      broadcast_case(DataType::kBytes, Shape{1}, root, form_of(i++), 220 + root);
      broadcast_case(DataType::kF16, Shape{0}, root, form_of(i++), 230 + root);
      broadcast_case(DataType::kI32, Shape{7, 3}, root, form_of(i++), 240 + root);
      broadcast_case(DataType::kBF16, Shape{2}, root, form_of(i++), 250 + root);
    }
    broadcast_case(DataType::kI64, Shape{65537}, world / 2, Form::kInto, 260);
  }

  // ---- all_gather ------------------------------------------------------------
  void all_gather_case(DataType dt, const Shape& shape, Form form, std::uint64_t salt,
                       CallOptions opts = {}) {
    const std::size_t count = shape_count(shape).value_or(0);
    const std::size_t esz = dtype_size(dt);
    const std::string what = "all_gather " + std::string(dtype_name(dt)) + " " + shape_of(shape) +
                             " " + form_name(form) +
                             (opts.max_chunk_bytes ? " budget " + std::to_string(*opts.max_chunk_bytes) : "");
    Bytes want;
    for (std::size_t r = 0; r < world; ++r) {
      const Bytes part = move_input_buffer(dt, r, count, salt);
      want.insert(want.end(), part.begin(), part.end());
    }
    Shape out_shape = shape;
    out_shape[0] *= world;
    Bytes in = move_input_buffer(dt, rank, count, salt);
    const Bytes original = in;
    switch (form) {
      case Form::kValue: {
        auto r = comm.all_gather(rank, view(in, dt, shape), opts);
        if (!r) return fail(what + ": " + describe(r.status()));
        check(what, *r, dt, out_shape, want);
        unchanged(what, in, original);
        return;
      }
      case Form::kInto: {
        Bytes out = filled(want.size(), 0x3C);
        Status s = comm.all_gather_into(rank, view(in, dt, shape), view(out, dt, out_shape), opts);
        if (!s.is_ok()) return fail(what + ": " + describe(s));
        check_raw(what, dt, out.data(), want);
        unchanged(what, in, original);
        return;
      }
      case Form::kInPlace: {
        // `in` is this rank's block inside `out`.
        Bytes out = filled(want.size(), 0x3C);
        if (!in.empty()) std::memcpy(out.data() + rank * count * esz, in.data(), in.size());
        const TensorView ov = view(out, dt, out_shape);
        const TensorView iv = out.empty() ? view(out, dt, shape)
                                          : view_at(out, rank * count * esz, dt, shape);
        Status s = comm.all_gather_into(rank, iv, ov, opts);
        if (!s.is_ok()) return fail(what + ": " + describe(s));
        check_raw(what, dt, out.data(), want);
        return;
      }
    }
  }

  void all_gathers() {
    const DataType dtypes[] = {DataType::kI32, DataType::kBytes, DataType::kF16, DataType::kF64};
    const Shape shapes[] = {{1}, {3}, {1, 5}, {3, 5}, {0, 4}, {2, 2, 3}, {1003}};
    std::size_t i = 0;
    for (const Shape& s : shapes)
      for (std::size_t k = 0; k < 2; ++k, ++i) all_gather_case(dtypes[i % 4], s, form_of(i), 300 + i);
  }

  // ---- reduce_scatter --------------------------------------------------------
  void reduce_scatter_case(DataType dt, ReduceOp op, std::size_t rows, std::size_t width, Form form,
                           std::uint64_t salt, CallOptions opts = {}) {
    const Shape shape = rows_shape(rows, width);
    const std::size_t count = rows * width;
    const std::size_t esz = dtype_size(dt);
    const std::string what = "reduce_scatter " + std::string(dtype_name(dt)) + " " +
                             std::string(op_name(op)) + " " + shape_of(shape) + " " +
                             form_name(form) +
                             (opts.max_chunk_bytes ? " budget " + std::to_string(*opts.max_chunk_bytes) : "");
    const std::size_t base = rows / world, extra = rows % world;
    const std::size_t mine = base + (rank < extra ? 1 : 0);
    const std::size_t first = rank * base + std::min(rank, extra);
    const Shape out_shape = rows_shape(mine, width);
    const Bytes want = slice(expected_result(dt, op, world, count, salt), first * width * esz,
                             mine * width * esz);
    Bytes in = input_buffer(dt, op, rank, count, salt);
    const Bytes original = in;
    const TensorView iv = view(in, dt, shape);
    switch (form) {
      case Form::kValue: {
        auto r = comm.reduce_scatter(rank, iv, op, opts);
        if (!r) return fail(what + ": " + describe(r.status()));
        check(what, *r, dt, out_shape, want);
        unchanged(what, in, original);
        return;
      }
      case Form::kInto: {
        Bytes out = filled(want.size(), 0x77);
        Status s = comm.reduce_scatter_into(rank, iv, view(out, dt, out_shape), op, opts);
        if (!s.is_ok()) return fail(what + ": " + describe(s));
        check_raw(what, dt, out.data(), want);
        unchanged(what, in, original);
        return;
      }
      case Form::kInPlace: {
        const TensorView ov = in.empty() ? view(in, dt, out_shape)
                                         : view_at(in, first * width * esz, dt, out_shape);
        Status s = comm.reduce_scatter_into(rank, iv, ov, op, opts);
        if (!s.is_ok()) return fail(what + ": " + describe(s));
        check_raw(what, dt, in.data() + first * width * esz, want);
        return;
      }
    }
  }

  void reduce_scatters() {
    const DataType dtypes[] = {DataType::kF32, DataType::kI64, DataType::kBF16, DataType::kI32,
                               DataType::kF64};
    const auto rows = unique_sizes({0, 1, world - 1, world, world + 1, 2 * world + 3, 1003});
    std::size_t i = 0;
    for (std::size_t r : rows)
      for (std::size_t width : {std::size_t{1}, std::size_t{3}}) {
        reduce_scatter_case(dtypes[i % 5], kAllReduceOps[i % 5], r, width, form_of(i), 400 + i);
        ++i;
      }
  }

  // ---- all_to_all_v ----------------------------------------------------------
  using CountsFn = std::size_t (*)(std::size_t src, std::size_t dst, std::size_t world, std::uint64_t salt);
  static std::uint64_t a2a_logical(DataType dt, std::size_t src, std::size_t dst, std::size_t k) {
    const std::int64_t v = static_cast<std::int64_t>(src * 10007 + dst * 101 + k);
    if (dt == DataType::kF16 || dt == DataType::kBF16) return static_cast<std::uint64_t>(v % 201 - 100);
    return static_cast<std::uint64_t>(v);
  }

  void all_to_all_v_case(DataType dt, std::size_t width, CountsFn counts_of, Form form,
                         std::uint64_t salt, const std::string& name, CallOptions opts = {}) {
    const std::size_t esz = dtype_size(dt);
    const std::string what = "all_to_all_v " + name + " " + std::string(dtype_name(dt)) +
                             " width " + std::to_string(width) + " " + form_name(form) +
                             (opts.max_chunk_bytes ? " budget " + std::to_string(*opts.max_chunk_bytes) : "");
    std::vector<std::size_t> send(world), recv(world);
    std::size_t send_rows = 0, recv_rows = 0;
    for (std::size_t d = 0; d < world; ++d) {
      send[d] = counts_of(rank, d, world, salt);
      recv[d] = counts_of(d, rank, world, salt);
      send_rows += send[d];
      recv_rows += recv[d];
    }
    // Row j of the block to d holds a2a_logical(rank, d, j * width + c).
    Bytes in(send_rows * width * esz);
    std::size_t at = 0;
    for (std::size_t d = 0; d < world; ++d)
      for (std::size_t k = 0; k < send[d] * width; ++k, ++at)
        encode(dt, a2a_logical(dt, rank, d, k), in.data() + at * esz);
    Bytes want(recv_rows * width * esz);
    at = 0;
    for (std::size_t s = 0; s < world; ++s)
      for (std::size_t k = 0; k < recv[s] * width; ++k, ++at)
        encode(dt, a2a_logical(dt, s, rank, k), want.data() + at * esz);
    const Bytes original = in;
    const TensorView iv = view(in, dt, rows_shape(send_rows, width));
    if (form == Form::kValue) {
      auto r = comm.all_to_all_v(rank, iv, send, opts);
      if (!r) return fail(what + ": " + describe(r.status()));
      if (r->recv_counts != recv) fail(what + ": recv_counts differ");
      check(what, r->data, dt, rows_shape(recv_rows, width), want);
    } else {
      // One spare row past the received ones must stay untouched.
      Bytes out = filled(want.size() + width * esz, 0x99);
      std::vector<std::size_t> got;
      Status s = comm.all_to_all_v_into(rank, iv, send, view(out, dt, rows_shape(recv_rows + 1, width)),
                                        got, opts);
      if (!s.is_ok()) return fail(what + ": " + describe(s));
      if (got != recv) fail(what + ": recv_counts differ");
      check_raw(what, dt, out.data(), want);
      for (std::size_t b = want.size(); b < out.size(); ++b)
        if (out[b] != std::byte{0x99}) {
          fail(what + ": the spare row was written");
          break;
        }
    }
    unchanged(what, in, original);
  }

  void all_to_all_vs() {
    auto ragged = [](std::size_t s, std::size_t d, std::size_t, std::uint64_t salt) -> std::size_t {
      return (3 * s + 5 * d + salt) % 4;  // 0..3 rows, zeros included
    };
    auto zeros = [](std::size_t, std::size_t, std::size_t, std::uint64_t) -> std::size_t { return 0; };
    auto to_last = [](std::size_t s, std::size_t d, std::size_t w, std::uint64_t) -> std::size_t {
      return d == w - 1 ? 2 + s : 0;
    };
    auto big = [](std::size_t s, std::size_t d, std::size_t, std::uint64_t salt) -> std::size_t {
      return (s + d + salt) % 2 == 0 ? 301 : 0;
    };
    const DataType dtypes[] = {DataType::kI32, DataType::kF64, DataType::kBytes, DataType::kF16};
    std::size_t i = 0;
    for (std::uint64_t salt = 0; salt < 4; ++salt)
      for (std::size_t width : {std::size_t{1}, std::size_t{3}}) {
        all_to_all_v_case(dtypes[i % 4], width, ragged, i % 2 ? Form::kInto : Form::kValue, salt, "ragged");
        ++i;
      }
    all_to_all_v_case(DataType::kI32, 2, zeros, Form::kValue, 0, "all-zero");
    all_to_all_v_case(DataType::kI64, 2, zeros, Form::kInto, 0, "all-zero");
    all_to_all_v_case(DataType::kBF16, 3, to_last, Form::kValue, 0, "to-last");
    all_to_all_v_case(DataType::kU8, 1, to_last, Form::kInto, 0, "to-last");
    all_to_all_v_case(DataType::kF32, 5, big, Form::kValue, 1, "big");
  }

  // ---- tiny budgets ----------------------------------------------------------
  void budgets() {
    auto budget = [](std::size_t bytes) {
      CallOptions o;
      o.max_chunk_bytes = bytes;
      return o;
    };
    all_reduce_case(DataType::kF32, ReduceOp::kSum, Shape{1003}, Form::kValue, 500, budget(12));
    all_reduce_case(DataType::kF64, ReduceOp::kMean, Shape{world + 1}, Form::kInPlace, 501, budget(8));
    all_reduce_case(DataType::kBF16, ReduceOp::kMax, Shape{65537}, Form::kInto, 515, budget(1000));
    all_reduce_case(DataType::kI32, ReduceOp::kMax, Shape{2 * world + 3, 3}, Form::kInto, 502, budget(12));
    reduce_case(DataType::kI64, ReduceOp::kSum, world + 1, world - 1, Form::kValue, 503, budget(8));
    reduce_case(DataType::kF16, ReduceOp::kProd, 37, world / 2, Form::kInto, 504, budget(2));
    broadcast_case(DataType::kU8, Shape{1003}, world / 2, Form::kValue, 505, budget(1));
    broadcast_case(DataType::kF32, Shape{5, 3}, world - 1, Form::kInPlace, 506, budget(12));
    all_gather_case(DataType::kI32, Shape{3, 5}, Form::kValue, 507, budget(20));
    all_gather_case(DataType::kF64, Shape{7}, Form::kInPlace, 508, budget(8));
    reduce_scatter_case(DataType::kF32, ReduceOp::kSum, 2 * world + 3, 3, Form::kValue, 509, budget(12));
    reduce_scatter_case(DataType::kBF16, ReduceOp::kMin, 1003, 1, Form::kInPlace, 510, budget(2));
    all_to_all_v_case(
        DataType::kI32, 3,
        [](std::size_t s, std::size_t d, std::size_t, std::uint64_t) -> std::size_t { return (s + 2 * d) % 3 + 1; },
        Form::kValue, 511, "ragged", budget(12));

    // Below one element (or one row): kBudgetTooSmall on every rank.
    Bytes x = input_buffer(DataType::kF64, ReduceOp::kSum, rank, 5, 512);
    auto r = comm.all_reduce(rank, view(x, DataType::kF64, Shape{5}), ReduceOp::kSum, budget(4));
    if (r.is_ok() || r.status().code() != ErrorCode::kBudgetTooSmall)
      fail("all_reduce f64 budget 4: expected BudgetTooSmall, got " + describe(r.status()));
    Bytes g = move_input_buffer(DataType::kF32, rank, 10, 513);
    auto a = comm.all_gather(rank, view(g, DataType::kF32, Shape{2, 5}), budget(12));
    if (a.is_ok() || a.status().code() != ErrorCode::kBudgetTooSmall)
      fail("all_gather rows of 20 bytes, budget 12: expected BudgetTooSmall, got " + describe(a.status()));
    // And the communicator still works afterwards.
    all_reduce_case(DataType::kI32, ReduceOp::kSum, Shape{3}, Form::kValue, 514);
  }

  // ---- back to back ----------------------------------------------------------
  void sequences() {
    // 200 tiny all-reduces: x = 7 r + i; the sum is 7 w(w-1)/2 + w i.
    const auto w = static_cast<std::int64_t>(world);
    for (std::int64_t i = 0; i < 200; ++i) {
      std::int64_t x = 7 * static_cast<std::int64_t>(rank) + i, y = -1;
      const TensorView xv = TensorView::of(&x, DataType::kI64, 1, dev);
      const TensorView yv = TensorView::of(&y, DataType::kI64, 1, dev);
      Status s = comm.all_reduce_into(rank, xv, yv, ReduceOp::kSum);
      if (!s.is_ok()) return fail("tiny all_reduce " + std::to_string(i) + ": " + describe(s));
      if (y != 7 * w * (w - 1) / 2 + w * i) {
        return fail("tiny all_reduce " + std::to_string(i) + ": got " + std::to_string(y) +
                    ", expected " + std::to_string(7 * w * (w - 1) / 2 + w * i));
      }
    }
    // Mixed kinds, roots and sizes back to back.
    for (std::size_t i = 0; i < 24; ++i) {
      const std::uint64_t salt = 600 + i;
      switch (i % 4) {
        case 0: all_reduce_case(DataType::kF32, ReduceOp::kSum, Shape{1 + i % 5}, Form::kValue, salt); break;
        case 1: broadcast_case(DataType::kI32, Shape{1 + i % 3}, i % world, Form::kValue, salt); break;
        case 2: reduce_case(DataType::kI32, ReduceOp::kMin, 2, (i + 1) % world, Form::kValue, salt); break;
        default: all_gather_case(DataType::kU8, Shape{1 + i % 2}, Form::kValue, salt); break;
      }
    }
  }

  void suite() {
    all_reduces();
    reduces();
    broadcasts();
    all_gathers();
    reduce_scatters();
    all_to_all_vs();
    budgets();
    sequences();
  }
};

// Runs fn(local index) on one thread per local device; exceptions become failures.
template <typename Fn>
void on_local_ranks(Communicator& comm, Failures& f, Fn fn) {
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < comm.devices().size(); ++d)
    threads.emplace_back([&, d] {
      try {
        fn(d);
      } catch (const std::exception& e) {
        f.add(comm.first_rank() + d, std::string("exception: ") + e.what());
      }
    });
  for (auto& t : threads) t.join();
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t per_process = 1;
  for (int i = 1; i < argc; i += 2) {
    const std::string arg = argv[i];
    if (i + 1 < argc && arg == "--devices-per-process") {
      per_process = std::strtoul(argv[i + 1], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: world_collectives_test [--devices-per-process D]\n");
      return 2;
    }
  }
  if (per_process == 0) { std::fprintf(stderr, "--devices-per-process must be >= 1\n"); return 2; }
  std::vector<DeviceId> devices;
  for (std::size_t d = 0; d < per_process; ++d) devices.push_back(host_device(d));
  const auto t0 = Clock::now();

  // Two world communicators side by side, one per strategy.
  const GlobalStrategy strategies[] = {GlobalStrategy::kHierarchical, GlobalStrategy::kFlatRing};
  std::vector<std::shared_ptr<Communicator>> comms;
  for (GlobalStrategy s : strategies) {
    auto c = create_world_communicator(
        devices, Config().with_global_strategy(s).with_timeout(std::chrono::seconds(20)));
    if (!c) {
      std::fprintf(stderr, "create_world_communicator(%s): %s\n",
                   std::string(global_strategy_name(s)).c_str(), c.status().to_string().c_str());
      return 1;
    }
    comms.push_back(std::move(c).value());
  }
  Communicator& first = *comms.front();
  const bool lead = first.first_rank() == 0;
  Failures f;

  for (std::size_t k = 0; k < comms.size(); ++k) {
    Communicator& comm = *comms[k];
    const std::string label(global_strategy_name(strategies[k]));
    if (comm.world_size() != first.world_size() || comm.first_rank() != first.first_rank())
      f.add(label + ": world/first rank differ between the two communicators");
    const auto ts = Clock::now();
    on_local_ranks(comm, f, [&](std::size_t d) {
      Rank{comm, comm.first_rank() + d, comm.devices()[d], comm.world_size(), f, label}.suite();
    });
    if (lead)
      std::printf("world_collectives: %s suite: %.2f s\n", label.c_str(), seconds_since(ts));
  }

  // The two communicators alternately, back to back.
  on_local_ranks(first, f, [&](std::size_t d) {
    for (std::size_t i = 0; i < 20; ++i) {
      Communicator& comm = *comms[i % comms.size()];
      Rank{comm, comm.first_rank() + d, comm.devices()[d], comm.world_size(), f,
           "alternating " + std::string(global_strategy_name(strategies[i % comms.size()]))}
          .all_reduce_case(DataType::kI32, ReduceOp::kSum, Shape{1 + i}, Form::kValue, 700 + i);
    }
  });

  // Both at once: D threads per communicator, all running together.
  {
    std::vector<std::thread> threads;
    for (std::size_t k = 0; k < comms.size(); ++k)
      threads.emplace_back([&, k] {
        Communicator& comm = *comms[k];
        on_local_ranks(comm, f, [&](std::size_t d) {
          Rank r{comm, comm.first_rank() + d, comm.devices()[d], comm.world_size(), f,
                 "concurrent " + std::string(global_strategy_name(strategies[k]))};
          for (std::size_t i = 0; i < 20; ++i) {
            r.all_reduce_case(DataType::kF32, ReduceOp::kSum, Shape{1 + 50 * i}, Form::kInto, 800 + 50 * k + i);
            if (i % 5 == 0) r.all_gather_case(DataType::kI32, Shape{2, 3}, Form::kValue, 900 + 50 * k + i);
          }
        });
      });
    for (auto& t : threads) t.join();
  }

  // The verdict: every process learns the failure count of all.
  if (!f.empty()) std::fprintf(stderr, "process of rank %zu: %s", first.first_rank(), f.report().c_str());
  std::vector<std::int64_t> total(per_process, -1);
  on_local_ranks(first, f, [&](std::size_t d) {
    std::int64_t mine = d == 0 ? static_cast<std::int64_t>(f.size()) : 0;
    const TensorView mv = TensorView::of(&mine, DataType::kI64, 1, first.devices()[d]);
    const TensorView tv = TensorView::of(&total[d], DataType::kI64, 1, first.devices()[d]);
    Status s = first.all_reduce_into(first.first_rank() + d, mv, tv, ReduceOp::kSum);
    if (!s.is_ok()) {
      std::fprintf(stderr, "rank %zu: verdict: %s\n", first.first_rank() + d, s.to_string().c_str());
      total[d] = -1;
    }
  });
  const bool passed = f.empty() && total[0] == 0;
  if (lead)
    std::printf("world_collectives: %zu ranks (%zu per process): %s (%lld failures in all, %.2f s)\n",
                first.world_size(), per_process, passed ? "PASSED" : "FAILED",
                static_cast<long long>(total[0]), seconds_since(t0));
  comms.clear();
  return passed ? 0 : 1;
}
