// The ruccl process group (process_group.hpp).
//
// Tensors: CPU, strided; a non-contiguous one is copied to a contiguous
// tensor on the worker and the result copied back. dtypes: float32, float64,
// float16, bfloat16, int8, uint8, int32, int64 and bool (as u8) reduce; every
// other dtype (int16, complex as such) only moves (broadcast, all-gather,
// all-to-all), as ruccl's opaque bytes. Reductions: SUM, AVG (ruccl's Mean),
// PRODUCT, MIN, MAX, and BAND, BOR, BXOR on integer dtypes; bool maps SUM/MAX/
// BOR to or, PRODUCT/MIN/BAND to and. gather, scatter and the list alltoall
// are one ruccl all_to_all_v; allreduce_coalesced and allgather_coalesced one
// all-reduce / all-gather of the tensors' concatenation. Ranks are ruccl's ranks: the store
// bootstrap requires every host's ranks to be contiguous (torchrun, mpirun).
#include "process_group.hpp"

#include <Python.h>  // the destructor lets go of the GIL while it joins the worker

#include <ATen/Functions.h>
#include <ATen/core/ivalue.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bootstrap/store_bootstrap.hpp"
#include "core/catch_to_status.hpp"
#include "core/remote_ranks.hpp"  // split_members
#include "ruccl/communicator.hpp"
#include "ruccl/config.hpp"
#include "worker.hpp"
#include "world/from_bootstrap.hpp"

namespace ruccl::torch_backend {
namespace {

// c10d::Store as the store bootstrap's KeyValueStore: torch's exceptions end
// here as Status.
class C10dStore final : public bootstrap::KeyValueStore {
 public:
  explicit C10dStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  Status set(const std::string& key, std::span<const std::byte> value) override {
    try {
      const auto* p = reinterpret_cast<const std::uint8_t*>(value.data());
      store_->set(key, std::vector<std::uint8_t>(p, p + value.size()));
      return Status::ok();
    } catch (const std::exception& e) {
      return failed("set", key, e.what());
    }
  }
  Result<std::optional<std::vector<std::byte>>> try_get(const std::string& key) override {
    try {
      if (!store_->check({key})) return std::optional<std::vector<std::byte>>();
      const std::vector<std::uint8_t> v = store_->get(key);
      const auto* p = reinterpret_cast<const std::byte*>(v.data());
      return std::optional<std::vector<std::byte>>(std::vector<std::byte>(p, p + v.size()));
    } catch (const std::exception& e) {
      return failed("get", key, e.what());
    }
  }
  Status erase(const std::string& key) override {
    try {
      store_->deleteKey(key);
    } catch (const std::exception&) {  // best effort: FileStore, for one, cannot
    }
    return Status::ok();
  }

 private:
  static Status failed(const char* what, const std::string& key, const char* why) {
    return Status(ErrorCode::kPeerFailure,
                  std::string("torch store: ") + what + " " + key + ": " + why);
  }
  c10::intrusive_ptr<c10d::Store> store_;
};

// The Work of one op: completed by the worker, with the op's output tensors as
// its result and its future's value.
class RucclWork final : public c10d::Work {
 public:
  RucclWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
            std::shared_ptr<Communicator> comm, const char* op)
      : c10d::Work(rank, type),
        comm_(std::move(comm)),
        op_(op),
        outputs_(std::move(outputs)),
        future_(c10::make_intrusive<c10::ivalue::Future>(
            c10::ListType::create(c10::TensorType::get()))) {}

  std::vector<at::Tensor> result() override { return outputs_; }

  // wait(timeout): when the op has not completed by then, the communicator is
  // aborted (ruccl's abort reaches every rank of it, and every group sharing
  // its transports: one failure domain), the op ends with that error, and it
  // is thrown here; the op's tensors are no longer in use when it is. Gloo
  // would throw "Operation timed out!" with the op still running.
  bool wait(std::chrono::milliseconds timeout) override {
    if (timeout != ::kNoTimeout) {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
        lock.unlock();
        comm_->abort("Work.wait(timeout=" + std::to_string(timeout.count()) + " ms) of " + op_ +
                     " on rank " + std::to_string(rank_) + " ran out");
      }
    }
    return c10d::Work::wait(::kNoTimeout);
  }
  // Work.abort(): the communicator, as above; the op ends with kAborted.
  void abort() override { comm_->abort(std::string("Work.abort() of ") + op_); }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  // On the worker; never throws (the future's callbacks run here, as Gloo's do,
  // and the future keeps what they throw).
  void complete(const Status& status, const char* op) noexcept {
    try {
      if (status.is_ok()) {
        future_->markCompleted(c10::IValue(outputs_));
        finish();
        return;
      }
      const auto error = std::make_exception_ptr(
          std::runtime_error(std::string("ruccl ") + op + ": " + status.to_string()));
      future_->setError(error);
      finish(error);
    } catch (...) {  // NOLINT(bugprone-empty-catch): nothing may leave the worker
    }
  }

 private:
  std::shared_ptr<Communicator> comm_;
  std::string op_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

std::optional<DataType> ruccl_dtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return DataType::kF32;
    case at::kDouble: return DataType::kF64;
    case at::kHalf: return DataType::kF16;
    case at::kBFloat16: return DataType::kBF16;
    case at::kChar: return DataType::kI8;
    case at::kByte:
    case at::kBool: return DataType::kU8;
    case at::kInt: return DataType::kI32;
    case at::kLong: return DataType::kI64;
    default: return std::nullopt;
  }
}

ReduceOp ruccl_op(const c10d::ReduceOp& op, at::ScalarType type) {
  using T = c10d::ReduceOp;
  const bool is_bool = type == at::kBool;
  switch (op.op_) {
    case T::SUM: return is_bool ? ReduceOp::kBor : ReduceOp::kSum;
    case T::AVG:
      TORCH_CHECK(!is_bool, "ruccl: AVG of bool tensors is undefined");
      return ReduceOp::kMean;
    case T::PRODUCT: return is_bool ? ReduceOp::kBand : ReduceOp::kProd;
    case T::MIN: return is_bool ? ReduceOp::kBand : ReduceOp::kMin;
    case T::MAX: return is_bool ? ReduceOp::kBor : ReduceOp::kMax;
    case T::BAND: return ReduceOp::kBand;
    case T::BOR: return ReduceOp::kBor;
    case T::BXOR: return ReduceOp::kBxor;
    default: break;
  }
  TORCH_CHECK(false, "ruccl: reduce op ", static_cast<int>(op.op_),
              " is not supported (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR are)");
}

// How a tensor's elements are given to ruccl.
struct Element {
  DataType dtype;
  std::size_t per_element;  // ruccl elements per tensor element (bytes: its size)
};

class ProcessGroupRuccl final : public c10d::ProcessGroup {
 public:
  // `shares`: the communicator was split from another group's and shares its
  // transports. Every group has a worker thread of its own, also one that
  // shares transports (they take turns on them: transport.hpp), so the ops of
  // two groups run side by side and each group's order is its own.
  ProcessGroupRuccl(int rank, int size, std::shared_ptr<Communicator> comm,
                    std::size_t all_to_all_budget, bool shares = false)
      : c10d::ProcessGroup(rank, size),
        comm_(std::move(comm)),
        device_(comm_->devices().front()),
        all_to_all_options_{all_to_all_budget},
        shares_(shares),
        worker_(std::make_unique<Worker>()) {}

  ~ProcessGroupRuccl() override {
    // Destroyed from Python (destroy_process_group, the last reference), with
    // the GIL: the worker's last task may drop the last reference to a Work
    // whose tensors need the GIL to go, so the GIL is let go while this waits.
    PyThreadState* const python =
        Py_IsInitialized() != 0 && PyGILState_Check() != 0 ? PyEval_SaveThread() : nullptr;
    // Collectives still queued or running when the group goes: wake the running
    // one (and the peers') instead of waiting out its deadline.
    if (in_flight_.load() > 0) comm_->abort("the torch process group was destroyed");
    // Its tasks (they hold `this`) run, failing fast after the abort, before
    // the group goes.
    while (in_flight_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    worker_.reset();  // joins it
    if (python != nullptr) PyEval_RestoreThread(python);
  }

  const std::shared_ptr<Communicator>& communicator() const { return comm_; }
  bool shares() const { return shares_; }

  const std::string getBackendName() const override { return "ruccl"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    const at::Tensor t = single(tensors, "broadcast");
    const Element e = moved(t);
    const std::size_t root = root_rank(opts.rootRank, "broadcast");
    return post(c10d::OpType::BROADCAST, "broadcast", {t}, [this, t, e, root]() -> Status {
      return on_contiguous(t, e, true, [&](const TensorView& v) {
        return comm_->broadcast_into(rank(), rank() == root ? &v : nullptr, v);
      });
    });
  }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    const at::Tensor t = single(tensors, "allreduce");
    const Element e = reduced(t, opts.reduceOp);
    const ReduceOp op = ruccl_op(opts.reduceOp, t.scalar_type());
    return post(c10d::OpType::ALLREDUCE, "allreduce", {t}, [this, t, e, op]() -> Status {
      return on_contiguous(t, e, true, [&](const TensorView& v) {
        return comm_->all_reduce_into(rank(), v, v, op);
      });
    });
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override {
    const at::Tensor t = single(tensors, "reduce");
    const Element e = reduced(t, opts.reduceOp);
    const ReduceOp op = ruccl_op(opts.reduceOp, t.scalar_type());
    const std::size_t root = root_rank(opts.rootRank, "reduce");
    return post(c10d::OpType::REDUCE, "reduce", {t}, [this, t, e, op, root]() -> Status {
      return on_contiguous(t, e, rank() == root, [&](const TensorView& v) {
        return comm_->reduce_into(rank(), v, v, op, root);
      });
    });
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& /*opts*/) override {
    const at::Tensor in = single(inputs, "allgather");
    TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<std::size_t>(getSize()),
                "ruccl allgather: one list of ", getSize(), " output tensors");
    for (const at::Tensor& o : outputs[0]) same_kind(o, in, in.numel(), "allgather");
    const Element e = moved(in);
    std::vector<at::Tensor> outs = outputs[0];
    return post(c10d::OpType::ALLGATHER, "allgather", outs, [this, in, outs, e]() -> Status {
      const at::Tensor c = in.contiguous();
      const std::int64_t n = c.numel();
      const at::Tensor all = at::empty({n * getSize()}, c.options());
      RUCCL_TRY(comm_->all_gather_into(rank(), flat(c, e), flat(all, e)));
      unpack(all, outs);
      return Status::ok();
    });
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& /*opts*/) override {
    check_tensor(input, "_allgather_base");
    same_kind(output, input, input.numel() * getSize(), "_allgather_base");
    const Element e = moved(input);
    return post(c10d::OpType::_ALLGATHER_BASE, "_allgather_base", {output},
                [this, in = input, out = output, e]() -> Status {
                  const at::Tensor c = in.contiguous(), o = out.contiguous();
                  RUCCL_TRY(comm_->all_gather_into(rank(), flat(c, e), flat(o, e)));
                  copy_back(out, o);
                  return Status::ok();
                });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    const at::Tensor out = single(outputs, "reduce_scatter");
    TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<std::size_t>(getSize()),
                "ruccl reduce_scatter: one list of ", getSize(), " input tensors");
    for (const at::Tensor& i : inputs[0]) same_kind(i, out, out.numel(), "reduce_scatter");
    const Element e = reduced(out, opts.reduceOp);
    const ReduceOp op = ruccl_op(opts.reduceOp, out.scalar_type());
    std::vector<at::Tensor> ins = inputs[0];
    return post(c10d::OpType::REDUCE_SCATTER, "reduce_scatter", {out},
                [this, ins, out, e, op]() -> Status {
                  std::vector<at::Tensor> rows;
                  rows.reserve(ins.size());
                  for (const at::Tensor& i : ins) rows.push_back(i.reshape({-1}));
                  const at::Tensor all = at::cat(rows), o = out.contiguous();
                  RUCCL_TRY(comm_->reduce_scatter_into(rank(), flat(all, e), flat(o, e), op));
                  copy_back(out, o);
                  return Status::ok();
                });
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override {
    check_tensor(output, "_reduce_scatter_base");
    same_kind(input, output, output.numel() * getSize(), "_reduce_scatter_base");
    const Element e = reduced(output, opts.reduceOp);
    const ReduceOp op = ruccl_op(opts.reduceOp, output.scalar_type());
    return post(c10d::OpType::_REDUCE_SCATTER_BASE, "_reduce_scatter_base", {output},
                [this, in = input, out = output, e, op]() -> Status {
                  const at::Tensor c = in.contiguous(), o = out.contiguous();
                  RUCCL_TRY(comm_->reduce_scatter_into(rank(), flat(c, e), flat(o, e), op));
                  copy_back(out, o);
                  return Status::ok();
                });
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<std::int64_t>& output_split,
                                               std::vector<std::int64_t>& input_split,
                                               const c10d::AllToAllOptions& /*opts*/) override {
    check_tensor(input, "alltoall_base");
    check_tensor(output, "alltoall_base");
    TORCH_CHECK(input.dim() >= 1 && output.dim() >= 1 &&
                    input.scalar_type() == output.scalar_type() &&
                    input.numel() / std::max<std::int64_t>(input.size(0), 1) ==
                        output.numel() / std::max<std::int64_t>(output.size(0), 1),
                "ruccl alltoall_base: input and output need the same dtype and row shape");
    const Element e = moved(input);
    const std::size_t row =
        static_cast<std::size_t>(input.size(0) == 0 ? 0 : input.numel() / input.size(0)) *
        e.per_element;
    const std::vector<std::size_t> send = splits(input_split, input, "input");
    const std::vector<std::size_t> want = splits(output_split, output, "output");
    return post(c10d::OpType::ALLTOALL_BASE, "alltoall_base", {output},
                [this, in = input, out = output, e, row, send, want]() -> Status {
                  const at::Tensor c = in.contiguous(), o = out.contiguous();
                  const TensorView iv{c.data_ptr(), e.dtype,
                                      Shape{static_cast<std::size_t>(c.size(0)), row}, device_};
                  const TensorView ov{o.data_ptr(), e.dtype,
                                      Shape{static_cast<std::size_t>(o.size(0)), row}, device_};
                  RUCCL_TRY(exchange(iv, send, ov, want, "rows", "its output_split_sizes say"));
                  copy_back(out, o);
                  return Status::ok();
                });
  }

  // gather, scatter and the list form of alltoall: one all_to_all_v of the
  // tensors' flat elements (only the root's blocks are not empty in gather and
  // scatter), through one packed buffer on each side.
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override {
    const at::Tensor in = single(inputs, "gather");
    const std::size_t root = root_rank(opts.rootRank, "gather");
    const bool is_root = rank() == root;
    TORCH_CHECK(is_root ? outputs.size() == 1 && outputs[0].size() == rank_count()
                        : outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                "ruccl gather: ", is_root ? "one list of " + std::to_string(getSize()) : "no",
                " output tensors on rank ", getRank(), " (root ", root, ")");
    std::vector<at::Tensor> outs = is_root ? outputs[0] : std::vector<at::Tensor>{};
    for (const at::Tensor& o : outs) same_kind(o, in, in.numel(), "gather");
    const Element e = moved(in);
    return post(c10d::OpType::GATHER, "gather", outs, [this, in, outs, e, root]() -> Status {
      const at::Tensor c = in.contiguous();
      std::vector<std::size_t> send(rank_count(), 0);
      send[root] = elements(c, e);
      std::vector<std::size_t> want(outs.size(), elements(c, e));
      const at::Tensor all =
          at::empty({c.numel() * static_cast<std::int64_t>(outs.size())}, c.options());
      RUCCL_TRY(exchange(flat(c, e), send, flat(all, e), want));
      unpack(all, outs);
      return Status::ok();
    });
  }

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override {
    const at::Tensor out = single(outputs, "scatter");
    const std::size_t root = root_rank(opts.rootRank, "scatter");
    const bool is_root = rank() == root;
    TORCH_CHECK(is_root ? inputs.size() == 1 && inputs[0].size() == rank_count()
                        : inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                "ruccl scatter: ", is_root ? "one list of " + std::to_string(getSize()) : "no",
                " input tensors on rank ", getRank(), " (root ", root, ")");
    std::vector<at::Tensor> ins = is_root ? inputs[0] : std::vector<at::Tensor>{};
    for (const at::Tensor& i : ins) same_kind(i, out, out.numel(), "scatter");
    const Element e = moved(out);
    return post(c10d::OpType::SCATTER, "scatter", {out}, [this, ins, out, e, root]() -> Status {
      const at::Tensor o = out.contiguous();
      const at::Tensor all = packed(ins, o);
      std::vector<std::size_t> send(ins.empty() ? 0 : rank_count(), elements(o, e));
      send.resize(rank_count(), 0);
      std::vector<std::size_t> want(rank_count(), 0);
      want[root] = elements(o, e);
      RUCCL_TRY(exchange(flat(all, e), send, flat(o, e), want));
      copy_back(out, o);
      return Status::ok();
    });
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& /*opts*/) override {
    TORCH_CHECK(inputs.size() == rank_count() && outputs.size() == rank_count(),
                "ruccl alltoall: ", getSize(), " input and ", getSize(), " output tensors");
    for (const at::Tensor& o : outputs) same_kind(o, inputs[0], o.numel(), "alltoall");
    for (const at::Tensor& i : inputs) same_kind(i, inputs[0], i.numel(), "alltoall");
    const Element e = moved(inputs[0]);
    std::vector<at::Tensor> ins = inputs, outs = outputs;
    return post(c10d::OpType::ALLTOALL, "alltoall", outs, [this, ins, outs, e]() -> Status {
      std::vector<std::size_t> send, want;
      for (const at::Tensor& i : ins) send.push_back(elements(i, e));
      for (const at::Tensor& o : outs) want.push_back(elements(o, e));
      const at::Tensor all_in = packed(ins, ins[0]), all_out = packed({}, outs[0], outs);
      RUCCL_TRY(exchange(flat(all_in, e), send, flat(all_out, e), want));
      unpack(all_out, outs);
      return Status::ok();
    });
  }

  // Every rank's tensors (one dtype) as one all-gather of their
  // concatenation: outputs[r][i] gets rank r's inputs[i].
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& /*opts*/) override {
    TORCH_CHECK(!inputs.empty(), "ruccl allgather_coalesced: no input tensors");
    TORCH_CHECK(outputs.size() == rank_count(), "ruccl allgather_coalesced: ", getSize(),
                " output lists expected, got ", outputs.size());
    for (const at::Tensor& i : inputs) same_kind(i, inputs[0], i.numel(), "allgather_coalesced");
    for (const std::vector<at::Tensor>& list : outputs) {
      TORCH_CHECK(list.size() == inputs.size(),
                  "ruccl allgather_coalesced: each output list needs ", inputs.size(), " tensors");
      for (std::size_t i = 0; i < list.size(); ++i)
        same_kind(list[i], inputs[i], inputs[i].numel(), "allgather_coalesced");
    }
    const Element e = moved(inputs[0]);
    std::vector<at::Tensor> ins = inputs, outs;
    for (const std::vector<at::Tensor>& list : outputs)
      outs.insert(outs.end(), list.begin(), list.end());
    return post(c10d::OpType::ALLGATHER_COALESCED, "allgather_coalesced", outs,
                [this, ins, outs, e]() -> Status {
                  const at::Tensor mine = packed(ins, ins[0]);
                  const at::Tensor all = at::empty({mine.numel() * getSize()}, mine.options());
                  RUCCL_TRY(comm_->all_gather_into(rank(), flat(mine, e), flat(all, e)));
                  unpack(all, outs);  // rank by rank, each rank's tensors in order
                  return Status::ok();
                });
  }

  // All tensors (one dtype) as one all-reduce of their concatenation.
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override {
    TORCH_CHECK(!tensors.empty(), "ruccl allreduce_coalesced: no tensors");
    for (const at::Tensor& t : tensors) same_kind(t, tensors[0], t.numel(), "allreduce_coalesced");
    const Element e = reduced(tensors[0], opts.reduceOp);
    const ReduceOp op = ruccl_op(opts.reduceOp, tensors[0].scalar_type());
    std::vector<at::Tensor> ts = tensors;
    return post(c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced", ts,
                [this, ts, e, op]() -> Status {
                  const at::Tensor all = packed(ts, ts[0]);
                  RUCCL_TRY(comm_->all_reduce_into(rank(), flat(all, e), flat(all, e), op));
                  unpack(all, ts);
                  return Status::ok();
                });
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& /*opts*/) override {
    return post(c10d::OpType::BARRIER, "barrier", {},
                [this]() -> Status { return comm_->barrier(rank()); });
  }

 private:
  std::size_t rank() const { return static_cast<std::size_t>(getRank()); }

  c10::intrusive_ptr<c10d::Work> post(c10d::OpType type, const char* op,
                                      std::vector<at::Tensor> outputs,
                                      std::function<Status()> body) {
    auto work = c10::make_intrusive<RucclWork>(getRank(), type, std::move(outputs), comm_, op);
    ++in_flight_;
    worker_->post([this, work, op, body = std::move(body)](bool run) noexcept {
      const Status s = !run ? Status(ErrorCode::kAborted, "the process group was destroyed first")
                            : core::catch_to_status(ErrorCode::kInternal, "torch backend", [&] {
                                const at::NoGradGuard no_grad;
                                return body();
                              });
      --in_flight_;  // before the Work completes: a group destroyed after wait() sees 0
      work->complete(s, op);
    });
    return work;
  }

  static void check_tensor(const at::Tensor& t, const char* op) {
    TORCH_CHECK(t.defined() && t.device().is_cpu() && t.layout() == at::kStrided, "ruccl ", op,
                ": CPU strided tensors only (this build of the backend has no CUDA path)");
  }
  static at::Tensor single(const std::vector<at::Tensor>& tensors, const char* op) {
    TORCH_CHECK(tensors.size() == 1, "ruccl ", op, ": one tensor per process, got ",
                tensors.size());
    check_tensor(tensors[0], op);
    return tensors[0];
  }
  static void same_kind(const at::Tensor& t, const at::Tensor& like, std::int64_t numel,
                        const char* op) {
    check_tensor(t, op);
    TORCH_CHECK(t.scalar_type() == like.scalar_type() && t.numel() == numel, "ruccl ", op,
                ": tensors of dtype ", like.scalar_type(), " and ", numel,
                " elements expected, got ", t.scalar_type(), " ", t.sizes());
  }
  // A dtype ruccl has, else its bytes.
  static Element moved(const at::Tensor& t) {
    if (const auto d = ruccl_dtype(t.scalar_type())) return {*d, 1};
    return {DataType::kBytes, static_cast<std::size_t>(t.element_size())};
  }
  static Element reduced(const at::Tensor& t, const c10d::ReduceOp& op) {
    const auto d = ruccl_dtype(t.scalar_type());
    TORCH_CHECK(d.has_value(), "ruccl: cannot reduce ", t.scalar_type(),
                " tensors (ruccl reduces float32, float64, float16, bfloat16, int8, uint8, int32, "
                "int64 and bool)");
    TORCH_CHECK(!(is_floating(*d) && is_integer_only(ruccl_op(op, t.scalar_type()))),
                "ruccl: BAND, BOR and BXOR take integer tensors, not ", t.scalar_type());
    return {*d, 1};
  }
  std::size_t root_rank(std::int64_t root, const char* op) const {
    TORCH_CHECK(root >= 0 && root < getSize(), "ruccl ", op, ": root ", root, " outside 0..",
                getSize() - 1);
    return static_cast<std::size_t>(root);
  }
  std::vector<std::size_t> splits(const std::vector<std::int64_t>& given, const at::Tensor& t,
                                  const char* which) const {
    const auto world = static_cast<std::int64_t>(getSize());
    if (given.empty()) {
      TORCH_CHECK(t.size(0) % world == 0, "ruccl alltoall_base: the ", which, " rows (", t.size(0),
                  ") do not split evenly over ", world, " ranks");
      return std::vector<std::size_t>(static_cast<std::size_t>(world),
                                      static_cast<std::size_t>(t.size(0) / world));
    }
    TORCH_CHECK(static_cast<std::int64_t>(given.size()) == world, "ruccl alltoall_base: ", which,
                "_split_sizes needs ", world, " entries");
    std::int64_t sum = 0;
    std::vector<std::size_t> out;
    for (const std::int64_t s : given) {
      TORCH_CHECK(s >= 0, "ruccl alltoall_base: a negative split size");
      sum += s;
      out.push_back(static_cast<std::size_t>(s));
    }
    TORCH_CHECK(sum == t.size(0), "ruccl alltoall_base: the ", which, " split sizes add up to ",
                sum, ", the tensor has ", t.size(0), " rows");
    return out;
  }
  std::size_t rank_count() const { return static_cast<std::size_t>(getSize()); }
  // ruccl elements of `t` as `e`.
  static std::size_t elements(const at::Tensor& t, const Element& e) {
    return static_cast<std::size_t>(t.numel()) * e.per_element;
  }
  // The flat concatenation of `ts` (one contiguous tensor like `like`; empty
  // for no tensors); with `room`, an uninitialised one as large as they are.
  static at::Tensor packed(const std::vector<at::Tensor>& ts, const at::Tensor& like,
                           const std::vector<at::Tensor>& room = {}) {
    if (!room.empty()) {
      std::int64_t n = 0;
      for (const at::Tensor& t : room) n += t.numel();
      return at::empty({n}, like.options());
    }
    if (ts.empty()) return at::empty({0}, like.options());
    std::vector<at::Tensor> rows;
    rows.reserve(ts.size());
    for (const at::Tensor& t : ts) rows.push_back(t.reshape({-1}));
    return at::cat(rows);
  }
  // Copies the flat `all` into `outs`, one after the other.
  static void unpack(const at::Tensor& all, const std::vector<at::Tensor>& outs) {
    std::int64_t at = 0;
    for (const at::Tensor& o : outs) {
      o.copy_(all.narrow(0, at, o.numel()).view(o.sizes()));
      at += o.numel();
    }
  }
  // One all_to_all_v of flat blocks: `send[d]` elements of `in` to rank d,
  // `want[s]` expected from rank s (a missing entry: nothing) into `out`.
  // (`unit`, `theirs`: the words of the error message.)
  Status exchange(const TensorView& in, const std::vector<std::size_t>& send, const TensorView& out,
                  const std::vector<std::size_t>& want, const char* unit = "elements",
                  const char* theirs = "its tensors hold") {
    std::vector<std::size_t> got;
    RUCCL_TRY(comm_->all_to_all_v_into(rank(), in, send, out, got, all_to_all_options_));
    std::vector<std::size_t> expected = want;
    expected.resize(rank_count(), 0);
    if (got != expected)
      return Status(ErrorCode::kShapeMismatch, "rank " + std::to_string(rank()) + " received " +
                                                   unit + " " + counts(got) + " from the ranks, " +
                                                   theirs + " " + counts(expected));
    return Status::ok();
  }
  static std::string counts(const std::vector<std::size_t>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  }
  TensorView flat(const at::Tensor& contiguous, const Element& e) const {
    return TensorView::of(contiguous.data_ptr(), e.dtype,
                          static_cast<std::size_t>(contiguous.numel()) * e.per_element, device_);
  }
  static void copy_back(const at::Tensor& to, const at::Tensor& from) {
    if (!from.is_same(to)) to.copy_(from);
  }
  // `call` on a flat view of `t` made contiguous (a copy when it is not, copied
  // back into `t` when `keep`).
  template <typename Call>
  Status on_contiguous(const at::Tensor& t, const Element& e, bool keep, Call&& call) const {
    const at::Tensor c = t.contiguous();
    RUCCL_TRY(call(flat(c, e)));
    if (keep) copy_back(t, c);
    return Status::ok();
  }

  std::shared_ptr<Communicator> comm_;
  DeviceId device_;
  CallOptions all_to_all_options_;
  std::atomic<std::size_t> in_flight_{0};  // posted ops whose ruccl call has not returned
  const bool shares_;                      // the transports are a parent's
  std::unique_ptr<Worker> worker_;         // last: released after the members above
};

}  // namespace

c10::intrusive_ptr<c10d::ProcessGroup> create_process_group(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    const BackendOptions& options) {
  auto fail = [](const Status& s) {
    throw std::runtime_error("ruccl process group creation: " + s.to_string());
  };
  if (rank < 0 || size <= 0 || rank >= size)
    fail(Status(ErrorCode::kInvalidArgument,
                "rank " + std::to_string(rank) + " of " + std::to_string(size)));
  auto config = Config::from_env();
  if (!config) fail(config.status());
  config->with_num_devices(1).with_timeout(
      std::min(std::max(options.timeout, std::chrono::milliseconds(1)), Config::kMaxTimeout));
  bootstrap::StoreBootstrapOptions boot_options;
  boot_options.timeout = config->timeout();
  boot_options.require_index_order = true;  // torch's ranks are ruccl's
  auto boot =
      bootstrap::store_bootstrap(std::make_shared<C10dStore>(store), static_cast<std::size_t>(rank),
                                 static_cast<std::size_t>(size), boot_options);
  if (!boot) fail(boot.status());
  const std::size_t budget =
      options.max_chunk_bytes != 0 ? options.max_chunk_bytes : config->max_chunk_bytes();
  // A subgroup of ruccl's default group: split from it by member list (global
  // rank = the default group's ruccl rank), agreed through this group's store.
  auto* parent = dynamic_cast<ProcessGroupRuccl*>(options.parent.get());
  if (parent != nullptr && options.global_ranks.size() == static_cast<std::size_t>(size)) {
    std::vector<std::size_t> members;
    for (std::int64_t g : options.global_ranks) members.push_back(static_cast<std::size_t>(g));
    auto split = split_members(*parent->communicator(), static_cast<std::size_t>(parent->getRank()),
                               members, *boot.value(), &config.value());
    if (split) {
      if ((*split)->first_rank() != static_cast<std::size_t>(rank))
        fail(Status(ErrorCode::kInternal, "torch group rank " + std::to_string(rank) +
                                              " is ruccl rank " +
                                              std::to_string((*split)->first_rank())));
      return c10::make_intrusive<ProcessGroupRuccl>(rank, size, std::move(split).value(), budget,
                                                    /*shares=*/true);
    }
    // Refused alike on every member (no slot left, ...): a world of its own.
  }
  auto comm = world::create_communicator_from_bootstrap(std::move(boot).value(), {host_device(0)},
                                                        config.value());
  if (!comm) fail(comm.status());
  if ((*comm)->first_rank() != static_cast<std::size_t>(rank))
    fail(Status(ErrorCode::kInternal, "torch rank " + std::to_string(rank) + " is ruccl rank " +
                                          std::to_string((*comm)->first_rank())));
  return c10::make_intrusive<ProcessGroupRuccl>(rank, size, std::move(comm).value(), budget);
}

bool shares_transports(const c10::intrusive_ptr<c10d::ProcessGroup>& group) {
  const auto* pg = dynamic_cast<const ProcessGroupRuccl*>(group.get());
  return pg != nullptr && pg->shares();
}

}  // namespace ruccl::torch_backend
