// Fault injection (RUCCL_FAULT / Config::with_fault): a plan of faults that hit
// one rank in one collective, so that the failure paths (timeouts, dead peers,
// lost or corrupted messages, device errors) run in tests and on real clusters
// exactly as they would in production.
//
// The plan is parsed once when a communicator is created and is read-only
// afterwards, so every rank thread may consult it without locks. An empty plan
// costs one branch per collective: callers test empty() first.
//
// Who acts on which kind:
//   stall    core (communicator.cpp): the rank sleeps before the agreement;
//   exit     core (engine.cpp): the process _exit()s when the step starts
//            (without a step: the collective's first step);
//   adapter  core (communicator.cpp): a device verb fails (FaultyAdapter);
//   drop / corrupt  the transport: a message is lost / has its bytes flipped;
//   create   world creation (src/world/world_creation.cpp): the process _exit()s or
//            throws when creation reaches the named stage (fire_create_fault).
//   oom      core: ruccl's own code throws std::bad_alloc at a chosen point
//            (at=check: in the rank's local check, before the agreement;
//            at=run: after the rendezvous, before the engine runs; at=step:
//            when the step starts, inside the engine).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/work.hpp"
#include "ruccl/device.hpp"
#include "ruccl/status.hpp"

namespace ruccl::core {

enum class FaultKind : std::uint8_t { kStall, kExit, kDrop, kCorrupt, kAdapter, kCreate, kOom };

// The stages of world creation, in order (world_creation.cpp):
//   start       entering creation, before the first agreement (devices, config, token)
//   transports  after that agreement, while opening the UCX transports
//   address     transports open, before the address exchange
//   connect     after the address exchange, before connecting the endpoints
//   handshake   endpoints connected, before the job-token handshake
//   agreed      after the handshake, before the final agreement of outcome
enum class CreateStage : std::uint8_t { kStart, kTransports, kAddress, kConnect, kHandshake, kAgreed };
std::string_view create_stage_name(CreateStage stage) noexcept;

std::string_view fault_kind_name(FaultKind kind) noexcept;  // "stall", "exit", ...

struct Fault {
  FaultKind kind = FaultKind::kStall;
  std::size_t rank = 0;                 // global rank the fault hits
  std::uint64_t seq = 0;                // collective sequence number (the K of "collective #K")
  std::optional<std::uint32_t> step;    // exit/drop/corrupt: step index within the collective; none = any step
  std::chrono::milliseconds stall{0};   // stall: how long; 0 = until the communicator is aborted or timeout + 2 s
  int exit_code = 1;                    // exit
  std::string verb;                     // adapter: "prepare","begin","allocate","copy","exchange","combine","scale","finish"; empty = any verb
  CreateStage stage = CreateStage::kStart;  // create: where
  std::size_t process = 0;              // create: the process (bootstrap order) it hits
  bool throws = false;                  // create: throw std::runtime_error instead of _exit
  std::string at;                       // oom: "check", "run" or "step"
};

class FaultPlan {
 public:
  // Grammar: faults separated by ';', each "kind:key=value,key=value".
  //   stall:rank=1,seq=3[,ms=2000]      exit:rank=2,seq=5[,step=3][,code=9]
  //   drop:rank=0,seq=4[,step=1]        corrupt:rank=1,seq=2[,step=0]
  //   adapter:rank=0,seq=1[,verb=combine]  oom:rank=1,seq=2,at=check|run|step[,step=0]
  //   create:stage=address,process=1[,action=exit|throw][,code=9]
  // rank and seq are required (create: stage and process instead); a key the kind does not take, a repeated key or
  // a bad number is an error. Blanks around faults, keys and values are ignored.
  // "" -> empty plan. Errors: kInvalidArgument naming the offending fault text and why.
  static Result<FaultPlan> parse(std::string_view spec);
  bool empty() const { return faults_.empty(); }
  // The first fault of `kind` for (rank, seq) whose step is unset or equals
  // `step`; null if none. (A query without a step matches only faults without
  // one: "any step" is a property of the fault, not of the query.)
  const Fault* find(FaultKind kind, std::size_t rank, std::uint64_t seq,
                    std::optional<std::uint32_t> step = std::nullopt) const;
  // Whether any fault of `kind` hits (rank, seq), whatever its step.
  bool any(FaultKind kind, std::size_t rank, std::uint64_t seq) const;
  // The first create fault for (stage, process); null if none.
  const Fault* find_create(CreateStage stage, std::size_t process) const;
  const std::vector<Fault>& faults() const { return faults_; }

 private:
  std::vector<Fault> faults_;
};

// Acts on a create fault for (stage, process), if the plan has one: _exit()s
// with its code, or throws std::runtime_error("injected fault: ...") (the
// caller's creation step catches it like any exception of that step).
void fire_create_fault(const FaultPlan& plan, CreateStage stage, std::size_t process);

// An adapter fault: forwards every verb to `inner`, except that the fault's
// verb (any verb when the fault names none) fails once, at its first call,
// with kDeviceError "injected fault: <verb> failed on rank R in collective #K".
// The verbs are the adapter's (divide is named "scale") and the executors'
// two operations, "exchange" (an in-process step) and "combine" (a received
// message), which it sees as a decorator (core/work.hpp).
// Built per rank and per collective, for the (rank, seq) the fault names.
class FaultyAdapter final : public AdapterDecorator {
 public:
  FaultyAdapter(DeviceAdapter& inner, const Fault& fault);
  DeviceKind kind() const noexcept override { return inner_.kind(); }
  Result<std::shared_ptr<AdapterState>> prepare(const TensorView& view, DeviceId device) override;
  Status begin(const Queue& queue, const AdapterState* producer) override;
  Status finish(const Queue& queue) override;
  Result<std::shared_ptr<void>> allocate(DeviceId device, std::size_t bytes) override;
  Result<std::shared_ptr<void>> allocate_host_staging(DeviceId device, std::size_t bytes) override {
    return inner_.allocate_host_staging(device, bytes);
  }
  Result<Ticket> copy(const Queue& queue, void* dst, const void* src, std::size_t bytes) override;
  Result<Ticket> reduce(const Queue& queue, void* dst, const void* a, const void* b,
                        std::size_t count, DataType dtype, ReduceOp op) override {
    return inner_.reduce(queue, dst, a, b, count, dtype, op);
  }
  Result<Ticket> divide(const Queue& queue, void* data, std::size_t count, DataType dtype,
                        std::size_t divisor) override;
  Status wait(const Queue& queue, Ticket ticket) override { return inner_.wait(queue, ticket); }
  Status entering(const char* operation) override;

 private:
  // The injected error if `verb` is the one to fail (and has not failed yet).
  std::optional<Status> trip(const char* verb);

  DeviceAdapter& inner_;
  AdapterDecorator* const decorated_;  // inner_, when it is a decorator too
  const Fault fault_;
  std::atomic<bool> fired_{false};  // a transport may combine from another thread
};

}  // namespace ruccl::core
