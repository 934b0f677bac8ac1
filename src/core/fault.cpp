// Fault plans: the parser of the RUCCL_FAULT grammar, the lookup the hooks use,
// and the adapter that fails one device verb on purpose.
#include "core/fault.hpp"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <stdexcept>

#include <unistd.h>

namespace ruccl::core {
namespace {

constexpr CreateStage kStages[] = {CreateStage::kStart,   CreateStage::kTransports,
                                   CreateStage::kAddress, CreateStage::kConnect,
                                   CreateStage::kHandshake, CreateStage::kAgreed};

constexpr std::string_view kVerbs[] = {"prepare",  "begin",   "allocate", "copy",
                                       "exchange", "combine", "scale",    "finish"};

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// Splits `s` at every `sep` (empty pieces kept).
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t at = 0;;) {
    const std::size_t next = s.find(sep, at);
    out.push_back(s.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return out;
    at = next + 1;
  }
}

template <typename T>
std::optional<T> number(std::string_view text) {
  T value{};
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::optional<FaultKind> kind_of(std::string_view name) {
  for (FaultKind k : {FaultKind::kStall, FaultKind::kExit, FaultKind::kDrop, FaultKind::kCorrupt,
                      FaultKind::kAdapter, FaultKind::kCreate, FaultKind::kOom})
    if (fault_kind_name(k) == name) return k;
  return std::nullopt;
}

// The optional keys each kind takes (rank and seq are required for all).
bool takes(FaultKind kind, std::string_view key) {
  if (kind == FaultKind::kCreate)
    return key == "stage" || key == "process" || key == "action" || key == "code";
  if (key == "rank" || key == "seq") return true;
  switch (kind) {
    case FaultKind::kStall: return key == "ms";
    case FaultKind::kExit: return key == "step" || key == "code";
    case FaultKind::kDrop:
    case FaultKind::kCorrupt: return key == "step";
    case FaultKind::kAdapter: return key == "verb";
    case FaultKind::kCreate: break;
    case FaultKind::kOom: return key == "at" || key == "step";
  }
  return false;
}

// One fault's text, e.g. "exit:rank=2,seq=5,step=3".
Result<Fault> parse_one(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return Status(ErrorCode::kInvalidArgument, "fault '" + std::string(text) + "': " + why);
  };
  const std::size_t colon = text.find(':');
  const std::string_view name = trim(text.substr(0, colon));
  const auto kind = kind_of(name);
  if (!kind)
    return bad("unknown kind '" + std::string(name) +
               "' (expected stall, exit, drop, corrupt, adapter, create or oom)");
  Fault f;
  f.kind = *kind;
  bool has_rank = false, has_seq = false, has_stage = false, has_process = false;
  std::vector<std::string_view> seen;
  const std::string_view args = colon == std::string_view::npos ? "" : text.substr(colon + 1);
  for (std::string_view item : split(args, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) return bad("'" + std::string(item) + "' is not key=value");
    const std::string_view key = trim(item.substr(0, eq));
    const std::string_view value = trim(item.substr(eq + 1));
    const std::string what = "'" + std::string(key) + "=" + std::string(value) + "'";
    if (!takes(f.kind, key))
      return bad(std::string(name) + " takes no key '" + std::string(key) + "'");
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      return bad("key '" + std::string(key) + "' given twice");
    seen.push_back(key);
    if (key == "rank") {
      auto v = number<std::size_t>(value);
      if (!v) return bad(what + " is not a rank");
      f.rank = *v;
      has_rank = true;
    } else if (key == "seq") {
      auto v = number<std::uint64_t>(value);
      if (!v) return bad(what + " is not a sequence number");
      f.seq = *v;
      has_seq = true;
    } else if (key == "step") {
      auto v = number<std::uint32_t>(value);
      if (!v) return bad(what + " is not a step index");
      f.step = *v;
    } else if (key == "ms") {
      auto v = number<std::uint32_t>(value);
      if (!v) return bad(what + " is not a number of milliseconds");
      f.stall = std::chrono::milliseconds(*v);
    } else if (key == "stage") {
      const auto* it = std::find_if(std::begin(kStages), std::end(kStages),
                                    [&](CreateStage st) { return create_stage_name(st) == value; });
      if (it == std::end(kStages))
        return bad(what + " is not a creation stage (start, transports, address, connect, "
                          "handshake or agreed)");
      f.stage = *it;
      has_stage = true;
    } else if (key == "process") {
      auto v = number<std::size_t>(value);
      if (!v) return bad(what + " is not a process index");
      f.process = *v;
      has_process = true;
    } else if (key == "action") {
      if (value != "exit" && value != "throw") return bad(what + " is not exit or throw");
      f.throws = value == "throw";
    } else if (key == "code") {
      auto v = number<int>(value);
      if (!v || *v < 0 || *v > 255) return bad(what + " is not an exit code 0..255");
      f.exit_code = *v;
    } else if (key == "at") {
      if (value != "check" && value != "run" && value != "step")
        return bad(what + " is not a point (check, run or step)");
      f.at = std::string(value);
    } else {  // verb
      if (std::find(std::begin(kVerbs), std::end(kVerbs), value) == std::end(kVerbs))
        return bad(what + " is not a device verb (prepare, begin, allocate, copy, exchange, "
                          "combine, scale or finish)");
      f.verb = std::string(value);
    }
  }
  if (f.kind == FaultKind::kCreate) {
    if (!has_stage) return bad("stage=<creation stage> is required");
    if (!has_process) return bad("process=<process index> is required");
    return f;
  }
  if (!has_rank) return bad("rank=<global rank> is required");
  if (!has_seq) return bad("seq=<collective sequence number> is required");
  if (f.kind == FaultKind::kOom && f.at.empty()) return bad("at=check|run|step is required");
  return f;
}

}  // namespace

std::string_view fault_kind_name(FaultKind kind) noexcept {
  switch (kind) {
    case FaultKind::kStall: return "stall";
    case FaultKind::kExit: return "exit";
    case FaultKind::kDrop: return "drop";
    case FaultKind::kCorrupt: return "corrupt";
    case FaultKind::kAdapter: return "adapter";
    case FaultKind::kOom: return "oom";
    case FaultKind::kCreate: return "create";
  }
  return "?";
}

std::string_view create_stage_name(CreateStage stage) noexcept {
  switch (stage) {
    case CreateStage::kStart: return "start";
    case CreateStage::kTransports: return "transports";
    case CreateStage::kAddress: return "address";
    case CreateStage::kConnect: return "connect";
    case CreateStage::kHandshake: return "handshake";
    case CreateStage::kAgreed: return "agreed";
  }
  return "?";
}

Result<FaultPlan> FaultPlan::parse(std::string_view spec) {
  FaultPlan plan;
  for (std::string_view text : split(spec, ';')) {
    text = trim(text);
    if (text.empty()) continue;
    auto fault = parse_one(text);
    RUCCL_TRY(fault);
    plan.faults_.push_back(std::move(fault.value()));
  }
  return plan;
}

const Fault* FaultPlan::find(FaultKind kind, std::size_t rank, std::uint64_t seq,
                             std::optional<std::uint32_t> step) const {
  for (const Fault& f : faults_)
    if (f.kind == kind && f.rank == rank && f.seq == seq && (!f.step || f.step == step)) return &f;
  return nullptr;
}

bool FaultPlan::any(FaultKind kind, std::size_t rank, std::uint64_t seq) const {
  return std::any_of(faults_.begin(), faults_.end(), [&](const Fault& f) {
    return f.kind == kind && f.rank == rank && f.seq == seq;
  });
}

const Fault* FaultPlan::find_create(CreateStage stage, std::size_t process) const {
  for (const Fault& f : faults_)
    if (f.kind == FaultKind::kCreate && f.stage == stage && f.process == process) return &f;
  return nullptr;
}

void fire_create_fault(const FaultPlan& plan, CreateStage stage, std::size_t process) {
  const Fault* f = plan.find_create(stage, process);
  if (f == nullptr) return;
  if (f->throws)
    throw std::runtime_error("injected fault: process " + std::to_string(process) +
                             " throws at creation stage " + std::string(create_stage_name(stage)));
  ::_exit(f->exit_code);
}

// ---- FaultyAdapter -----------------------------------------------------------

FaultyAdapter::FaultyAdapter(DeviceAdapter& inner, const Fault& fault)
    : inner_(inner), decorated_(dynamic_cast<AdapterDecorator*>(&inner)), fault_(fault) {}

std::optional<Status> FaultyAdapter::trip(const char* verb) {
  if (!fault_.verb.empty() && fault_.verb != verb) return std::nullopt;
  if (fired_.exchange(true)) return std::nullopt;
  return Status(ErrorCode::kDeviceError, "injected fault: " + std::string(verb) +
                                             " failed on rank " + std::to_string(fault_.rank) +
                                             " in collective #" + std::to_string(fault_.seq));
}

Result<std::shared_ptr<AdapterState>> FaultyAdapter::prepare(const TensorView& view,
                                                             DeviceId device) {
  if (auto e = trip("prepare")) return *e;
  return inner_.prepare(view, device);
}
Status FaultyAdapter::begin(const Queue& queue, const AdapterState* producer) {
  if (auto e = trip("begin")) return *e;
  return inner_.begin(queue, producer);
}
Status FaultyAdapter::finish(const Queue& queue) {
  if (auto e = trip("finish")) return *e;
  return inner_.finish(queue);
}
Result<std::shared_ptr<void>> FaultyAdapter::allocate(DeviceId device, std::size_t bytes) {
  if (auto e = trip("allocate")) return *e;
  return inner_.allocate(device, bytes);
}
Result<DeviceAdapter::Ticket> FaultyAdapter::copy(const Queue& queue, void* dst, const void* src,
                                                  std::size_t bytes) {
  if (auto e = trip("copy")) return *e;
  return inner_.copy(queue, dst, src, bytes);
}
Result<DeviceAdapter::Ticket> FaultyAdapter::divide(const Queue& queue, void* data,
                                                    std::size_t count, DataType dtype,
                                                    std::size_t divisor) {
  if (auto e = trip("scale")) return *e;
  return inner_.divide(queue, data, count, dtype, divisor);
}
Status FaultyAdapter::entering(const char* operation) {
  if (auto e = trip(operation)) return *e;
  return decorated_ == nullptr ? Status::ok() : decorated_->entering(operation);
}

}  // namespace ruccl::core
