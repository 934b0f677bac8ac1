// Config::from_env is the only place in ruccl that reads RUCCL_* variables.
#include "ruccl/config.hpp"

#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/fault.hpp"
#include "core/selection.hpp"

namespace ruccl {
namespace {

Status bad_env(const char* name, const std::string& value, const char* expected) {
  return Status(ErrorCode::kInvalidArgument,
                std::string(name) + "='" + value + "' is not " + expected);
}

// A 0/1 variable into `flag`; unset leaves it alone.
Status read_flag(const char* name, bool& flag) {
  const char* v = std::getenv(name);
  if (v == nullptr) return Status::ok();
  const std::string s = v;
  if (s == "0") flag = false;
  else if (s == "1") flag = true;
  else return bad_env(name, s, "0 or 1");
  return Status::ok();
}

// Unsigned byte/count value, with optional K/M/G suffix (powers of 1024).
Result<std::size_t> parse_size(const char* name, const std::string& text) {
  std::size_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr == text.data()) return bad_env(name, text, "a byte count");
  std::size_t shift = 0;
  if (ptr != end) {
    switch (*ptr) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      default: return bad_env(name, text, "a byte count (suffix K, M or G)");
    }
    if (ptr + 1 != end) return bad_env(name, text, "a byte count (suffix K, M or G)");
  }
  if (shift && value > (SIZE_MAX >> shift)) return bad_env(name, text, "a byte count in range");
  return value << shift;
}

// The variable `name` as a size into `field` when it is set (parse_size's rules).
Status read_size(const char* name, std::size_t& field) {
  const char* v = std::getenv(name);
  if (v == nullptr) return Status::ok();
  auto r = parse_size(name, v);
  RUCCL_TRY(r);
  field = r.value();
  return Status::ok();
}

}  // namespace

Result<Config> Config::from_env() { return from_env(Config{}); }

Result<Config> Config::from_env(Config base) {
  Config c = base;
  if (const char* v = std::getenv("RUCCL_TIMEOUT")) {
    char* end = nullptr;
    const double seconds = std::strtod(v, &end);
    if (end == v || *end != '\0' || !std::isfinite(seconds) || seconds <= 0 || seconds > 1e7)
      return bad_env("RUCCL_TIMEOUT", v, "a positive number of seconds");
    c.timeout_ = std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000)));
  }
  RUCCL_TRY(read_size("RUCCL_MAX_CHUNK_BYTES", c.max_chunk_bytes_));
  RUCCL_TRY(read_size("RUCCL_SEGMENT_BYTES", c.segment_bytes_));
  RUCCL_TRY(read_size("RUCCL_NUM_DEVICES", c.num_devices_));
  if (const char* v = std::getenv("RUCCL_ALGO")) {
    const std::string s = v;
    if (s == "hierarchical") c.global_ = GlobalStrategy::kHierarchical;
    else if (s == "flat_ring" || s == "flat") c.global_ = GlobalStrategy::kFlatRing;
    else if (!core::parse_selection(s))
      return bad_env("RUCCL_ALGO", s,
                     "hierarchical, flat_ring or a selection string such as "
                     "all_reduce:0-4k:@one_shot#4k-inf:@flat_ring");
    else c.with_algorithm(s);
  }
  if (const char* v = std::getenv("RUCCL_LOCAL_ALGO")) {  // deprecated: checked, not read
    if (std::string(v) != "ring") return bad_env("RUCCL_LOCAL_ALGO", v, "ring");
  }
  if (const char* v = std::getenv("RUCCL_INTRA_NODE_TRANSPORT")) {
    const std::string s = v;
    c.node_single_copy_ = s == "shm-direct";
    if (s == "shm" || s == "shm-direct") c.intra_node_shm_ = true;
    else if (s == "tcp") c.intra_node_shm_ = false;
    else return bad_env("RUCCL_INTRA_NODE_TRANSPORT", s, "shm, shm-direct or tcp");
  }
  if (const char* v = std::getenv("RUCCL_DEBUG")) {
    std::string s = v;
    for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (s == "OFF" || s.empty()) c.log_level_ = LogLevel::kOff;
    else if (s == "WARN") c.log_level_ = LogLevel::kWarn;
    else if (s == "INFO") c.log_level_ = LogLevel::kInfo;
    else if (s == "TRACE") c.log_level_ = LogLevel::kTrace;
    else return bad_env("RUCCL_DEBUG", v, "WARN, INFO, TRACE or OFF");
  }
  if (const char* v = std::getenv("RUCCL_DEBUG_FILE")) c.log_file_ = v;
  if (const char* v = std::getenv("RUCCL_TRACE")) c.trace_file_ = v;
  if (const char* v = std::getenv("RUCCL_FAULT")) c.fault_ = v;
  RUCCL_TRY(read_size("RUCCL_FLIGHT_RECORDER", c.flight_recorder_));
  RUCCL_TRY(read_flag("RUCCL_FLIGHT_RECORDER_SIGNAL", c.flight_recorder_signal_));
  RUCCL_TRY(read_flag("RUCCL_CHECKSUM", c.checksum_));
  RUCCL_TRY(read_size("RUCCL_ONE_SHOT_BYTES", c.one_shot_bytes_));
  RUCCL_TRY(read_size("RUCCL_NODE_DIRECT_BYTES", c.node_direct_bytes_));
  RUCCL_TRY(read_size("RUCCL_LEAN_DIRECT_BYTES", c.lean_direct_bytes_));
  RUCCL_TRY(read_size("RUCCL_MPI_ALLOC_MEM_BYTES", c.mpi_alloc_mem_bytes_));
  RUCCL_TRY(read_size("RUCCL_LEAN_BYTES", c.lean_bytes_));
  RUCCL_TRY(c.validate());
  return c;
}

Status Config::validate() const {
  if (num_devices_ == 0)
    return Status(ErrorCode::kInvalidArgument, "num_devices must be at least 1");
  if (max_chunk_bytes_ == 0)
    return Status(ErrorCode::kBudgetTooSmall, "max_chunk_bytes must be at least one element");
  if (segment_bytes_ == 0)
    return Status(ErrorCode::kInvalidArgument, "segment_bytes must be at least 1");
  if (lean_bytes_ > kMaxLeanBytes)
    return Status(ErrorCode::kInvalidArgument,
                  "lean_bytes (RUCCL_LEAN_BYTES) is " + std::to_string(lean_bytes_) + ", at most " +
                      std::to_string(kMaxLeanBytes) + " (a node mailbox slot)");
  if (timeout_.count() <= 0)
    return Status(ErrorCode::kInvalidArgument, "timeout must be positive");
  if (timeout_ > kMaxTimeout)
    return Status(ErrorCode::kInvalidArgument,
                  "timeout of " + std::to_string(timeout_.count()) +
                      " ms exceeds the maximum of 10^7 s; ruccl never waits without a deadline");
  if (!algorithm_.empty()) {
    auto rules = core::parse_selection(algorithm_);
    if (!rules.is_ok()) return rules.status().with_context("RUCCL_ALGO / Config::algorithm");
  }
  if (!fault_.empty()) {
    auto plan = core::FaultPlan::parse(fault_);
    if (!plan.is_ok()) return plan.status().with_context("RUCCL_FAULT / Config::fault");
  }
  return Status::ok();
}

std::string Config::difference(const Config& other) const {
  std::string out;
  auto field = [&](const char* name, auto mine, auto theirs) {
    if (mine == theirs) return;
    if (!out.empty()) out += ", ";
    out += std::string(name) + " " + std::to_string(mine) + " vs " + std::to_string(theirs);
  };
  field("num_devices", num_devices_, other.num_devices_);
  field("max_chunk_bytes", max_chunk_bytes_, other.max_chunk_bytes_);
  field("segment_bytes", segment_bytes_, other.segment_bytes_);
  field("timeout_ms", timeout_.count(), other.timeout_.count());
  field("global_strategy", static_cast<int>(global_), static_cast<int>(other.global_));
  field("log_level", static_cast<int>(log_level_), static_cast<int>(other.log_level_));
  if (log_file_ != other.log_file_) out += std::string(out.empty() ? "" : ", ") + "log_file differs";
  if (trace_file_ != other.trace_file_)
    out += std::string(out.empty() ? "" : ", ") + "trace_file differs";
  field("intra_node_shared_memory", static_cast<int>(intra_node_shm_),
        static_cast<int>(other.intra_node_shm_));
  field("node_single_copy", static_cast<int>(node_single_copy_),
        static_cast<int>(other.node_single_copy_));
  if (algorithm_ != other.algorithm_)
    out += std::string(out.empty() ? "" : ", ") + "algorithm differs";
  if (fault_ != other.fault_) out += std::string(out.empty() ? "" : ", ") + "fault differs";
  field("flight_recorder", flight_recorder_, other.flight_recorder_);
  field("flight_recorder_signal", static_cast<int>(flight_recorder_signal_),
        static_cast<int>(other.flight_recorder_signal_));
  field("checksum", static_cast<int>(checksum_), static_cast<int>(other.checksum_));
  field("one_shot_bytes", one_shot_bytes_, other.one_shot_bytes_);
  field("lean_bytes", lean_bytes_, other.lean_bytes_);
  return out;
}

Config& Config::with_algorithm(std::string selection) {
  if (auto strategy = core::strategy_of(selection); strategy && strategy.value())
    global_ = *strategy.value();
  algorithm_ = std::move(selection);
  return *this;
}

std::string_view log_level_name(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::kOff: return "OFF";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kTrace: return "TRACE";
  }
  return "?";
}

std::string_view global_strategy_name(GlobalStrategy s) noexcept {
  return s == GlobalStrategy::kHierarchical ? "hierarchical" : "flat_ring";
}

}  // namespace ruccl
