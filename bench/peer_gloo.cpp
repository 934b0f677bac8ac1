// The Gloo peer: Gloo's ring all-reduce over its TCP transport, on the ruccl
// runner's buffers (in place: Gloo reduces in place; out of place is N/A).
//
// Setup, once per run: gloo::rendezvous::Context(s) of every process, ranked
// like ruccl (peer_mpi::OrderedComm), fully connected through MpiStore, a
// gloo::rendezvous::Store over MPI point-to-point messages (this Gloo is built
// without its MPI context). The TCP device binds the address of this host's
// name (as Gloo does by default); RUCCL_PERF_GLOO_IFACE (an interface) or
// RUCCL_PERF_GLOO_HOSTNAME override it.
// Two meshes: sizes up to RUCCL_PERF_GLOO_POLL_MAX bytes (default 1 MiB, or 0
// when this machine runs more of the processes than it has CPUs; 0 = never,
// "all" = always) run on synchronous pairs with busy polling (the calling
// thread reads its sockets, as ruccl and Open MPI poll theirs); larger ones on
// Gloo's default pairs, where a loop thread (epoll) receives and wakes the
// caller. Why both: on this 2-core VM the loop-thread hand-offs cost 0.1-4 ms
// per small call (scheduler ticks, idle vCPUs), 25 us polled at 8 B; but
// synchronous pairs send with a blocking write before receiving, so when both
// ranks send more than the socket buffers hold they deadlock until Gloo's write
// timeout (seen at 64 MiB).
// Once per case and placement: the algorithm object, gloo::AllreduceRing
// ("gloo": Gloo's ring all-reduce, the whole buffer goes n-1 hops; for n = 2
// that is one exchange of S, optimal) or gloo::AllreduceRingChunked
// ("gloo_chunked": 2n chunks, bandwidth-optimal for larger n), whose
// constructor registers its send/receive buffers with the pairs. Per call only
// run(): nothing is built or allocated on the timed path. The untimed barrier
// before each call is Gloo's (gloo::BarrierAllToAll, built once per mesh); the
// agreement on times and wrong counts after the loop uses MPI. At setup each
// mesh runs one untimed all-reduce of the largest size it will carry (see
// make_gloo_peer: Gloo's SO_SNDBUF sizing otherwise costs ~40 ms stalls).
// Dtypes f32, f64, f16, i8, u8, i32, i64, u64; ops sum, prod, min, max (no Mean,
// no bf16).
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>

#include "peer_mpi.hpp"
#include "perf_peers.hpp"

namespace ruccl::perf {
namespace {

// A gloo::rendezvous::Store over MPI point-to-point, all on the calling thread:
// set() keeps the key and sends it to every other rank (MPI_Isend); wait()/get()
// receive other ranks' keys (MPI_Iprobe, in order per source) until the keys
// asked for are there, or the timeout passes. Gloo's connectFullMesh uses the
// store asymmetrically (rank r reads keys "rank_j" that nobody waits for at the
// same time), so no collective exchange would match; point-to-point does.
// finish() receives whatever was sent but not read (counts agreed with
// MPI_Alltoall) and completes the sends, so nothing is left in flight.
class MpiStore final : public gloo::rendezvous::Store {
 public:
  explicit MpiStore(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    sent_.assign(static_cast<std::size_t>(size_), 0);
    received_.assign(static_cast<std::size_t>(size_), 0);
  }
  ~MpiStore() override = default;

  void set(const std::string& key, const std::vector<char>& data) override {
    map_[key] = data;
    std::vector<char>& message = outbox_.emplace_back();
    const std::uint64_t n = key.size();
    message.insert(message.end(), reinterpret_cast<const char*>(&n),
                   reinterpret_cast<const char*>(&n) + sizeof n);
    message.insert(message.end(), key.begin(), key.end());
    message.insert(message.end(), data.begin(), data.end());
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      MPI_Request& request = requests_.emplace_back();
      throw_if(MPI_Isend(message.data(), static_cast<int>(message.size()), MPI_BYTE, peer, kTag,
                         comm_, &request),
               "MPI_Isend");
      ++sent_[static_cast<std::size_t>(peer)];
    }
  }
  std::vector<char> get(const std::string& key) override {
    wait({key});
    return map_.at(key);
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, kDefaultTimeout); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!have(keys)) {
      if (!receive_one()) {
        if (std::chrono::steady_clock::now() > deadline)
          throw std::runtime_error("MpiStore: timed out waiting for a key");
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
  }

  // Collective: after the last store operation of every rank.
  void finish() {
    std::vector<int> expected(static_cast<std::size_t>(size_), 0);
    throw_if(MPI_Alltoall(sent_.data(), 1, MPI_INT, expected.data(), 1, MPI_INT, comm_),
             "MPI_Alltoall");
    for (int peer = 0; peer < size_; ++peer)
      while (received_[static_cast<std::size_t>(peer)] < expected[static_cast<std::size_t>(peer)])
        if (!receive_one()) std::this_thread::sleep_for(std::chrono::microseconds(100));
    throw_if(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE),
             "MPI_Waitall");
    requests_.clear();
    outbox_.clear();
  }

 private:
  static constexpr int kTag = 4242;

  bool have(const std::vector<std::string>& keys) const {
    for (const std::string& k : keys)
      if (!map_.count(k)) return false;
    return true;
  }
  // Receives one pending key if there is one.
  bool receive_one() {
    int flag = 0;
    MPI_Status status;
    throw_if(MPI_Iprobe(MPI_ANY_SOURCE, kTag, comm_, &flag, &status), "MPI_Iprobe");
    if (!flag) return false;
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    std::vector<char> message(static_cast<std::size_t>(bytes));
    throw_if(MPI_Recv(message.data(), bytes, MPI_BYTE, status.MPI_SOURCE, kTag, comm_,
                      MPI_STATUS_IGNORE),
             "MPI_Recv");
    ++received_[static_cast<std::size_t>(status.MPI_SOURCE)];
    std::uint64_t n = 0;
    std::memcpy(&n, message.data(), sizeof n);
    const std::string key(message.data() + sizeof n, n);
    map_[key] = std::vector<char>(message.begin() + static_cast<std::ptrdiff_t>(sizeof n + n),
                                  message.end());
    return true;
  }
  static void throw_if(int rc, const char* what) {
    if (const Status s = peer_mpi::check(rc, what); !s) throw std::runtime_error(s.message());
  }

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  std::map<std::string, std::vector<char>> map_;
  std::deque<std::vector<char>> outbox_;  // stable addresses until the sends complete
  std::vector<MPI_Request> requests_;
  std::vector<int> sent_;      // messages sent to each rank
  std::vector<int> received_;  // messages received from each rank
};

template <typename T>
const gloo::ReductionFunction<T>* gloo_fn(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return gloo::ReductionFunction<T>::sum;
    case ReduceOp::kProd: return gloo::ReductionFunction<T>::product;
    case ReduceOp::kMin: return gloo::ReductionFunction<T>::min;
    case ReduceOp::kMax: return gloo::ReductionFunction<T>::max;
    default: break;  // Mean, and the bitwise and logical ops: no gloo function
  }
  return nullptr;
}

template <typename T>
std::unique_ptr<gloo::Algorithm> make_algorithm(bool chunked,
                                                const std::shared_ptr<gloo::Context>& context,
                                                void* data, std::size_t count, ReduceOp op) {
  std::vector<T*> ptrs{static_cast<T*>(data)};
  const int n = static_cast<int>(count);
  if (chunked)
    return std::make_unique<gloo::AllreduceRingChunked<T>>(context, ptrs, n, gloo_fn<T>(op));
  return std::make_unique<gloo::AllreduceRing<T>>(context, ptrs, n, gloo_fn<T>(op));
}

bool gloo_dtype(DataType dtype) {
  switch (dtype) {
    case DataType::kF32: case DataType::kF64: case DataType::kF16: case DataType::kI8:
    case DataType::kU8: case DataType::kI32: case DataType::kI64: case DataType::kU64:
      return true;
    default: return false;
  }
}

// One fully connected Gloo context and its barrier.
struct GlooMesh {
  std::shared_ptr<gloo::Context> context;
  std::unique_ptr<gloo::BarrierAllToAll> barrier;
};

class GlooPeer final : public Peer {
 public:
  // `polled` serves sizes up to poll_max bytes, `threaded` the larger ones (either
  // may be missing when every size goes to the other).
  GlooPeer(bool chunked, std::size_t poll_max, peer_mpi::OrderedComm comm, GlooMesh polled,
           GlooMesh threaded)
      : name_(chunked ? "gloo_chunked" : "gloo"),
        chunked_(chunked),
        poll_max_(poll_max),
        comm_(std::move(comm)),
        polled_(std::move(polled)),
        threaded_(std::move(threaded)) {
    description_ = std::string(chunked ? "gloo::AllreduceRingChunked" : "gloo::AllreduceRing") +
                   ", TCP; ";
    if (!threaded_.context)
      description_ += "busy-polled synchronous pairs at every size";
    else if (!polled_.context)
      description_ += "Gloo's default loop-thread pairs at every size";
    else
      description_ += "busy-polled synchronous pairs up to " + std::to_string(poll_max_) +
                      " B, Gloo's default loop-thread pairs above (RUCCL_PERF_GLOO_POLL_MAX)";
    description_ += "; in place only";
  }
  ~GlooPeer() override { release(); }

  const std::string& name() const override { return name_; }
  std::string description() const override { return description_; }
  void add_to_description(const std::string& text) { description_ += text; }

  std::string unsupported(const Case& c, bool in_place) const override {
    if (c.kind != CollectiveKind::kAllReduce) return "all_reduce only";
    if (!in_place) return "in place only";
    if (!gloo_dtype(c.dtype)) return "no Gloo type for " + std::string(dtype_name(c.dtype));
    if (!c.op || *c.op == ReduceOp::kMean) return "no Gloo op for mean";
    if (c.count > static_cast<std::size_t>(INT_MAX)) return "count exceeds Gloo's int";
    return "";
  }

  Status prepare(const Case& c, bool in_place, std::size_t, PeerBuffers buffers) override {
    if (const std::string why = unsupported(c, in_place); !why.empty())
      return Status(ErrorCode::kInvalidArgument, name_ + ": " + why);
    release();
    mesh_ = (c.size_bytes <= poll_max_ && polled_.context) || !threaded_.context ? &polled_
                                                                                 : &threaded_;
    const auto& ctx = mesh_->context;
    void* data = buffers.out;
    return guarded([&] {
      switch (c.dtype) {
        case DataType::kF32: algo_ = make_algorithm<float>(chunked_, ctx, data, c.count, *c.op); break;
        case DataType::kF64: algo_ = make_algorithm<double>(chunked_, ctx, data, c.count, *c.op); break;
        case DataType::kF16: algo_ = make_algorithm<gloo::float16>(chunked_, ctx, data, c.count, *c.op); break;
        case DataType::kI8: algo_ = make_algorithm<std::int8_t>(chunked_, ctx, data, c.count, *c.op); break;
        case DataType::kU8: algo_ = make_algorithm<std::uint8_t>(chunked_, ctx, data, c.count, *c.op); break;
        case DataType::kI32: algo_ = make_algorithm<std::int32_t>(chunked_, ctx, data, c.count, *c.op); break;
        case DataType::kI64: algo_ = make_algorithm<std::int64_t>(chunked_, ctx, data, c.count, *c.op); break;
        case DataType::kU64: algo_ = make_algorithm<std::uint64_t>(chunked_, ctx, data, c.count, *c.op); break;
        default: break;
      }
    }, "building the algorithm");
  }

  // Gloo's own barrier (built once per mesh), as ruccl and MPI each use their
  // own: an MPI_Barrier would leave Open MPI's yielding spin on the rank thread
  // while Gloo's TCP loop thread needs the core (on 2 cores: scheduler ticks).
  Status barrier() override {
    if (!mesh_) return Status(ErrorCode::kInternal, name_ + ": not prepared");
    return guarded([&] { mesh_->barrier->run(); }, "barrier");
  }

  Status call() override {
    if (!algo_) return Status(ErrorCode::kInternal, name_ + ": not prepared");
    return guarded([&] { algo_->run(); }, "run");
  }

  Status max_over_ranks(std::vector<double>& values) override { return comm_.max_over_ranks(values); }
  Status sum_over_ranks(std::uint64_t& value) override { return comm_.sum_over_ranks(value); }
  void release() override {
    algo_.reset();
    mesh_ = nullptr;
  }

 private:
  template <typename F>
  Status guarded(F&& f, const char* what) {
    try {
      f();
      return Status::ok();
    } catch (const std::exception& e) {
      return Status(ErrorCode::kInternal, name_ + " " + what + ": " + e.what());
    }
  }

  std::string name_;
  std::string description_;
  bool chunked_;
  std::size_t poll_max_;
  peer_mpi::OrderedComm comm_;
  GlooMesh polled_;
  GlooMesh threaded_;
  GlooMesh* mesh_ = nullptr;  // the mesh of the prepared case
  std::unique_ptr<gloo::Algorithm> algo_;
};

}  // namespace

Result<std::unique_ptr<Peer>> make_gloo_peer(bool chunked, std::size_t rank,
                                             std::size_t max_bytes) {
  auto comm = peer_mpi::OrderedComm::create(rank);
  RUCCL_TRY(comm);
  // Sizes up to poll_max run on busy-polled synchronous pairs, larger ones on
  // Gloo's default pairs (see the file comment). 0: never poll; "all": always.
  // By default 1 MiB, or 0 when this machine runs more of the processes than it
  // has CPUs: pollers then starve each other (seen: ~45 ms per small call with
  // 2 netns hosts x 2 processes on 2 CPUs, 4-9 ms in Gloo's default mode).
  std::size_t poll_max = std::size_t{1} << 20;
  std::string why_not_polled;
  {
    // Processes on this machine: those with this kernel's boot_id (simulated
    // netns hosts share it; their MPI "nodes" differ).
    char mine[64] = {};
    if (std::FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
      if (std::fgets(mine, sizeof mine, f) == nullptr) mine[0] = 0;
      std::fclose(f);
    }
    std::vector<char> all(sizeof mine * static_cast<std::size_t>(comm->size()));
    int here = 0;
    if (MPI_Allgather(mine, sizeof mine, MPI_CHAR, all.data(), sizeof mine, MPI_CHAR,
                      comm->get()) == MPI_SUCCESS)
      for (int r = 0; r < comm->size(); ++r)
        here += std::strncmp(all.data() + r * sizeof mine, mine, sizeof mine) == 0;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (mine[0] != 0 && cpus > 0 && here > cpus) {
      poll_max = 0;
      why_not_polled = " (" + std::to_string(here) + " processes on this machine's " +
                       std::to_string(cpus) + " CPUs: no busy polling)";
    }
  }
  if (const char* env = std::getenv("RUCCL_PERF_GLOO_POLL_MAX"); env && *env) {
    why_not_polled.clear();
    if (std::string(env) == "all") poll_max = SIZE_MAX;
    else poll_max = static_cast<std::size_t>(std::strtoull(env, nullptr, 10));
  }
  try {
    gloo::transport::tcp::attr attr;
    if (const char* iface = std::getenv("RUCCL_PERF_GLOO_IFACE"); iface && *iface)
      attr.iface = iface;
    else if (const char* host = std::getenv("RUCCL_PERF_GLOO_HOSTNAME"); host && *host)
      attr.hostname = host;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    // One untimed all-reduce of the largest size the mesh will carry: Gloo
    // sizes a socket's SO_SNDBUF to the message being sent when it grows, and
    // a buffer just the size of the message can take a partial write that then
    // waits for the peer's delayed ACK (~40 ms; seen at 4K, 16K and 64K). With
    // the largest size sent first every later message fits.
    auto warm = [&](const std::shared_ptr<gloo::Context>& context, std::size_t bytes) {
      const std::size_t count = std::max<std::size_t>(1, bytes / sizeof(float));
      std::vector<float> data(count, 0.0f);
      gloo::AllreduceRing<float>(context, {data.data()}, static_cast<int>(count)).run();
    };
    auto connect = [&](bool poll) {
      auto context = std::make_shared<gloo::rendezvous::Context>(comm->rank(), comm->size());
      context->setTimeout(std::chrono::seconds(60));
      MpiStore store(comm->get());
      context->connectFullMesh(store, device);
      store.finish();
      if (poll)
        for (int peer = 0; peer < context->size; ++peer)
          if (peer != context->rank) context->getPair(peer)->setSync(true, true);
      warm(context, poll ? std::min(max_bytes, poll_max) : max_bytes);
      GlooMesh mesh;
      mesh.context = context;
      mesh.barrier = std::make_unique<gloo::BarrierAllToAll>(mesh.context);
      return mesh;
    };
    GlooMesh polled, threaded;
    if (poll_max > 0) polled = connect(true);
    if (poll_max != SIZE_MAX && max_bytes > poll_max) threaded = connect(false);
    auto peer = std::make_unique<GlooPeer>(chunked, poll_max, std::move(comm).value(),
                                           std::move(polled), std::move(threaded));
    peer->add_to_description(why_not_polled);
    return std::unique_ptr<Peer>(std::move(peer));
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternal, std::string("gloo: connecting the TCP mesh: ") + e.what());
  }
}

}  // namespace ruccl::perf
