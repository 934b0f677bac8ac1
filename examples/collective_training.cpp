// collective_training: data-parallel training over ruccl, with a checkpoint.
//
//   collective_training [--ranks N] run DIR          in-process: N ranks (threads), default 2
//   collective_training [--ranks N] resume DIR
//   collective_training [--ranks N] --mismatch
//   mpirun -np P collective_training --world [--devices-per-process D] run|resume DIR | --mismatch
//
// Every rank holds the same small network (4 inputs -> 16 tanh -> 1, f32) and
// its own shard of deterministic synthetic data (a fixed nonlinear target).
// One training step: forward and backward on the rank's batch, then one Mean
// all-reduce per parameter gradient, in parameter order (layer1.weight [16, 4],
// layer1.bias [16], layer2.weight [1, 16], layer2.bias [1]), then SGD with
// momentum (v = mu v + g; p -= lr v). Parameter order, shapes and dtypes must
// match across ranks; ruccl checks that on every call, and --mismatch shows it:
// rank 1 passes layer1.weight's gradient with a wrong shape, and every rank must
// get the same typed error (ShapeMismatch naming rank 1).
//
// The initial parameters are made by rank 0 and broadcast to the others.
// In-process, the ranks are peers of one ruccl::Session (the seed's API); with
// --world (under mpirun or srun), they are the ranks of
// ruccl::create_world_communicator: P processes x D devices, ordered by (node,
// process, device).
//
// run DIR: DIR must not exist. Runs the first update, saves every rank's model
// and optimizer state (momentum) to DIR/rank-<r>.state, runs the second update
// and prints the checksum of the final parameters (FNV-1a 64 over their bytes,
// in hex; every rank checks that the others hold the same value).
// resume DIR: loads that state, runs the second update and prints the checksum,
// which must equal run's bit for bit.
//
// State files are written to a temporary file, fsync'ed and renamed into
// place. Layout (native byte order, checked on load):
//   magic "RUCCLTRN" | u32 version | u32 byte-order tag 0x01020304 | u64 payload bytes |
//   payload | u64 FNV-1a 64 of everything before it
// payload: u32 world, u32 rank, u64 step, f64 lr, f64 momentum, u64 seed, u32 inputs,
//   u32 hidden, u32 batch, u32 parameters, then per parameter: u16 name length,
//   name, u8 dtype, u8 ndim, u64 dims..., values, momentum buffer.
// A truncated, corrupt or foreign file is a clear error, agreed by every rank.
//
// Exit status: 0 ok, 1 failed (every rank prints or agrees), 2 bad arguments.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ruccl/ruccl.hpp"
#if RUCCL_TRAINING_WITH_WORLD
#include "ruccl/world.hpp"
#endif

namespace {

using ruccl::Communicator;
using ruccl::DataType;
using ruccl::DeviceId;
using ruccl::ErrorCode;
using ruccl::ReduceOp;
using ruccl::Result;
using ruccl::Shape;
using ruccl::Status;
using ruccl::Tensor;
using ruccl::TensorView;

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

// ---------------------------------------------------------------- helpers

std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t h = 0xcbf29ce484222325ULL) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex64(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

// splitmix64: a deterministic stream per (seed, step, rank).
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1), exactly representable (24 random bits).
  float uniform() { return float(std::int64_t(next() >> 40) - (std::int64_t(1) << 23)) / float(1 << 23); }
};

// ---------------------------------------------------------------- the model

struct Hyper {
  double lr = 0.05;
  double momentum = 0.9;
  std::uint64_t seed = 20240611;
  std::uint32_t inputs = 4;
  std::uint32_t hidden = 16;
  std::uint32_t batch = 32;  // samples per rank and step
  friend bool operator==(const Hyper&, const Hyper&) = default;
};

struct Param {
  std::string name;
  Shape shape;
  std::vector<float> value;
  std::vector<float> momentum;  // the optimizer's state
};

// Parameters in their fixed order; every rank must all-reduce them in this order.
std::vector<Param> make_model(const Hyper& h) {
  auto param = [](std::string name, Shape shape) {
    std::size_t n = 1;
    for (std::size_t d : shape) n *= d;
    return Param{std::move(name), std::move(shape), std::vector<float>(n, 0.0f), std::vector<float>(n, 0.0f)};
  };
  std::vector<Param> m;
  m.push_back(param("layer1.weight", {h.hidden, h.inputs}));
  m.push_back(param("layer1.bias", {h.hidden}));
  m.push_back(param("layer2.weight", {1, h.hidden}));
  m.push_back(param("layer2.bias", {1}));
  return m;
}

// Rank 0's initial parameters (the others receive them by broadcast).
void init_model(std::vector<Param>& m, const Hyper& h) {
  Rng rng{h.seed};
  for (float& w : m[0].value) w = rng.uniform() / std::sqrt(float(h.inputs));
  for (float& w : m[2].value) w = rng.uniform() / std::sqrt(float(h.hidden));
}

float target(const float* x) { return std::sin(1.5f * x[0] - x[1]) + 0.5f * x[2] * x[3] + 0.1f * x[0]; }

// Forward and backward on the rank's batch of `step`: returns the loss
// (mean over the batch of (y - t)^2 / 2) and fills `grads` (same order as m).
double gradients(const std::vector<Param>& m, const Hyper& h, std::uint64_t step, std::size_t rank,
                 std::vector<std::vector<float>>& grads) {
  const std::size_t in = h.inputs, hid = h.hidden, batch = h.batch;
  grads.assign(m.size(), {});
  for (std::size_t i = 0; i < m.size(); ++i) grads[i].assign(m[i].value.size(), 0.0f);
  const float* w1 = m[0].value.data();
  const float* b1 = m[1].value.data();
  const float* w2 = m[2].value.data();
  const float b2 = m[3].value[0];
  Rng rng{h.seed ^ (0x5851f42d4c957f2dULL * (step + 1)) ^ (0x2545f4914f6cdd1dULL * (rank + 1))};
  std::vector<float> x(in), a(hid);
  double loss = 0.0;
  for (std::size_t s = 0; s < batch; ++s) {
    for (float& v : x) v = rng.uniform();
    float y = b2;
    for (std::size_t j = 0; j < hid; ++j) {
      float z = b1[j];
      for (std::size_t i = 0; i < in; ++i) z += w1[j * in + i] * x[i];
      a[j] = std::tanh(z);
      y += w2[j] * a[j];
    }
    const float e = y - target(x.data());
    loss += 0.5 * double(e) * double(e) / double(batch);
    const float dy = e / float(batch);
    grads[3][0] += dy;
    for (std::size_t j = 0; j < hid; ++j) {
      grads[2][j] += dy * a[j];
      const float dz = dy * w2[j] * (1.0f - a[j] * a[j]);
      grads[1][j] += dz;
      for (std::size_t i = 0; i < in; ++i) grads[0][j * in + i] += dz * x[i];
    }
  }
  return loss;
}

std::uint64_t params_checksum(const std::vector<Param>& m) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const Param& p : m) h = fnv1a64(p.value.data(), p.value.size() * sizeof(float), h);
  return h;
}

// ---------------------------------------------------------------- the group
// One rank's view of the collective group: the Session (in-process) or a
// world Communicator (across processes), behind the two calls training needs.

class Group {
 public:
  virtual ~Group() = default;
  virtual std::size_t rank() const = 0;
  virtual std::size_t world() const = 0;
  virtual DeviceId device() const = 0;
  virtual Result<Tensor> all_reduce(const TensorView& in, ReduceOp op) = 0;
  // Rank 0 passes its tensor, the others nullptr; every rank gets rank 0's.
  virtual Result<Tensor> broadcast_from_rank0(const TensorView* in) = 0;
};

class SessionGroup final : public Group {
 public:
  SessionGroup(ruccl::Session& s, ruccl::PeerId peer, std::size_t n) : s_(s), peer_(peer), n_(n) {}
  std::size_t rank() const override { return peer_; }  // peers 0..n-1: rank = peer id
  std::size_t world() const override { return n_; }
  DeviceId device() const override { return ruccl::host_device(peer_); }
  Result<Tensor> all_reduce(const TensorView& in, ReduceOp op) override { return s_.all_reduce(peer_, in, op); }
  Result<Tensor> broadcast_from_rank0(const TensorView* in) override {
    return s_.broadcast(peer_, in ? std::optional<TensorView>(*in) : std::nullopt);
  }

 private:
  ruccl::Session& s_;
  ruccl::PeerId peer_;
  std::size_t n_;
};

class CommGroup final : public Group {
 public:
  CommGroup(Communicator& c, std::size_t rank) : c_(c), rank_(rank) {}
  std::size_t rank() const override { return rank_; }
  std::size_t world() const override { return c_.world_size(); }
  DeviceId device() const override { return c_.devices()[rank_ - c_.first_rank()]; }
  Result<Tensor> all_reduce(const TensorView& in, ReduceOp op) override { return c_.all_reduce(rank_, in, op); }
  Result<Tensor> broadcast_from_rank0(const TensorView* in) override { return c_.broadcast(rank_, in); }

 private:
  Communicator& c_;
  std::size_t rank_;
};

// Every rank says whether it is ok; every rank learns which ranks are not.
// (One Sum all-reduce of a vector with one slot per rank.)
Result<std::vector<std::size_t>> agree(Group& g, bool ok) {
  std::vector<std::int32_t> flags(g.world(), 0);
  flags[g.rank()] = ok ? 0 : 1;
  auto sum = g.all_reduce(TensorView::of(flags.data(), DataType::kI32, flags.size(), g.device()), ReduceOp::kSum);
  if (!sum) return sum.status();
  std::vector<std::size_t> failed;
  for (std::size_t r = 0; r < g.world(); ++r)
    if (sum->as<std::int32_t>()[r] != 0) failed.push_back(r);
  return failed;
}

std::string rank_list(const std::vector<std::size_t>& ranks) {
  std::string s;
  for (std::size_t r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

// Gives every rank rank 0's initial parameters.
Status broadcast_init(Group& g, std::vector<Param>& m, const Hyper& h) {
  if (g.rank() == 0) init_model(m, h);
  for (Param& p : m) {
    TensorView v{p.value.data(), DataType::kF32, p.shape, g.device(), nullptr};
    auto got = g.broadcast_from_rank0(g.rank() == 0 ? &v : nullptr);
    if (!got) return got.status().with_context("broadcast of " + p.name);
    std::memcpy(p.value.data(), got->data(), p.value.size() * sizeof(float));
  }
  return Status::ok();
}

// One data-parallel update: local gradients, Mean all-reduce per parameter, SGD
// with momentum. `mismatch`: rank 1 passes layer1.weight's gradient with a wrong shape.
Status train_step(Group& g, std::vector<Param>& m, const Hyper& h, std::uint64_t step, double& mean_loss,
                  bool mismatch = false) {
  std::vector<std::vector<float>> grads;
  double loss = gradients(m, h, step, g.rank(), grads);
  for (std::size_t i = 0; i < m.size(); ++i) {
    Param& p = m[i];
    Shape shape = p.shape;
    if (mismatch && g.rank() == 1 && i == 0) shape[0] -= 1;  // "forgot" a row
    TensorView gv{grads[i].data(), DataType::kF32, shape, g.device(), nullptr};
    auto mean = g.all_reduce(gv, ReduceOp::kMean);
    if (!mean) return mean.status().with_context("step " + std::to_string(step) + ": all-reduce of " + p.name);
    const float* gm = mean->as<float>().data();
    const float lr = float(h.lr), mu = float(h.momentum);
    for (std::size_t k = 0; k < p.value.size(); ++k) {
      p.momentum[k] = mu * p.momentum[k] + gm[k];
      p.value[k] -= lr * p.momentum[k];
    }
  }
  auto l = g.all_reduce(TensorView::of(&loss, DataType::kF64, 1, g.device()), ReduceOp::kMean);
  if (!l) return l.status().with_context("step " + std::to_string(step) + ": all-reduce of the loss");
  mean_loss = l->as<double>()[0];
  return Status::ok();
}

// ---------------------------------------------------------------- state files

struct Writer {
  std::vector<unsigned char> b;
  void raw(const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    b.insert(b.end(), c, c + n);
  }
  template <typename T>
  void put(T v) { raw(&v, sizeof v); }
};

struct Reader {
  const unsigned char* p;
  std::size_t left;
  bool ok = true;
  bool raw(void* out, std::size_t n) {
    if (!ok || n > left) return ok = false;
    std::memcpy(out, p, n);
    p += n;
    left -= n;
    return true;
  }
  template <typename T>
  T get() {
    T v{};
    raw(&v, sizeof v);
    return v;
  }
};

constexpr char kMagic[8] = {'R', 'U', 'C', 'C', 'L', 'T', 'R', 'N'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint32_t kByteOrder = 0x01020304;
constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 8;
constexpr std::size_t kTrailerBytes = 8;
constexpr std::size_t kMaxStateBytes = std::size_t{1} << 30;

struct TrainState {
  std::uint32_t world = 0, rank = 0;
  std::uint64_t step = 0;
  Hyper hyper;
  std::vector<Param> model;
};

std::string state_path(const std::string& dir, std::size_t rank) {
  return dir + "/rank-" + std::to_string(rank) + ".state";
}

std::vector<unsigned char> encode(const TrainState& s) {
  Writer pl;
  pl.put(s.world);
  pl.put(s.rank);
  pl.put(s.step);
  pl.put(s.hyper.lr);
  pl.put(s.hyper.momentum);
  pl.put(s.hyper.seed);
  pl.put(s.hyper.inputs);
  pl.put(s.hyper.hidden);
  pl.put(s.hyper.batch);
  pl.put(std::uint32_t(s.model.size()));
  for (const Param& p : s.model) {
    pl.put(std::uint16_t(p.name.size()));
    pl.raw(p.name.data(), p.name.size());
    pl.put(std::uint8_t(DataType::kF32));
    pl.put(std::uint8_t(p.shape.size()));
    for (std::size_t d : p.shape) pl.put(std::uint64_t(d));
    pl.raw(p.value.data(), p.value.size() * sizeof(float));
    pl.raw(p.momentum.data(), p.momentum.size() * sizeof(float));
  }
  Writer f;
  f.raw(kMagic, sizeof kMagic);
  f.put(kVersion);
  f.put(kByteOrder);
  f.put(std::uint64_t(pl.b.size()));
  f.raw(pl.b.data(), pl.b.size());
  f.put(fnv1a64(f.b.data(), f.b.size()));
  return f.b;
}

std::string errno_text(int e) { return std::strerror(e); }

// Writes `bytes` to `path` atomically: a temporary file in the same directory,
// fsync, rename over `path`, fsync of the directory.
Status write_atomically(const std::string& dir, const std::string& path, const std::vector<unsigned char>& bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status(ErrorCode::kInvalidArgument, "cannot create " + tmp + ": " + errno_text(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status(ErrorCode::kInvalidArgument, "cannot write " + tmp + ": " + errno_text(e));
    }
    done += std::size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return Status(ErrorCode::kInvalidArgument, "cannot flush " + tmp + ": " + errno_text(e));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return Status(ErrorCode::kInvalidArgument, "cannot rename " + tmp + " to " + path + ": " + errno_text(e));
  }
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return Status::ok();
}

Status save_state(const std::string& dir, const TrainState& s) {
  // Processes on other nodes may not share DIR: each makes it if it is missing
  // (run checked at its start that it did not exist anywhere).
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return Status(ErrorCode::kInvalidArgument, "cannot create " + dir + ": " + errno_text(errno));
  return write_atomically(dir, state_path(dir, s.rank), encode(s));
}

Result<std::vector<unsigned char>> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(ErrorCode::kInvalidArgument, "cannot open " + path + ": " + errno_text(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || std::uint64_t(st.st_size) > kMaxStateBytes) {
    ::close(fd);
    return Status(ErrorCode::kInvalidArgument, path + ": not a regular file of at most 1 GiB");
  }
  std::vector<unsigned char> b(std::size_t(st.st_size));
  std::size_t done = 0;
  while (done < b.size()) {
    const ssize_t n = ::read(fd, b.data() + done, b.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return Status(ErrorCode::kInvalidArgument, "cannot read " + path + ": " + errno_text(e));
    }
    if (n == 0) break;
    done += std::size_t(n);
  }
  ::close(fd);
  b.resize(done);
  return b;
}

// Loads and checks the state of `rank`: the file's integrity first (magic,
// version, byte order, size, checksum), then that it belongs to this run
// (world, rank, step, hyper-parameters, parameter names, dtypes and shapes).
Result<TrainState> load_state(const std::string& dir, std::size_t rank, std::size_t world, const Hyper& want) {
  const std::string path = state_path(dir, rank);
  auto file = read_file(path);
  if (!file) return file.status();
  const std::vector<unsigned char>& b = file.value();
  auto bad = [&](const std::string& why) { return Status(ErrorCode::kInvalidArgument, path + ": " + why); };
  if (b.size() < kHeaderBytes + kTrailerBytes)
    return bad("truncated state file: " + std::to_string(b.size()) + " bytes, a header alone needs " +
               std::to_string(kHeaderBytes + kTrailerBytes));
  Reader hr{b.data(), kHeaderBytes};
  char magic[8];
  hr.raw(magic, sizeof magic);
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    return bad("not a collective_training state file (bad magic)");
  const auto version = hr.get<std::uint32_t>();
  if (version != kVersion)
    return bad("unsupported state file version " + std::to_string(version) + " (this program reads version " +
               std::to_string(kVersion) + ")");
  if (hr.get<std::uint32_t>() != kByteOrder) return bad("written on a machine of another byte order");
  const auto payload = hr.get<std::uint64_t>();
  if (payload > kMaxStateBytes)
    return bad("corrupt header: a payload of " + std::to_string(payload) + " bytes is implausible");
  if (b.size() != kHeaderBytes + payload + kTrailerBytes)
    return bad((b.size() < kHeaderBytes + payload + kTrailerBytes ? "truncated state file: " : "size mismatch: ") +
               std::to_string(b.size()) + " bytes, the header says " +
               std::to_string(kHeaderBytes + payload + kTrailerBytes));
  std::uint64_t stored = 0;
  std::memcpy(&stored, b.data() + kHeaderBytes + payload, sizeof stored);
  const std::uint64_t computed = fnv1a64(b.data(), kHeaderBytes + payload);
  if (stored != computed)
    return bad("checksum mismatch (stored " + hex64(stored) + ", computed " + hex64(computed) +
               "): the state file is corrupt");

  Reader r{b.data() + kHeaderBytes, payload};
  TrainState s;
  s.world = r.get<std::uint32_t>();
  s.rank = r.get<std::uint32_t>();
  s.step = r.get<std::uint64_t>();
  s.hyper.lr = r.get<double>();
  s.hyper.momentum = r.get<double>();
  s.hyper.seed = r.get<std::uint64_t>();
  s.hyper.inputs = r.get<std::uint32_t>();
  s.hyper.hidden = r.get<std::uint32_t>();
  s.hyper.batch = r.get<std::uint32_t>();
  const auto nparams = r.get<std::uint32_t>();
  if (!r.ok) return bad("payload too short for its fields");
  if (s.world != world || s.rank != rank)
    return bad("saved by rank " + std::to_string(s.rank) + " of a " + std::to_string(s.world) +
               "-rank world; this is rank " + std::to_string(rank) + " of " + std::to_string(world));
  if (s.step != 1) return bad("saved after step " + std::to_string(s.step) + ", expected step 1");
  if (!(s.hyper == want)) return bad("saved with other hyper-parameters than this program's");
  s.model = make_model(want);
  if (nparams != s.model.size())
    return bad(std::to_string(nparams) + " parameters, the model has " + std::to_string(s.model.size()));
  for (Param& p : s.model) {
    const auto len = r.get<std::uint16_t>();
    std::string name(len, '\0');
    r.raw(name.data(), len);
    const auto dtype = r.get<std::uint8_t>();
    const auto ndim = r.get<std::uint8_t>();
    Shape shape(ndim);
    for (std::size_t& d : shape) d = std::size_t(r.get<std::uint64_t>());
    if (!r.ok) return bad("payload too short for parameter " + p.name);
    if (name != p.name) return bad("parameter '" + name + "' where the model has '" + p.name + "'");
    if (dtype != std::uint8_t(DataType::kF32))
      return bad("parameter " + p.name + " has dtype #" + std::to_string(dtype) + ", the model f32");
    if (shape != p.shape)
      return bad("parameter " + p.name + " has shape " + ruccl::shape_string(shape) + ", the model " +
                 ruccl::shape_string(p.shape));
    r.raw(p.value.data(), p.value.size() * sizeof(float));
    r.raw(p.momentum.data(), p.momentum.size() * sizeof(float));
    if (!r.ok) return bad("payload too short for the values of " + p.name);
  }
  if (r.left != 0) return bad(std::to_string(r.left) + " unexpected bytes after the last parameter");
  return s;
}

// ---------------------------------------------------------------- one rank

enum class Command { kRun, kResume, kMismatch };

struct Options {
  Command command = Command::kRun;
  std::string dir;
  bool world = false;
  std::size_t ranks = 2;                // in-process
  std::size_t devices_per_process = 1;  // --world
};

std::mutex g_print;
void say(std::FILE* to, const std::string& line) {
  std::lock_guard lock(g_print);
  std::fprintf(to, "%s\n", line.c_str());
  std::fflush(to);
}

// `dir_existed`: this process saw DIR at its start (run only). Returns 0 or kExitFailed.
int run_rank(Group& g, const Options& o, bool dir_existed) {
  const Hyper hyper;
  const std::size_t rank = g.rank();
  const std::string me = "collective_training: rank " + std::to_string(rank) + ": ";
  auto error = [&](const Status& s) {
    say(stderr, me + s.to_string());
    return kExitFailed;
  };
  // A step every rank takes together: on a local failure, every rank stops.
  auto together = [&](const Status& local, const char* what) -> bool {
    if (!local.is_ok()) say(stderr, me + local.to_string());
    auto failed = agree(g, local.is_ok());
    if (!failed) {
      error(failed.status());
      return false;
    }
    if (failed->empty()) return true;
    if (local.is_ok())
      say(stderr, me + "stopping: " + what + " failed on rank(s) " + rank_list(failed.value()));
    return false;
  };

  std::vector<Param> model = make_model(hyper);
  double loss = 0.0;

  if (o.command == Command::kMismatch) {
    if (auto s = broadcast_init(g, model, hyper); !s) return error(s);
    const Status s = train_step(g, model, hyper, 1, loss, /*mismatch=*/true);
    if (s.code() == ErrorCode::kShapeMismatch && s.message().find("rank 1") != std::string::npos) {
      say(stdout, me + "got the expected typed error: " + s.to_string());
      return 0;
    }
    say(stderr, me + "expected ShapeMismatch naming rank 1, got " + (s ? std::string("success") : s.to_string()));
    return kExitFailed;
  }

  if (o.command == Command::kRun) {
    // DIR must be new everywhere (the in-process main made it atomically already).
    Status fresh;
    if (dir_existed)
      fresh = Status(ErrorCode::kInvalidArgument,
                     o.dir + " already exists: run needs a new directory (resume continues from one)");
    if (!together(fresh, "the directory check")) return kExitFailed;
    if (auto s = broadcast_init(g, model, hyper); !s) return error(s);
    if (auto s = train_step(g, model, hyper, 1, loss); !s) return error(s);
    if (rank == 0) say(stdout, "collective_training: step 1: mean loss " + std::to_string(loss));
    TrainState st;
    st.world = std::uint32_t(g.world());
    st.rank = std::uint32_t(rank);
    st.step = 1;
    st.hyper = hyper;
    st.model = model;
    if (!together(save_state(o.dir, st), "saving the state")) return kExitFailed;
    if (rank == 0)
      say(stdout, "collective_training: saved the state after step 1 of " + std::to_string(g.world()) +
                      " ranks to " + o.dir + "/rank-<r>.state");
  } else {
    auto st = load_state(o.dir, rank, g.world(), hyper);
    if (!together(st.status(), "loading the state")) return kExitFailed;
    model = std::move(st.value().model);
    if (rank == 0) say(stdout, "collective_training: resumed from " + o.dir + " after step 1");
  }

  if (auto s = train_step(g, model, hyper, 2, loss); !s) return error(s);
  // Data parallelism keeps the replicas identical: check it with Min and Max.
  std::uint64_t sum = params_checksum(model);
  auto lo = g.all_reduce(TensorView::of(&sum, DataType::kU64, 1, g.device()), ReduceOp::kMin);
  if (!lo) return error(lo.status());
  auto hi = g.all_reduce(TensorView::of(&sum, DataType::kU64, 1, g.device()), ReduceOp::kMax);
  if (!hi) return error(hi.status());
  if (lo->as<std::uint64_t>()[0] != sum || hi->as<std::uint64_t>()[0] != sum) {
    say(stderr, me + "replicas differ after step 2: checksum " + hex64(sum) + ", min " +
                    hex64(lo->as<std::uint64_t>()[0]) + ", max " + hex64(hi->as<std::uint64_t>()[0]));
    return kExitFailed;
  }
  if (rank == 0) {
    say(stdout, "collective_training: step 2: mean loss " + std::to_string(loss));
    say(stdout, "collective_training: " + std::to_string(g.world()) + " ranks, final parameters checksum " +
                    hex64(sum) + " (fnv1a64)");
  }
  return 0;
}

// ---------------------------------------------------------------- main

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: collective_training [options] run DIR | resume DIR | --mismatch\n"
               "  run DIR      train 2 steps, saving every rank's state to DIR (must not exist) after step 1\n"
               "  resume DIR   load DIR's state and run step 2 (same checksum as run)\n"
               "  --mismatch   rank 1 passes a wrong gradient shape; every rank must get ShapeMismatch\n"
               "  --ranks N    in-process ranks (threads), default 2\n"
               "  --world      ranks across processes (mpirun/srun): P processes x D devices\n"
               "  --devices-per-process D   with --world, default 1\n");
}

std::optional<std::size_t> parse_size(std::string_view t) {
  std::size_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc{} || end != t.data() + t.size()) return std::nullopt;
  return v;
}

#if RUCCL_TRAINING_WITH_WORLD
bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}
#endif

Result<ruccl::Config> base_config() {
  // Waits end after 60 s, unless RUCCL_TIMEOUT says otherwise.
  return ruccl::Config::from_env(ruccl::Config().with_timeout(std::chrono::seconds(60)));
}

int main_in_process(const Options& o) {
  if (o.command == Command::kRun && ::mkdir(o.dir.c_str(), 0755) != 0) {
    const int e = errno;
    std::fprintf(stderr, "collective_training: %s\n",
                 e == EEXIST ? (o.dir + " already exists: run needs a new directory (resume continues from one)").c_str()
                             : ("cannot create " + o.dir + ": " + errno_text(e)).c_str());
    return kExitFailed;
  }
  auto config = base_config();
  if (!config) {
    std::fprintf(stderr, "collective_training: %s\n", config.status().to_string().c_str());
    return kExitUsage;
  }
  config.value().with_num_devices(o.ranks);
  ruccl::Session session;
  std::vector<int> rc(o.ranks, kExitFailed);
  std::vector<std::thread> threads;
  for (std::size_t peer = 0; peer < o.ranks; ++peer) {
    threads.emplace_back([&, peer] {
      if (Status s = session.register_peer(peer, ruccl::host_device(peer), config.value()); !s) {
        say(stderr, "collective_training: peer " + std::to_string(peer) + ": " + s.to_string());
        return;
      }
      SessionGroup g(session, peer, o.ranks);
      rc[peer] = run_rank(g, o, false);
      (void)session.finish_collective(peer);
    });
  }
  for (auto& t : threads) t.join();
  for (int r : rc)
    if (r != 0) return kExitFailed;
  return 0;
}

int main_world(const Options& o) {
#if RUCCL_TRAINING_WITH_WORLD
  const bool existed = o.command == Command::kRun && exists(o.dir);
  auto config = base_config();
  if (!config) {
    std::fprintf(stderr, "collective_training: %s\n", config.status().to_string().c_str());
    return kExitUsage;
  }
  std::vector<DeviceId> devices;
  for (std::size_t d = 0; d < o.devices_per_process; ++d) devices.push_back(ruccl::host_device(d));
  auto comm = ruccl::create_world_communicator(devices, config.value());
  if (!comm) {
    std::fprintf(stderr, "collective_training: create_world_communicator: %s\n", comm.status().to_string().c_str());
    return kExitFailed;
  }
  Communicator& c = *comm.value();
  if (o.command == Command::kMismatch && c.world_size() < 2) {
    std::fprintf(stderr, "collective_training: --mismatch needs at least 2 ranks\n");
    return kExitUsage;
  }
  std::vector<int> rc(devices.size(), kExitFailed);
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    threads.emplace_back([&, d] {
      CommGroup g(c, c.first_rank() + d);
      rc[d] = run_rank(g, o, existed);
    });
  }
  for (auto& t : threads) t.join();
  for (int r : rc)
    if (r != 0) return kExitFailed;
  return 0;
#else
  (void)o;
  std::fprintf(stderr,
               "collective_training: --world needs ruccl::multinode (a build where CMake found MPI and UCX)\n");
  return kExitUsage;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool have_command = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> std::optional<std::size_t> {
      if (i + 1 >= argc) return std::nullopt;
      return parse_size(argv[++i]);
    };
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--world") {
      o.world = true;
    } else if (a == "--ranks") {
      auto v = value();
      if (!v || *v < 1 || *v > 64) { usage(stderr); return kExitUsage; }
      o.ranks = *v;
    } else if (a == "--devices-per-process") {
      auto v = value();
      if (!v || *v < 1 || *v > 64) { usage(stderr); return kExitUsage; }
      o.devices_per_process = *v;
    } else if (a == "--mismatch" && !have_command) {
      o.command = Command::kMismatch;
      have_command = true;
    } else if ((a == "run" || a == "resume") && !have_command && i + 1 < argc) {
      o.command = a == "run" ? Command::kRun : Command::kResume;
      o.dir = argv[++i];
      have_command = true;
    } else {
      usage(stderr);
      return kExitUsage;
    }
  }
  if (!have_command || (o.command != Command::kMismatch && o.dir.empty())) {
    usage(stderr);
    return kExitUsage;
  }
  if (o.command == Command::kMismatch && !o.world && o.ranks < 2) {
    std::fprintf(stderr, "collective_training: --mismatch needs at least 2 ranks\n");
    return kExitUsage;
  }
  // Trailing slashes would only make the file names ugly.
  while (o.dir.size() > 1 && o.dir.back() == '/') o.dir.pop_back();
  return o.world ? main_world(o) : main_in_process(o);
}
