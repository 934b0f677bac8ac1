// The world communicator: the MPI bootstrap finds the processes and exchanges
// the UCX worker addresses once; then each local rank owns one UCX transport,
// agrees on every collective with every rank (fingerprints on the wire), and
// runs the src/ring algorithms through TransportRun.
#include "ruccl/world.hpp"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "bootstrap/bootstrap.hpp"
#include "core/log.hpp"
#include "core/spanning.hpp"
#include "multinode/from_bootstrap.hpp"
#include "multinode/wire.hpp"
#include "transport/transport.hpp"
#include "transport/transport_run.hpp"

namespace ruccl {
namespace {

using transport::Clock;
constexpr std::uint32_t kDataComm = 0;     // tag comm field of algorithm messages
constexpr std::uint32_t kControlComm = 1;  // ... of fingerprint messages
constexpr std::uint32_t kAcrossComm = 2;
constexpr auto kCloseBound = std::chrono::seconds(2);  // graceful endpoint closes at destruction   // ... of a hierarchical all-reduce's inter-process rings

class WorldSpanning final : public core::Spanning {
 public:
  WorldSpanning(std::unique_ptr<std::atomic<bool>> abort_flag,
                std::unique_ptr<bootstrap::Bootstrap> boot,
                std::vector<std::unique_ptr<transport::Transport>> transports, std::size_t first,
                std::size_t world, GlobalStrategy strategy)
      : abort_flag_(std::move(abort_flag)),
        bootstrap_(std::move(boot)),
        transports_(std::move(transports)),
        first_(first),
        world_(world),
        per_process_(transports_.size()),
        strategy_(strategy) {}
  ~WorldSpanning() override {
    // Graceful closes (ucp_ep_close_nbx, flushing) need every worker of every
    // process to make progress at the same time, so each local transport closes
    // on its own thread. Whatever does not close within the bound is
    // force-closed by the transport's destructor.
    std::vector<std::thread> closers;
    try {
      for (auto& t : transports_)
        closers.emplace_back([&t] { (void)t->close(Clock::now() + kCloseBound); });
    } catch (...) {  // no thread: the destructors force-close
    }
    for (auto& c : closers) c.join();
    transports_.clear();  // before the bootstrap, which may finalise MPI
  }

  // Makes every blocked exchange of every local transport return kAborted.
  void abort() override { abort_flag_->store(true); }
  std::size_t first_rank() const override { return first_; }
  std::size_t world() const override { return world_; }

  Result<core::Plan> agree_all(std::size_t local, std::uint64_t seq, const core::Request& request,
                               const Result<core::Geometry>& geometry,
                               std::chrono::milliseconds timeout) override {
    const std::size_t me = first_ + local;
    auto mine = multinode::encode(request, geometry, world_);
    RUCCL_TRY(mine);
    const std::size_t bytes = mine.value().size() * sizeof(std::uint64_t);
    std::vector<std::vector<std::uint64_t>> theirs(world_);
    std::vector<transport::SendOp> sends;
    std::vector<transport::RecvOp> recvs;
    for (std::size_t r = 0; r < world_; ++r) {
      if (r == me) continue;
      theirs[r].resize(mine.value().size());
      sends.push_back({r, mine.value().data(), bytes,
                       transport::make_tag({kControlComm, seq, 0, static_cast<std::uint32_t>(me), 0})});
      recvs.push_back({r, theirs[r].data(), bytes,
                       transport::make_tag({kControlComm, seq, 0, static_cast<std::uint32_t>(r), 0})});
    }
    RUCCL_TRY(transports_[local]->exchange(sends, recvs, Clock::now() + timeout));
    std::vector<multinode::Decoded> decoded(world_);
    std::vector<const core::Request*> requests(world_);
    std::vector<const Result<core::Geometry>*> locals(world_);
    for (std::size_t r = 0; r < world_; ++r) {
      if (r == me) {
        requests[r] = &request;
        locals[r] = &geometry;
      } else {
        decoded[r] = multinode::decode(theirs[r], world_);
        requests[r] = &decoded[r].request;
        locals[r] = &decoded[r].geometry;
      }
    }
    return core::agree(requests, locals, seq);
  }

  // hierarchical (the default): ranks of this process read each other's memory
  // in-process wherever the algorithm allows: the whole collective when the
  // world is this process, the local levels of the all-reduce otherwise. Every
  // other transfer, and all of them under flat_ring, is a UCX message.
  core::Executors executors(std::size_t local, std::uint64_t seq, CollectiveKind kind,
                            Work& work, DeviceAdapter& adapter, const core::Plan& plan,
                            std::chrono::milliseconds timeout) override {
    core::Executors out;
    const std::size_t processes = world_ / per_process_;
    if (strategy_ == GlobalStrategy::kHierarchical) {
      if (processes == 1) return out;  // in-process throughout
      if (kind == CollectiveKind::kAllReduce && per_process_ > 1) {
        transport::TransportRunOptions o{kAcrossComm, seq, plan.message_elements, timeout};
        o.peer_base = local;
        o.peer_stride = per_process_;
        out.across = std::make_unique<transport::TransportRun>(
            *transports_[local], adapter, work, local, first_ / per_process_, processes, o);
        return out;
      }
    }
    out.run = std::make_unique<transport::TransportRun>(
        *transports_[local], adapter, work, local, first_ + local, world_,
        transport::TransportRunOptions{kDataComm, seq, plan.message_elements, timeout});
    return out;
  }

 private:
  std::unique_ptr<std::atomic<bool>> abort_flag_;  // read by the transports: outlives them
  std::unique_ptr<bootstrap::Bootstrap> bootstrap_;
  std::vector<std::unique_ptr<transport::Transport>> transports_;
  const std::size_t first_;
  const std::size_t world_;
  const std::size_t per_process_;
  const GlobalStrategy strategy_;
};

// Each process's blob: for each local rank, an 8-byte length then its address.
std::vector<std::byte> pack(const std::vector<std::unique_ptr<transport::Transport>>& ts) {
  std::vector<std::byte> out;
  for (const auto& t : ts) {
    const std::vector<std::byte> a = t->address();
    const std::uint64_t len = a.size();
    const auto* p = reinterpret_cast<const std::byte*>(&len);
    out.insert(out.end(), p, p + sizeof(len));
    out.insert(out.end(), a.begin(), a.end());
  }
  return out;
}

Status unpack(const std::vector<std::byte>& blob, std::size_t count,
              std::vector<std::vector<std::byte>>& out) {
  std::size_t at = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t len = 0;
    if (at + sizeof(len) > blob.size()) return Status(ErrorCode::kInternal, "short address blob");
    std::memcpy(&len, blob.data() + at, sizeof(len));
    at += sizeof(len);
    if (len > blob.size() - at) return Status(ErrorCode::kInternal, "short address blob");
    out.emplace_back(blob.begin() + at, blob.begin() + at + len);
    at += len;
  }
  return Status::ok();
}

}  // namespace

Result<std::shared_ptr<Communicator>> create_world_communicator(std::vector<DeviceId> local_devices,
                                                                Config config) {
  if (local_devices.empty())
    return Status(ErrorCode::kInvalidArgument, "a process needs at least one local device");
  RUCCL_TRY(config.validate());
  auto boot = bootstrap::mpi_world_bootstrap();
  RUCCL_TRY(boot);
  return multinode::create_communicator_from_bootstrap(std::move(boot).value(),
                                                       std::move(local_devices), std::move(config));
}

Result<std::shared_ptr<Communicator>> multinode::create_communicator_from_bootstrap(
    std::unique_ptr<bootstrap::Bootstrap> boot, std::vector<DeviceId> local_devices, Config config) {
  if (!boot) return Status(ErrorCode::kInvalidArgument, "no bootstrap");
  if (local_devices.empty())
    return Status(ErrorCode::kInvalidArgument, "a process needs at least one local device");
  RUCCL_TRY(config.validate());
  const std::size_t per_process = local_devices.size();
  RUCCL_TRY(bootstrap::agree_on(*boot, per_process, "devices per process"));
  // The strategy decides which messages exist: processes must not mix them.
  RUCCL_TRY(bootstrap::agree_on(*boot, static_cast<std::size_t>(config.global_strategy()),
                                "as global strategy (RUCCL_ALGO; 0 hierarchical, 1 flat_ring)",
                                ErrorCode::kInvalidArgument));
  // Device buffers across processes need UCX with CUDA support or staging
  // through pinned host buffers; neither is wired up yet (TransportRun reads
  // send buffers with host code). Agreed first, so that every process fails.
  const bool cuda = local_devices.front().kind == DeviceKind::kCuda;
  RUCCL_TRY(bootstrap::agree_on(*boot, cuda ? 1 : 0, "as CUDA devices (1 yes, 0 no)",
                                ErrorCode::kInvalidArgument));
  if (cuda)
    return Status(ErrorCode::kUnsupported,
                  "CUDA devices across processes are not supported yet (needs CUDA-aware UCX or "
                  "staging through pinned host buffers); use Communicator::create in one process");
  const bootstrap::Topology& topo = boot->topology();
  const std::size_t world = topo.processes * per_process;
  const std::size_t first = topo.process * per_process;

  // Endpoints to ranks on this node skip peer-failure detection (shared memory).
  auto abort_flag = std::make_unique<std::atomic<bool>>(false);
  transport::TransportOptions options;
  options.abort = abort_flag.get();
  if (config.intra_node_shared_memory())
    for (std::size_t peer = 0; peer < world; ++peer)
      options.unwatched_peers.push_back(topo.node_of_process[peer / per_process] == topo.node);
  std::vector<std::unique_ptr<transport::Transport>> transports;
  for (std::size_t d = 0; d < per_process; ++d) {
    auto t = transport::make_ucx_transport(options);
    RUCCL_TRY(t);
    transports.push_back(std::move(t.value()));
  }
  auto blobs = boot->all_gather(pack(transports));
  RUCCL_TRY(blobs);
  std::vector<std::vector<std::byte>> addresses;
  for (const auto& blob : blobs.value()) RUCCL_TRY(unpack(blob, per_process, addresses));
  Status connected;
  for (auto& t : transports) {
    connected = t->connect(addresses, Clock::now() + config.timeout());
    if (!connected) break;
  }
  // Every process has connected before any goes on: a process that returned
  // at once and destroyed its workers (create, then destroy) would otherwise
  // pull the shared-memory segments from under peers still attaching to them.
  // Agreeing on the outcome also fails creation everywhere if one connect did.
  const Status everyone = bootstrap::agree_on(*boot, connected.is_ok() ? 1 : 0,
                                              "connected UCX endpoints (1 yes, 0 no)",
                                              ErrorCode::kPeerFailure);
  RUCCL_TRY(connected);
  RUCCL_TRY(everyone);
  core::Logger logger(config);
  if (logger.enabled(LogLevel::kInfo)) {
    logger.log(LogLevel::kInfo, first,
               "world of " + std::to_string(world) + " ranks: " + std::to_string(topo.processes) +
                   " processes x " + std::to_string(per_process) + " devices on " +
                   std::to_string(topo.nodes) + " nodes; this process is " +
                   std::to_string(topo.process) + " on node " + std::to_string(topo.node) +
                   "; strategy " + std::string(global_strategy_name(config.global_strategy())));
    // Which UCX transports reach each peer, e.g. tcp to ranks on other nodes.
    for (std::size_t d = 0; d < per_process; ++d)
      for (std::size_t peer = 0; peer < world; ++peer)
        logger.log(LogLevel::kInfo, first + d,
                   "lanes: rank " + std::to_string(first + d) + " (node " +
                       std::to_string(topo.node) + ") -> rank " + std::to_string(peer) +
                       " (node " + std::to_string(topo.node_of_process[peer / per_process]) +
                       "): " + transports[d]->describe_lanes(peer));
  }

  auto adapter = make_adapter(local_devices.front().kind);
  RUCCL_TRY(adapter);
  auto spanning = std::make_unique<WorldSpanning>(std::move(abort_flag), std::move(boot),
                                                  std::move(transports),
                                                  first, world, config.global_strategy());
  return core::make_spanning_communicator(std::move(local_devices), adapter.value(),
                                          std::move(config), std::move(spanning));
}

}  // namespace ruccl
