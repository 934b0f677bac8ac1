// all_reduce: the seed's all-reduce example, on the Session API.
//
// N peers (one std::thread each) register with one Session, then all-reduce
// `count` f32 elements with Sum and with Mean, and end with finish_collective.
// Rank r's input is x(r, i) = (r + 1) * ((i % 17) + 1): small integers, so the
// Sum is exact in any order, S(i) = N(N+1)/2 * ((i % 17) + 1), and the Mean is
// the one correctly rounded float division S(i) / N. Every element is checked,
// and so is that the inputs were left unchanged. All peers' failures are
// collected and reported together; the exit status is 0 only if every check
// passed (1: a check failed, 2: bad arguments, 3: the device asked for is not
// available, e.g. --device cuda on a machine without a usable GPU).
//
//   all_reduce [--ranks N] [--count N] [--device host|cuda]
#include <chrono>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "device/cuda/cuda_backend.hpp"  // uploads and downloads (no CUDA headers)
#include "ruccl/ruccl.hpp"

namespace {

using ruccl::DeviceKind;
using ruccl::Result;
using ruccl::Status;

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoDevice = 3;  // ctest counts it as skipped (SKIP_RETURN_CODE)
// Bounds every wait, so a broken group fails well inside the ctest timeout.
constexpr std::chrono::milliseconds kTimeout{60'000};

struct Options {
  std::size_t ranks = 4;
  std::size_t count = 257;
  DeviceKind device = DeviceKind::kHost;
};

void print_usage(std::FILE* to) {
  std::fprintf(to,
               "usage: all_reduce [--ranks N] [--count N] [--device host|cuda]\n"
               "  --ranks N    peers (threads), 1..1024 (default 4)\n"
               "  --count N    f32 elements per peer (default 257)\n"
               "  --device D   where the tensors live: host (default) or cuda\n");
}

std::optional<std::size_t> parse_size(std::string_view text) {
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Accepts "--name value" and "--name=value". Returns an error message or nothing.
std::optional<std::string> parse_args(int argc, char** argv, Options& options, bool& help) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      help = true;
      return std::nullopt;
    }
    std::string_view name = arg;
    std::optional<std::string_view> value;
    if (const auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    if (name != "--ranks" && name != "--count" && name != "--device")
      return "unknown option '" + std::string(arg) + "'";
    if (!value) {
      if (i + 1 >= argc) return std::string(name) + " needs a value";
      value = argv[++i];
    }
    if (name == "--device") {
      if (*value == "host") options.device = DeviceKind::kHost;
      else if (*value == "cuda") options.device = DeviceKind::kCuda;
      else return "--device must be host or cuda, not '" + std::string(*value) + "'";
      continue;
    }
    const auto number = parse_size(*value);
    if (!number) return std::string(name) + " needs a non-negative integer, not '" + std::string(*value) + "'";
    if (name == "--ranks") {
      if (*number < 1 || *number > 1024) return "--ranks must be in 1..1024";
      options.ranks = *number;
    } else {
      options.count = *number;
    }
  }
  return std::nullopt;
}

// --- Where the tensors live: the one device-specific part of the example. ---
// On the host a peer's input is its vector itself; on CUDA (logical devices
// cuda:0..N-1, which the backend maps to GPU i % gpu_count: all on GPU 0 on a
// one-GPU machine) the input is uploaded to device memory and results and
// inputs are read back. Everything else in this file is device-independent.
struct PlacedInput {
  ruccl::TensorView view;                // what the collective reads
  std::shared_ptr<void> device_memory;  // CUDA only: owns view.data
};

class Placement {
 public:
  static Result<Placement> choose(DeviceKind kind) {
    if (kind == DeviceKind::kHost) return Placement(kind, nullptr);
    // kUnsupported when this build has no CUDA backend or there is no usable GPU.
    auto adapter = ruccl::make_adapter(kind);
    if (!adapter) return adapter.status();
    return Placement(kind, std::move(adapter).value());
  }
  DeviceKind kind() const { return kind_; }
  ruccl::DeviceId device(std::size_t peer) const { return {kind_, peer}; }
  // Puts a peer's input where the collective will read it.
  Result<PlacedInput> place(std::vector<float>& host, std::size_t peer) const {
    const ruccl::DeviceId where = device(peer);
    if (!adapter_)
      return PlacedInput{ruccl::TensorView::of(host.data(), ruccl::DataType::kF32, host.size(), where), nullptr};
    const std::size_t bytes = host.size() * sizeof(float);
    auto memory = adapter_->allocate(where, bytes);
    if (!memory) return memory.status();
    if (Status s = ruccl::cuda::copy_bytes(memory->get(), host.data(), bytes); !s) return s;
    ruccl::TensorView view = ruccl::TensorView::of(memory->get(), ruccl::DataType::kF32, host.size(), where);
    return PlacedInput{view, std::move(memory).value()};
  }
  // `count` f32 elements at `data` (host or device memory), as host values.
  Result<std::vector<float>> read(const void* data, std::size_t count) const {
    std::vector<float> out(count);
    if (count == 0) return out;
    if (!adapter_) {
      std::memcpy(out.data(), data, count * sizeof(float));
      return out;
    }
    if (Status s = ruccl::cuda::copy_bytes(out.data(), data, count * sizeof(float)); !s) return s;
    return out;
  }

 private:
  Placement(DeviceKind kind, std::shared_ptr<ruccl::DeviceAdapter> adapter)
      : kind_(kind), adapter_(std::move(adapter)) {}
  DeviceKind kind_;
  std::shared_ptr<ruccl::DeviceAdapter> adapter_;  // CUDA: allocates the inputs
};

// --- Inputs and their closed-form answers. ---
float input_value(std::size_t rank, std::size_t i) {
  return static_cast<float>((rank + 1) * ((i % 17) + 1));
}
float expected_sum(std::size_t ranks, std::size_t i) {
  return static_cast<float>(ranks * (ranks + 1) / 2 * ((i % 17) + 1));
}
float expected_mean(std::size_t ranks, std::size_t i) {
  return expected_sum(ranks, i) / static_cast<float>(ranks);
}

// The checks, in report order. Each peer records its first failure per check.
enum Check { kRegister, kSum, kMean, kInputs, kFinish, kCheckCount };
constexpr const char* kCheckNames[kCheckCount] = {"register", "sum all-reduce", "mean all-reduce",
                                                  "inputs unchanged", "finish_collective"};

struct Failures {
  std::mutex mutex;
  std::vector<std::string> by_check[kCheckCount];
  void add(Check check, std::size_t peer, const std::string& what) {
    std::lock_guard lock(mutex);
    by_check[check].push_back("peer " + std::to_string(peer) + ": " + what);
  }
};

// Compares a result with a closed form; describes the first mismatch and the total.
std::optional<std::string> compare(const std::vector<float>& got, std::size_t count,
                                   float (*expected)(std::size_t, std::size_t), std::size_t ranks) {
  if (got.size() != count)
    return "result has " + std::to_string(got.size()) + " elements, expected " + std::to_string(count);
  std::size_t wrong = 0;
  std::string first;
  for (std::size_t i = 0; i < count; ++i) {
    const float want = expected(ranks, i);
    if (got[i] == want) continue;
    if (wrong++ == 0)
      first = "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
              std::to_string(want);
  }
  if (wrong == 0) return std::nullopt;
  return std::to_string(wrong) + " wrong elements; first: " + first;
}

// One peer's whole life: register, Sum, Mean, check, finish. Ranks follow
// ascending peer ids, so peer p is rank p here.
void run_peer(ruccl::Session& session, const Placement& placement, const Options& options,
              std::size_t peer, Failures& failures) {
  const std::size_t rank = peer;
  std::vector<float> input(options.count);
  for (std::size_t i = 0; i < options.count; ++i) input[i] = input_value(rank, i);
  const std::vector<float> original = input;
  auto placed = placement.place(input, peer);
  if (!placed) {
    failures.add(kRegister, peer, "placing the input on " +
                                      ruccl::device_name(placement.device(peer)) + ": " +
                                      placed.status().to_string());
    session.reset_collective();  // the group can never complete: wake the others
    return;
  }
  const ruccl::TensorView view = placed->view;

  // RUCCL_* environment variables (e.g. RUCCL_TIMEOUT) override the defaults.
  auto config = ruccl::Config::from_env(ruccl::Config().with_timeout(kTimeout));
  const Status registered =
      config ? session.register_peer(peer, placement.device(peer),
                                     config->with_num_devices(options.ranks))
             : config.status();
  if (!registered) {
    failures.add(kRegister, peer, registered.to_string());
    // The group can never complete: wake the peers waiting for it (kAborted)
    // instead of letting them run into the timeout.
    session.reset_collective();
    return;
  }

  const struct {
    Check check;
    ruccl::ReduceOp op;
    float (*expected)(std::size_t, std::size_t);
  } runs[] = {{kSum, ruccl::ReduceOp::kSum, expected_sum},
              {kMean, ruccl::ReduceOp::kMean, expected_mean}};
  for (const auto& run : runs) {
    auto result = session.all_reduce(peer, view, run.op);
    if (!result) {
      failures.add(run.check, peer, result.status().to_string());
      continue;
    }
    auto values = placement.read(result->data(), result->count());
    if (!values) {
      failures.add(run.check, peer, "reading the result: " + values.status().to_string());
      continue;
    }
    if (auto bad = compare(*values, options.count, run.expected, options.ranks))
      failures.add(run.check, peer, *bad);
  }

  auto now = placement.read(view.data, options.count);
  if (!now) {
    failures.add(kInputs, peer, "reading the input back: " + now.status().to_string());
  } else if (*now != original) {
    std::size_t first = 0;
    while ((*now)[first] == original[first]) ++first;
    failures.add(kInputs, peer, "input element " + std::to_string(first) + " changed from " +
                                    std::to_string(original[first]) + " to " +
                                    std::to_string((*now)[first]));
  }

  const Status finished = session.finish_collective(peer);
  if (!finished) failures.add(kFinish, peer, finished.to_string());
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  bool help = false;
  if (const auto error = parse_args(argc, argv, options, help)) {
    std::fprintf(stderr, "all_reduce: %s\n", error->c_str());
    print_usage(stderr);
    return kExitUsage;
  }
  if (help) {
    print_usage(stdout);
    return 0;
  }

  auto placement = Placement::choose(options.device);
  if (!placement) {
    std::fprintf(stderr,
                 "all_reduce: --device %s was asked for, but it is not available here, so "
                 "nothing ran:\n  %s\n",
                 std::string(ruccl::device_kind_name(options.device)).c_str(),
                 placement.status().to_string().c_str());
    return kExitNoDevice;
  }

  ruccl::Session session;
  Failures failures;
  const auto start = std::chrono::steady_clock::now();
  {
    std::vector<std::jthread> peers;
    peers.reserve(options.ranks);
    for (std::size_t peer = 0; peer < options.ranks; ++peer)
      peers.emplace_back([&, peer] { run_peer(session, *placement, options, peer, failures); });
  }  // jthreads join here
  const double elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  std::printf("all_reduce: %zu ranks, %zu f32 elements, device %s\n", options.ranks,
              options.count, std::string(ruccl::device_kind_name(placement->kind())).c_str());
  bool all_passed = true;
  for (int check = 0; check < kCheckCount; ++check) {
    const auto& failed = failures.by_check[check];
    all_passed = all_passed && failed.empty();
    std::printf("  %-18s %s\n", kCheckNames[check], failed.empty() ? "pass" : "FAIL");
    for (const auto& line : failed) std::printf("    %s\n", line.c_str());
  }
  std::printf("  elapsed            %.3f ms\n", elapsed_ms);
  std::printf("%s\n", all_passed ? "PASSED" : "FAILED");
  return all_passed ? 0 : kExitFailed;
}
