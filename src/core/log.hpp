// Logging and tracing of one communicator (RUCCL_DEBUG, RUCCL_DEBUG_FILE,
// RUCCL_TRACE). Nothing here is process-global: each communicator owns its
// Logger and Tracer, so two communicators in one process log independently.
// Off (the default), a log call is one comparison and tracing is a null check.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "ruccl/config.hpp"

namespace ruccl::core {

// `pattern` with %h = host name, %p = process id, %r = `rank`, %% = %.
std::string expand_path(const std::string& pattern, std::size_t rank);

class Logger {
 public:
  explicit Logger(const Config& config) : level_(config.log_level()), file_(config.log_file()) {}
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  bool enabled(LogLevel level) const {
    return level != LogLevel::kOff && level_ != LogLevel::kOff && level <= level_;
  }
  // One line: "[ruccl <host>:<pid> rank <rank>] <LEVEL> <message>". Thread-safe;
  // never throws (a line that cannot be written is dropped).
  void log(LogLevel level, std::size_t rank, const std::string& message) noexcept;

 private:
  const LogLevel level_;
  const std::string file_;
  std::mutex mutex_;
  std::FILE* sink_ = nullptr;  // opened on the first line: stderr or file_ (append)
  bool owns_sink_ = false;
};

// One span of a Chrome trace ("ph":"X").
struct TraceSpan {
  std::string name;
  const char* category = "";
  std::int64_t begin_us = 0;  // microseconds since the Unix epoch (ranks line up)
  std::int64_t duration_us = 0;
  std::string args;  // JSON object members, e.g. "\"seq\":3,\"bytes\":1024"
};

// Per-rank trace files of one communicator, streamed: each rank's spans wait
// in a buffer of at most kHeldSpans, written to that rank's file (opened at
// construction) whenever the buffer fills, and the rest with the closing
// bracket at destruction. Memory stays bounded on a job of any length; the
// file is valid JSON once the tracer is gone. Each rank's buffer and file are
// touched by that rank's thread only.
class Tracer {
 public:
  static constexpr std::size_t kHeldSpans = 256;

  Tracer(std::string pattern, std::size_t first_rank, std::size_t local_ranks);
  ~Tracer();  // writes the rest and closes the files (errors go to stderr)
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  static std::int64_t now_us();
  void add(std::size_t local, TraceSpan span);

  // Spans of `local` held in memory now (at most kHeldSpans), and written so far.
  std::size_t held(std::size_t local) const { return local < ranks_.size() ? ranks_[local].held.size() : 0; }
  std::size_t written(std::size_t local) const { return local < ranks_.size() ? ranks_[local].written : 0; }

 private:
  struct Rank {
    std::vector<TraceSpan> held;  // capacity kHeldSpans, reused
    std::FILE* file = nullptr;    // null: could not be opened (spans are dropped)
    std::size_t rank = 0;
    std::size_t written = 0;
  };
  void flush(Rank& r);

  std::vector<Rank> ranks_;
};

// A span from construction to finish() or destruction; a no-op without tracer.
class ScopedSpan {
 public:
  ScopedSpan(Tracer* tracer, std::size_t local, std::string name, const char* category,
             std::string args = {})
      : tracer_(tracer), local_(local) {
    if (!tracer_) return;
    span_.name = std::move(name);
    span_.category = category;
    span_.args = std::move(args);
    span_.begin_us = Tracer::now_us();
  }
  ~ScopedSpan() { finish(); }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;
  void add_arg(const std::string& member) {
    if (tracer_) span_.args += (span_.args.empty() ? "" : ",") + member;
  }
  void finish() {
    if (!tracer_) return;
    span_.duration_us = Tracer::now_us() - span_.begin_us;
    tracer_->add(local_, std::move(span_));
    tracer_ = nullptr;
  }

 private:
  Tracer* tracer_;
  std::size_t local_;
  TraceSpan span_;
};

}  // namespace ruccl::core
