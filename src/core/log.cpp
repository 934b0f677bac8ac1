#include "core/log.hpp"

#include <unistd.h>

#include <cstring>

namespace ruccl::core {
namespace {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

// JSON string escaping for span names (args are built from numbers and names).
std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}

}  // namespace

std::string expand_path(const std::string& pattern, std::size_t rank) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    switch (pattern[++i]) {
      case 'h': out += host_name(); break;
      case 'p': out += std::to_string(getpid()); break;
      case 'r': out += std::to_string(rank); break;
      case '%': out += '%'; break;
      default: out += '%'; out += pattern[i];
    }
  }
  return out;
}

Logger::~Logger() {
  if (owns_sink_ && sink_) std::fclose(sink_);
}

void Logger::log(LogLevel level, std::size_t rank, const std::string& message) noexcept {
  if (!enabled(level)) return;
  try {
    const std::string line = "[ruccl " + host_name() + ":" + std::to_string(getpid()) + " rank " +
                             std::to_string(rank) + "] " + std::string(log_level_name(level)) +
                             " " + message + "\n";
    std::lock_guard lock(mutex_);
    if (!sink_) {
      if (!file_.empty()) {
        sink_ = std::fopen(expand_path(file_, rank).c_str(), "a");
        owns_sink_ = sink_ != nullptr;
      }
      if (!sink_) sink_ = stderr;
    }
    std::fwrite(line.data(), 1, line.size(), sink_);
    std::fflush(sink_);
  } catch (...) {
  }
}

Tracer::Tracer(std::string pattern, std::size_t first_rank, std::size_t local_ranks)
    : ranks_(local_ranks) {
  for (std::size_t local = 0; local < ranks_.size(); ++local) {
    Rank& r = ranks_[local];
    r.rank = first_rank + local;
    r.held.reserve(kHeldSpans);
    std::string path = expand_path(pattern, r.rank);
    if (pattern.find("%r") == std::string::npos) path += ".rank" + std::to_string(r.rank);
    r.file = std::fopen(path.c_str(), "w");
    if (!r.file) {
      std::fprintf(stderr, "ruccl: cannot write the trace %s: %s (its spans are dropped)\n",
                   path.c_str(), std::strerror(errno));
      continue;
    }
    std::fprintf(r.file, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    std::fprintf(r.file,
                 "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%zu,\"args\":{\"name\":\"ruccl rank %zu\"}}",
                 r.rank, r.rank);
  }
}

std::int64_t Tracer::now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Tracer::add(std::size_t local, TraceSpan span) {
  if (local >= ranks_.size()) return;
  Rank& r = ranks_[local];
  r.held.push_back(std::move(span));
  if (r.held.size() >= kHeldSpans) flush(r);
}

void Tracer::flush(Rank& r) {
  if (r.file) {
    for (const TraceSpan& s : r.held) {
      std::fprintf(r.file,
                   ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%lld,\"dur\":%lld,"
                   "\"pid\":%zu,\"tid\":%zu,\"args\":{%s}}",
                   json_escape(s.name).c_str(), s.category, static_cast<long long>(s.begin_us),
                   static_cast<long long>(s.duration_us), r.rank, r.rank, s.args.c_str());
    }
    r.written += r.held.size();
  }
  r.held.clear();  // keeps the capacity: no allocation on the next kHeldSpans
}

Tracer::~Tracer() {
  for (Rank& r : ranks_) {
    flush(r);
    if (!r.file) continue;
    std::fprintf(r.file, "\n]}\n");
    if (std::fclose(r.file) != 0)
      std::fprintf(stderr, "ruccl: writing the trace of rank %zu failed: %s\n", r.rank,
                   std::strerror(errno));
  }
}

}  // namespace ruccl::core
