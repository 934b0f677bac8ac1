#include "perf_report.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace ruccl::perf {
namespace {

std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

// nccl-tests' time format: two decimals below 10 ms, none above.
std::string time_text(double us) { return fmt(us < 10000 ? "%.2f" : "%.0f", us); }

std::string op_text(const Case& c) { return c.op ? std::string(op_name(*c.op)) : "none"; }
std::string root_text(const Case& c) { return c.root ? std::to_string(*c.root) : "-1"; }

void print_timing(std::FILE* out, const Timing& t) {
  if (!t.ran) {
    std::fprintf(out, "  %8s %8s %8s %6s %8s %8s", "N/A", "N/A", "N/A", "N/A", "N/A", "N/A");
    return;
  }
  if (!t.error.empty()) {
    std::fprintf(out, "  %8s %8s %8s %6s %8s %8s", "-", "-", "-", "ERROR", "-", "-");
    return;
  }
  const std::string wrong = t.wrong ? std::to_string(*t.wrong) : "N/A";
  std::fprintf(out, "  %8s %8.2f %8.2f %6s %8s %8s", time_text(t.mean_us).c_str(), t.algbw_gbps,
               t.busbw_gbps, wrong.c_str(), time_text(t.p50_us).c_str(),
               time_text(t.p99_us).c_str());
}

// The algo column's width: 0 (none), 12 (world), or wide enough for
// --budget-compare's lane names ("hierarchical budget 1M").
int algo_width(const Options& o, bool world) {
  if (o.budget_compare) return 24;
  return world ? 12 : 0;
}

std::string staging_text(const Row& row) {
  if (!row.budget_bytes) return "N/A";
  std::size_t peak = 0;
  for (const Timing* t : {&row.out_of_place, &row.in_place})
    if (t->ran && t->error.empty()) peak = std::max(peak, t->staging_peak_bytes);
  return std::to_string(peak);
}

std::string budget_text(const Row& row) {
  if (!row.budget_bytes) return "N/A";
  if (*row.budget_bytes == std::numeric_limits<std::size_t>::max()) return "none";
  return std::to_string(*row.budget_bytes);
}

bool timing_failed(const Timing& t) {
  return t.ran && (!t.error.empty() || (t.wrong && *t.wrong != 0));
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string json_timing(const Timing& t, bool peer) {
  if (!t.ran) return "null";
  std::ostringstream o;
  o.precision(10);
  o << "{\"time_us\": " << t.mean_us << ", \"algbw_gbps\": " << t.algbw_gbps
    << ", \"busbw_gbps\": " << t.busbw_gbps
    << ", \"wrong\": " << (t.wrong ? std::to_string(*t.wrong) : "null")
    << ", \"p50_us\": " << t.p50_us << ", \"p99_us\": " << t.p99_us
    << ", \"error\": " << (t.error.empty() ? "null" : json_string(t.error));
  if (!peer) o << ", \"staging_peak_bytes\": " << t.staging_peak_bytes;
  o << "}";
  return o.str();
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

std::string csv_timing(const Timing& t) {
  if (!t.ran) return ",,,,,,";
  std::ostringstream o;
  o << t.mean_us << ',' << t.algbw_gbps << ',' << t.busbw_gbps << ','
    << (t.wrong ? std::to_string(*t.wrong) : "") << ',' << t.p50_us << ',' << t.p99_us << ','
    << csv_field(t.error);
  return o.str();
}

Status write_file(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (file) file << text;
  if (file) file.close();
  if (!file)
    return Status(ErrorCode::kInvalidArgument,
                  "cannot write " + path + ": " + std::strerror(errno));
  return Status::ok();
}

}  // namespace

void print_header(std::FILE* out, const Options& options, const Config& config,
                  const std::optional<MemcpyBaseline>& memcpy_baseline,
                  const std::optional<WorldInfo>& world) {
  if (world) {
    std::string algos;
    for (const std::string& a : world->algos) algos += (algos.empty() ? "" : ", ") + a;
    std::fprintf(out,
                 "# ruccl-perf: world of %zu ranks (%zu processes x %zu devices) over UCX, "
                 "dtype %s, algo %s%s\n",
                 options.ranks, world->processes, world->devices_per_process,
                 std::string(dtype_name(options.dtype)).c_str(), algos.c_str(),
                 world->algos.size() > 1 ? " (interleaved per iteration)" : "");
    if (!world->peers.empty()) {
      std::string peers;
      for (const std::string& p : world->peers) peers += (peers.empty() ? "" : ", ") + p;
      std::fprintf(out,
                   "# peers: %s, on the same ranks and buffers, interleaved per iteration with "
                   "ruccl in an order drawn anew each iteration (each call after the peer's own "
                   "untimed barrier; ruccl's timing uses no MPI)\n",
                   peers.c_str());
      for (const std::string& d : world->peer_descriptions)
        std::fprintf(out, "#   %s\n", d.c_str());
    }
    std::fprintf(out,
                 "# time: per iteration, the max over all ranks (ruccl all_reduce max after the "
                 "timed loop); each call after an untimed ruccl barrier\n");
  } else {
    std::fprintf(out, "# ruccl-perf: %zu ranks (threads) on the host adapter, dtype %s\n",
                 options.ranks, std::string(dtype_name(options.dtype)).c_str());
  }
  std::fprintf(out,
               "# sizes %zu..%zu bytes x%zu, iters %zu, warmup %zu, check %d, "
               "max_chunk_bytes %zu, segment_bytes %zu\n",
               options.min_bytes, options.max_bytes, options.step_factor, options.iters,
               options.warmup, options.check ? 1 : 0, config.max_chunk_bytes(),
               config.segment_bytes());
  if (memcpy_baseline)
    std::fprintf(out, "# memcpy %zu bytes: %.2f GB/s%s\n", memcpy_baseline->bytes,
                 memcpy_baseline->gbps, world ? " (rank 0's process)" : "");
  std::fprintf(out, "#\n");
  if (options.budget_compare)
    std::fprintf(out,
                 "# budget compare: each communicator unbounded (max_chunk_bytes SIZE_MAX: one "
                 "message per transfer) and through BoundedCommunicator(%zu B), interleaved per "
                 "iteration on the same buffers\n",
                 *options.budget_compare);
  if (shows_staging(options))
    std::fprintf(out,
                 "# staging: peak bytes of message staging any rank held at once in any call "
                 "(Communicator::last_staging), against the call's budget\n");
  const int width = algo_width(options, world.has_value());
  const int shift = width ? width + 2 : 0;  // the algo column
  std::fprintf(out, "# %*s%61s\n", 70 + shift, "out-of-place", "in-place");
  std::fprintf(out, "# %10s  %12s  %6s  %6s  %6s", "size", "count", "type", "redop", "root");
  if (width) std::fprintf(out, "  %*s", width, "algo");
  for (int i = 0; i < 2; ++i)
    std::fprintf(out, "  %8s %8s %8s %6s %8s %8s", "time", "algbw", "busbw", "#wrong", "p50", "p99");
  if (shows_staging(options)) std::fprintf(out, "  %10s %10s", "staging", "budget");
  std::fprintf(out, "\n# %10s  %12s  %6s  %6s  %6s", "(B)", "(elements)", "", "", "");
  if (width) std::fprintf(out, "  %*s", width, "");
  for (int i = 0; i < 2; ++i)
    std::fprintf(out, "  %8s %8s %8s %6s %8s %8s", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)");
  if (shows_staging(options)) std::fprintf(out, "  %10s %10s", "(B)", "(B)");
  std::fprintf(out, "\n");
}

void print_section(std::FILE* out, CollectiveKind kind) {
  std::fprintf(out, "# collective: %s\n", std::string(kind_name(kind)).c_str());
}

void print_note(std::FILE* out, const std::string& note) {
  std::fprintf(out, "# %s\n", note.c_str());
}

void print_row(std::FILE* out, const Row& row, const Options& options) {
  const Case& c = row.c;
  std::fprintf(out, "  %10zu  %12zu  %6s  %6s  %6s", c.size_bytes, c.count,
               std::string(dtype_name(c.dtype)).c_str(), op_text(c).c_str(), root_text(c).c_str());
  if (!row.algo.empty())
    std::fprintf(out, "  %*s", std::max(algo_width(options, true), 12), row.algo.c_str());
  print_timing(out, row.out_of_place);
  print_timing(out, row.in_place);
  if (shows_staging(options))
    std::fprintf(out, "  %10s %10s", staging_text(row).c_str(), budget_text(row).c_str());
  std::fprintf(out, "\n");
  for (const Timing* t : {&row.out_of_place, &row.in_place})
    if (t->ran && !t->error.empty())
      std::fprintf(out, "# %s error: %s\n", t == &row.in_place ? "in-place" : "out-of-place",
                   t->error.c_str());
  std::fflush(out);
}

void print_ratio(std::FILE* out, const Row& a, const Row& b) {
  auto ratio = [](const Timing& x, const Timing& y) -> std::string {
    if (!x.ran || !y.ran) return "N/A";
    if (!x.error.empty() || !y.error.empty() || y.p50_us <= 0) return "-";
    return fmt("%.3f", x.p50_us / y.p50_us);
  };
  std::fprintf(out, "# ratio of p50 times %s/%s: out-of-place %s, in-place %s\n", a.algo.c_str(),
               b.algo.c_str(), ratio(a.out_of_place, b.out_of_place).c_str(),
               ratio(a.in_place, b.in_place).c_str());
  std::fflush(out);
}

void print_budget_ratio(std::FILE* out, const Row& unbounded, const Row& bounded) {
  auto ratio = [](const Timing& u, const Timing& b) -> std::string {
    if (!u.ran || !b.ran) return "N/A";
    if (!u.error.empty() || !b.error.empty() || b.p50_us <= 0) return "-";
    return fmt("%.3f", u.p50_us / b.p50_us);
  };
  std::string text = "# " + bounded.algo + " / " + unbounded.algo +
                     ": throughput (unbounded p50 / bounded p50) out-of-place " +
                     ratio(unbounded.out_of_place, bounded.out_of_place) + ", in-place " +
                     ratio(unbounded.in_place, bounded.in_place) + "; peak staging " +
                     staging_text(bounded) + " B of a " + budget_text(bounded) +
                     " B budget (unbounded: " + staging_text(unbounded) + " B)";
  std::fprintf(out, "%s\n", text.c_str());
  std::fflush(out);
}

void print_model(std::FILE* out, const Row& row) {
  if (!row.model) return;
  const ModelEstimate& m = row.model.value();
  std::fprintf(out,
               "# model: n=%zu S=%zu B: per rank reads 3(n-1)/n S = %.0f B, writes 2(n-1)/n S = "
               "%.0f B; memcpy by the %zu rank threads at once %.2f GB/s in all (%zu core(s)): "
               "t_model %s us; achieved (t_model/p50) out-of-place %.2f, in-place %.2f\n",
               row.c.ranks, row.c.size_bytes, m.read_bytes, m.write_bytes, row.c.ranks,
               m.memcpy_gbps, m.cores,
               time_text(m.time_us).c_str(), m.fraction_out_of_place, m.fraction_in_place);
  std::fflush(out);
}

void print_footer(std::FILE* out, const std::vector<Row>& rows) {
  double busbw = 0;
  std::size_t measured = 0;
  for (const Row& row : rows)
    for (const Timing* t : {&row.out_of_place, &row.in_place})
      if (t->ran && t->error.empty()) {
        busbw += t->busbw_gbps;
        ++measured;
      }
  const bool failed = any_error(rows);
  std::fprintf(out, "# Out of bounds values : %zu %s\n", total_wrong(rows), failed ? "FAILED" : "OK");
  std::fprintf(out, "# Avg bus bandwidth    : %g\n", measured ? busbw / static_cast<double>(measured) : 0.0);
  std::fprintf(out, "#\n");
}

std::size_t total_wrong(const std::vector<Row>& rows) {
  std::size_t wrong = 0;
  for (const Row& row : rows)
    for (const Timing* t : {&row.out_of_place, &row.in_place}) wrong += t->wrong.value_or(0);
  return wrong;
}

bool any_error(const std::vector<Row>& rows) {
  for (const Row& row : rows)
    if (timing_failed(row.out_of_place) || timing_failed(row.in_place)) return true;
  return false;
}

Status write_json(const std::string& path, const Options& options, const Config& config,
                  const std::optional<MemcpyBaseline>& memcpy_baseline,
                  const std::vector<Row>& rows, const std::optional<WorldInfo>& world) {
  std::ostringstream o;
  o.precision(10);
  o << "{\n  \"tool\": \"ruccl-perf\",\n  \"ranks\": " << options.ranks
    << ",\n  \"iters\": " << options.iters << ",\n  \"warmup\": " << options.warmup
    << ",\n  \"check\": " << (options.check ? "true" : "false")
    << ",\n  \"max_chunk_bytes\": " << config.max_chunk_bytes()
    << ",\n  \"segment_bytes\": " << config.segment_bytes()
    << ",\n  \"mode\": " << (world ? "\"world\"" : "\"in-process\"")
    << ",\n  \"label\": " << (options.label.empty() ? "null" : json_string(options.label))
    << ",\n  \"memcpy\": ";
  if (memcpy_baseline)
    o << "{\"bytes\": " << memcpy_baseline->bytes << ", \"gbps\": " << memcpy_baseline->gbps << "}";
  else
    o << "null";
  if (world) {
    o << ",\n  \"world\": {\"processes\": " << world->processes
      << ", \"devices_per_process\": " << world->devices_per_process << ", \"algos\": [";
    for (std::size_t i = 0; i < world->algos.size(); ++i)
      o << (i ? ", " : "") << json_string(world->algos[i]);
    o << "], \"peers\": [";
    for (std::size_t i = 0; i < world->peers.size(); ++i)
      o << (i ? ", " : "") << json_string(world->peers[i]);
    o << "], \"peer_descriptions\": [";
    for (std::size_t i = 0; i < world->peer_descriptions.size(); ++i)
      o << (i ? ", " : "") << json_string(world->peer_descriptions[i]);
    o << "]}";
  }
  o << ",\n  \"results\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Case& c = rows[i].c;
    o << (i ? "," : "") << "\n    {\"collective\": " << json_string(kind_name(c.kind))
      << ", \"size\": " << c.size_bytes << ", \"count\": " << c.count
      << ", \"type\": " << json_string(dtype_name(c.dtype))
      << ", \"redop\": " << (c.op ? json_string(op_name(*c.op)) : "null")
      << ", \"root\": " << (c.root ? std::to_string(*c.root) : "null")
      << ", \"ranks\": " << c.ranks;
    if (!rows[i].algo.empty()) o << ", \"algo\": " << json_string(rows[i].algo);
    o << ", \"impl\": " << json_string(rows[i].impl)
      << ", \"peer\": " << (rows[i].peer ? "true" : "false");
    if (rows[i].budget_bytes) {
      o << ", \"budget_bytes\": ";
      if (*rows[i].budget_bytes == std::numeric_limits<std::size_t>::max()) o << "null";
      else o << *rows[i].budget_bytes;
    }
    o << ",\n     \"out_of_place\": " << json_timing(rows[i].out_of_place, rows[i].peer)
      << ",\n     \"in_place\": " << json_timing(rows[i].in_place, rows[i].peer);
    if (rows[i].model) {
      const ModelEstimate& m = rows[i].model.value();
      o << ",\n     \"model\": {\"read_bytes_per_rank\": " << m.read_bytes
        << ", \"write_bytes_per_rank\": " << m.write_bytes << ", \"memcpy_gbps\": " << m.memcpy_gbps
        << ", \"cores\": " << m.cores << ", \"time_us\": " << m.time_us
        << ", \"fraction_out_of_place\": " << m.fraction_out_of_place
        << ", \"fraction_in_place\": " << m.fraction_in_place << "}";
    }
    o << "}";
  }
  o << "\n  ]\n}\n";
  return write_file(path, o.str());
}

Status write_csv(const std::string& path, const std::vector<Row>& rows, bool with_algo) {
  std::ostringstream o;
  o << "collective,size,count,type,redop,root,ranks,"
       "oop_time_us,oop_algbw_gbps,oop_busbw_gbps,oop_wrong,oop_p50_us,oop_p99_us,oop_error,"
       "ip_time_us,ip_algbw_gbps,ip_busbw_gbps,ip_wrong,ip_p50_us,ip_p99_us,ip_error"
    << (with_algo ? ",algo" : "") << ",impl,budget_bytes,oop_staging_peak_bytes,ip_staging_peak_bytes\n";
  for (const Row& row : rows) {
    const Case& c = row.c;
    o << kind_name(c.kind) << ',' << c.size_bytes << ',' << c.count << ','
      << dtype_name(c.dtype) << ',' << (c.op ? op_name(*c.op) : "") << ','
      << (c.root ? std::to_string(*c.root) : "") << ',' << c.ranks << ','
      << csv_timing(row.out_of_place) << ',' << csv_timing(row.in_place);
    if (with_algo) o << ',' << csv_field(row.algo);
    o << ',' << csv_field(row.impl) << ',';
    if (row.budget_bytes && *row.budget_bytes != std::numeric_limits<std::size_t>::max())
      o << *row.budget_bytes;
    for (const Timing* t : {&row.out_of_place, &row.in_place}) {
      o << ',';
      if (!row.peer && t->ran) o << t->staging_peak_bytes;
    }
    o << '\n';
  }
  return write_file(path, o.str());
}

}  // namespace ruccl::perf
