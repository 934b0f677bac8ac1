// The MPI implementation of Bootstrap. Every wait is nonblocking MPI polled
// with MPI_Test against a deadline (and an abort flag), yielding between polls,
// as UCC's MPI out-of-band all-gather does: no MPI call here can block forever
// on a process that failed or died.
//
// Creation (collective over the caller's communicator):
//   1. MPI_Comm_idup the communicator and set MPI_ERRORS_RETURN on the
//      duplicate: every later call works on the duplicate, so ruccl's traffic
//      never matches the caller's, and MPI errors come back as codes.
//   2. An exchange (below) of MPI_Get_processor_name: processes with the same
//      name form a node, its lowest rank the node's "leader"; every process
//      computes the same layout (layout.hpp) from the leaders.
//
// Exchange (all_gather, barrier and step 2; collective):
//   1. Arrival: each process sends its blob size (uint64) to every other with
//      MPI_Isend and receives theirs with MPI_Irecv. A receive still open at the
//      deadline names a process that never arrived.
//   2. Blobs: MPI_Iallgatherv, in as many rounds as the int counts need
//      (layout.hpp, "Rounds"); displacements put the pieces in process order.
// Messages between two processes on one communicator do not overtake each
// other, so one tag serves every exchange.
//
// After a timeout or an abort, requests stay pending: the bootstrap is broken.
// Its later calls fail at once; its destructor leaks the duplicate and the
// buffers the requests use, and does not finalise MPI (which would wait for the
// absent processes). The process can still return its error and exit.
#include "bootstrap/mpi_bootstrap.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <utility>

#include "bootstrap/layout.hpp"
#include "bootstrap/mpi_call.hpp"
#include "bootstrap/mpi_handles.hpp"
#include "core/catch_to_status.hpp"

namespace ruccl::bootstrap {
namespace {

using detail::Layout;
using detail::mpi_status;
using detail::MpiScope;
using detail::OwnedComm;

constexpr int kArrivalTag = 0x7275;  // "ru"

// What pending requests read and write: on the heap, leaked when broken.
struct Buffers {
  MPI_Comm dup = MPI_COMM_NULL;
  std::uint64_t my_size = 0;
  std::vector<std::uint64_t> sizes;    // by MPI rank
  std::vector<MPI_Request> requests;
  std::vector<std::byte> send, round;  // this round's piece / gathered pieces
  detail::Round plan;
};

std::string ms_text(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

class Poller {
 public:
  explicit Poller(const Wait& wait) : wait_(wait) {}
  // Ok to poll again; kTimeout / kAborted otherwise (after a short pause).
  Status pause(const std::string& what) {
    if (wait_.abort != nullptr && wait_.abort->load()) return Status(ErrorCode::kAborted, what + ": aborted");
    if (Clock::now() >= wait_.deadline) return Status(ErrorCode::kTimeout, what + ": timed out");
    if (++polls_ < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::min<Clock::duration>(pause_, wait_.deadline - Clock::now()));
      pause_ = std::min<Clock::duration>(pause_ * 2, std::chrono::milliseconds(5));
    }
    return Status::ok();
  }

 private:
  const Wait& wait_;
  std::size_t polls_ = 0;
  Clock::duration pause_ = std::chrono::microseconds(50);
};

class MpiBootstrap final : public Bootstrap {
 public:
  MpiBootstrap(MpiScope scope, std::chrono::milliseconds timeout)
      : scope_(std::move(scope)), timeout_(timeout), buffers_(std::make_unique<Buffers>()) {}
  ~MpiBootstrap() override {
    if (!broken_.empty()) {
      (void)comm_.release();  // requests may still be pending on it
      scope_.abandon();
      (void)buffers_.release();  // pending requests may still write there
    }
  }

  // Steps 1 and 2 of creation.
  Status create(MPI_Comm parent, std::size_t max_round_bytes) {
    int rank = 0, size = 0;
    RUCCL_TRY(mpi_status(MPI_Comm_rank(parent, &rank), "MPI_Comm_rank"));
    RUCCL_TRY(mpi_status(MPI_Comm_size(parent, &size), "MPI_Comm_size"));
    rank_ = static_cast<std::size_t>(rank);
    size_ = static_cast<std::size_t>(size);
    const Wait wait = Wait::within(timeout_);
    Buffers& b = *buffers_;
    b.requests.assign(1, MPI_REQUEST_NULL);
    RUCCL_TRY(mpi_status(MPI_Comm_idup(parent, &b.dup, b.requests.data()), "MPI_Comm_idup"));
    RUCCL_TRY(poll(wait, "bootstrap creation (MPI_Comm_idup: every process must create it)",
                   nullptr));
    comm_ = OwnedComm::adopt(b.dup);
    RUCCL_TRY(mpi_status(MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN),
                         "MPI_Comm_set_errhandler"));
    chunk_ = detail::round_chunk_bytes(max_round_bytes, size_);

    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    RUCCL_TRY(mpi_status(MPI_Get_processor_name(name, &length), "MPI_Get_processor_name"));
    const std::string hostname(name, static_cast<std::size_t>(std::max(length, 0)));
    auto names = exchange(std::as_bytes(std::span(hostname)), wait, "bootstrap creation");
    RUCCL_TRY(names);
    std::vector<int> leader_of_rank(size_);
    for (std::size_t r = 0; r < size_; ++r) {
      std::size_t leader = 0;
      while (names.value()[leader] != names.value()[r]) ++leader;  // stops at r at the latest
      leader_of_rank[r] = static_cast<int>(leader);
      host_of_rank_.emplace_back(reinterpret_cast<const char*>(names.value()[r].data()),
                                 names.value()[r].size());
    }
    auto layout = detail::layout_from_leaders(leader_of_rank, rank_, hostname);
    RUCCL_TRY(layout);
    layout_ = std::move(layout).value();
    return Status::ok();
  }

  const Topology& topology() const override { return layout_.topology; }
  std::chrono::milliseconds timeout() const override { return timeout_; }

  Result<Blobs> all_gather(std::span<const std::byte> blob, const Wait& wait) override {
    return core::catch_to_status(ErrorCode::kInternal, "bootstrap", [&]() -> Result<Blobs> {
      auto by_rank = exchange(blob, wait, "bootstrap all_gather");
      RUCCL_TRY(by_rank);
      return detail::by_process(layout_, std::move(by_rank).value());
    });
  }

  Status barrier(const Wait& wait) override {
    return core::catch_to_status(ErrorCode::kInternal, "bootstrap", [&]() -> Status {
      return exchange({}, wait, "bootstrap barrier").status();
    });
  }

 private:
  // "process 2 (host h1, MPI rank 2)": by process once the layout is known.
  std::string describe_rank(std::size_t r) const {
    std::string out = layout_.process_of_rank.size() == size_
                          ? "process " + std::to_string(layout_.process_of_rank[r]) + " ("
                          : "(";
    if (r < host_of_rank_.size()) out += "host " + host_of_rank_[r] + ", ";
    return out + "MPI rank " + std::to_string(r) + ")";
  }

  // Polls buffers_->requests until all complete. `peer_of` (request index ->
  // MPI rank, for receives; SIZE_MAX for sends) names who is missing.
  Status poll(const Wait& wait, const std::string& what, const std::vector<std::size_t>* peer_of) {
    Buffers& b = *buffers_;
    Poller poller(wait);
    const auto started = Clock::now();
    while (true) {
      bool all = true;
      for (MPI_Request& req : b.requests) {
        if (req == MPI_REQUEST_NULL) continue;
        int done = 0;
        if (Status s = mpi_status(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test"); !s) {
          broken_ = s.message();
          return s.with_context(what);
        }
        all = all && done != 0;
      }
      if (all) return Status::ok();
      Status waited = poller.pause(what);
      if (waited) continue;
      std::string missing;
      if (peer_of != nullptr)
        for (std::size_t i = 0; i < b.requests.size(); ++i)
          if (b.requests[i] != MPI_REQUEST_NULL && (*peer_of)[i] != SIZE_MAX)
            missing += (missing.empty() ? "" : ", ") + describe_rank((*peer_of)[i]);
      std::string text = waited.message() + " after " +
                         ms_text(std::chrono::duration_cast<std::chrono::milliseconds>(
                             Clock::now() - started)) +
                         " in " + describe_rank(rank_);
      if (!missing.empty()) text += "; did not arrive: " + missing;
      broken_ = text;
      return Status(waited.code(), std::move(text));
    }
  }

  // One exchange; blobs by MPI rank.
  Result<Blobs> exchange(std::span<const std::byte> blob, const Wait& wait, const char* what) {
    if (!broken_.empty())
      return Status(ErrorCode::kAborted, std::string(what) +
                                             ": the bootstrap is unusable after an earlier "
                                             "failed exchange (" + broken_ + ")");
    if (detail::mpi_finalized())
      return Status(ErrorCode::kAborted,
                    "bootstrap used after MPI_Finalize (the bootstrap that initialised MPI must be "
                    "destroyed last)");
    Buffers& b = *buffers_;
    const std::size_t n = size_;
    // 1. Arrival and sizes.
    static_assert(sizeof(std::size_t) <= sizeof(std::uint64_t));
    b.my_size = blob.size();
    b.sizes.assign(n, 0);
    b.sizes[rank_] = b.my_size;
    b.requests.clear();
    // A failure with requests posted leaves them pending: the bootstrap is broken.
    const auto fail = [&](Status s) {
      if (broken_.empty()) broken_ = s.message();
      return s;
    };
    std::vector<std::size_t> peer_of;
    for (std::size_t r = 0; r < n; ++r) {
      if (r == rank_) continue;
      b.requests.push_back(MPI_REQUEST_NULL);
      peer_of.push_back(r);
      if (Status s = mpi_status(MPI_Irecv(&b.sizes[r], 1, MPI_UINT64_T, static_cast<int>(r),
                                          kArrivalTag, comm_.get(), &b.requests.back()),
                                "MPI_Irecv(blob size)");
          !s)
        return fail(s);
      b.requests.push_back(MPI_REQUEST_NULL);
      peer_of.push_back(SIZE_MAX);
      if (Status s = mpi_status(MPI_Isend(&b.my_size, 1, MPI_UINT64_T, static_cast<int>(r),
                                          kArrivalTag, comm_.get(), &b.requests.back()),
                                "MPI_Isend(blob size)");
          !s)
        return fail(s);
    }
    RUCCL_TRY(poll(wait, std::string(what) + " (arrival of every process)", &peer_of));
    std::vector<std::size_t> size_of_rank(n);
    for (std::size_t r = 0; r < n; ++r) {
      if (b.sizes[r] > SIZE_MAX || b.sizes[r] > (std::uint64_t{1} << 40))
        return fail(Status(ErrorCode::kProtocolError, std::string(what) + ": " +
                                                          describe_rank(r) + " announced a blob of " +
                                                          std::to_string(b.sizes[r]) + " bytes"));
      size_of_rank[r] = static_cast<std::size_t>(b.sizes[r]);
    }
    Blobs blobs(n);
    for (std::size_t r = 0; r < n; ++r) blobs[r].resize(size_of_rank[r]);

    // 2. Blobs, in rounds of at most n * chunk_ bytes. The round plan places
    // pieces in process order; during creation (no layout yet) that is rank order.
    std::vector<std::size_t> identity;
    const std::vector<std::size_t>* order = &layout_.rank_of_process;
    if (order->size() != n) {
      identity.resize(n);
      for (std::size_t r = 0; r < n; ++r) identity[r] = r;
      order = &identity;
    }
    const std::size_t rounds = detail::round_count(size_of_rank, chunk_);
    const std::byte nothing{};
    for (std::size_t round = 0; round < rounds; ++round) {
      detail::plan_round(size_of_rank, *order, chunk_, round, b.plan);
      b.round.resize(std::max<std::size_t>(b.plan.bytes, 1));
      const std::size_t begin = round * chunk_;
      const int my_count = b.plan.counts[rank_];
      b.send.assign(blob.begin() + static_cast<std::ptrdiff_t>(my_count > 0 ? begin : 0),
                    blob.begin() + static_cast<std::ptrdiff_t>(my_count > 0 ? begin + static_cast<std::size_t>(my_count) : 0));
      b.requests.assign(1, MPI_REQUEST_NULL);
      if (Status s = mpi_status(MPI_Iallgatherv(my_count > 0 ? b.send.data() : &nothing, my_count,
                                                MPI_BYTE, b.round.data(), b.plan.counts.data(),
                                                b.plan.displs.data(), MPI_BYTE, comm_.get(),
                                                b.requests.data()),
                                "MPI_Iallgatherv(blobs)");
          !s)
        return fail(s);
      RUCCL_TRY(poll(wait,
                     std::string(what) + " (blobs, round " + std::to_string(round + 1) + " of " +
                         std::to_string(rounds) + "; every process had arrived)",
                     nullptr));
      for (std::size_t r = 0; r < n; ++r) {
        if (b.plan.counts[r] == 0) continue;
        std::memcpy(blobs[r].data() + begin, b.round.data() + b.plan.displs[r],
                    static_cast<std::size_t>(b.plan.counts[r]));
      }
    }
    return blobs;
  }

  // Declared in dependency order: the communicator is freed before MPI is
  // finalised (when this bootstrap initialised it).
  MpiScope scope_;
  OwnedComm comm_;
  const std::chrono::milliseconds timeout_;
  std::unique_ptr<Buffers> buffers_;
  std::size_t rank_ = 0, size_ = 1, chunk_ = 1;
  std::vector<std::string> host_of_rank_;
  Layout layout_;
  std::string broken_;  // why, once an exchange failed with requests pending
};

Result<std::unique_ptr<Bootstrap>> make_bootstrap(MpiScope scope, MPI_Comm parent,
                                                  const MpiBootstrapOptions& options) {
  if (parent == MPI_COMM_NULL)
    return Status(ErrorCode::kInvalidArgument, "mpi_bootstrap: MPI_COMM_NULL");
  if (options.timeout.count() <= 0)
    return Status(ErrorCode::kInvalidArgument, "mpi_bootstrap: the timeout must be positive");
  int inter = 0;
  RUCCL_TRY(mpi_status(MPI_Comm_test_inter(parent, &inter), "MPI_Comm_test_inter"));
  if (inter != 0)
    return Status(ErrorCode::kInvalidArgument, "mpi_bootstrap: an intercommunicator");
  auto boot = std::make_unique<MpiBootstrap>(std::move(scope), options.timeout);
  RUCCL_TRY(boot->create(parent, options.max_round_bytes));
  return std::unique_ptr<Bootstrap>(std::move(boot));
}

}  // namespace

Result<std::unique_ptr<Bootstrap>> mpi_world_bootstrap(std::chrono::milliseconds timeout) {
  auto body = [&]() -> Result<std::unique_ptr<Bootstrap>> {
    auto scope = MpiScope::acquire();
    RUCCL_TRY(scope);
    MpiBootstrapOptions options;
    options.timeout = timeout;
    return make_bootstrap(std::move(scope).value(), MPI_COMM_WORLD, options);
  };
  return core::catch_to_status(ErrorCode::kInternal, "bootstrap", body);
}

Result<std::unique_ptr<Bootstrap>> mpi_bootstrap(MPI_Comm comm, const MpiBootstrapOptions& options) {
  auto body = [&]() -> Result<std::unique_ptr<Bootstrap>> {
    auto scope = MpiScope::borrow();
    RUCCL_TRY(scope);
    return make_bootstrap(std::move(scope).value(), comm, options);
  };
  return core::catch_to_status(ErrorCode::kInternal, "bootstrap", body);
}

}  // namespace ruccl::bootstrap
