// ruccl-perf's output: the nccl-tests table on stdout, and JSON / CSV files.
//
// Table columns: size (bytes), count (elements), type, redop, root, (world mode:
// algo, the global strategy of the row's communicator), then for
// out-of-place and for in-place: time (us, mean of the per-iteration max over
// ranks), algbw and busbw (GB/s, 1e9 bytes/s), #wrong (N/A without -c 1), and
// p50 / p99 per-iteration time (us). A placement a collective lacks reads N/A.
// With an explicit budget (--max-chunk-bytes, --budget-compare) two more: the
// peak staging bytes of the row's calls (max over placements, calls and ranks;
// Communicator::last_staging) and the budget they ran under. --budget-compare
// also shows the algo column in-process (the lane: unbounded, budget SIZE).
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "perf_types.hpp"
#include "ruccl/config.hpp"
#include "ruccl/status.hpp"

namespace ruccl::perf {

// `world`: world mode (adds the algo column and says how the time is agreed).
void print_header(std::FILE* out, const Options& options, const Config& config,
                  const std::optional<MemcpyBaseline>& memcpy_baseline,
                  const std::optional<WorldInfo>& world = std::nullopt);
void print_section(std::FILE* out, CollectiveKind kind);
void print_note(std::FILE* out, const std::string& note);  // "# note"
// The algo column when row.algo is set; the staging columns when shows_staging(options).
void print_row(std::FILE* out, const Row& row, const Options& options);
// "# ratio p50 a/b: ..." of two rows of the same case measured interleaved.
void print_ratio(std::FILE* out, const Row& a, const Row& b);
// --budget-compare: "# budget 1M / unbounded: throughput (p50) 0.934, peak staging
// 1048576 B of 1048576 B" for an unbounded row and its bounded twin.
void print_budget_ratio(std::FILE* out, const Row& unbounded, const Row& bounded);
// "# model: ..." of a row with a ModelEstimate (--model).
void print_model(std::FILE* out, const Row& row);
// Totals, as nccl-tests ends: wrong elements and the average bus bandwidth.
void print_footer(std::FILE* out, const std::vector<Row>& rows);

// Sum of wrong elements, and whether any row failed or was wrong.
std::size_t total_wrong(const std::vector<Row>& rows);
bool any_error(const std::vector<Row>& rows);

// World mode adds "world" {processes, devices_per_process, algos, peers} and each
// row's "algo". Every row has "impl" (ruccl-inproc, ruccl-hierarchical,
// ruccl-flat_ring, mpi, gloo, gloo_chunked: what a plot draws as one line) and, with
// --model, "model". The top level has "mode" (in-process|world) and "label"
// (--label, or null). Every ruccl row has "budget_bytes" (null: unbounded) and
// each placement "staging_peak_bytes" (peers: null). The CSV gets a column
// algo (world mode or --budget-compare), then impl, budget_bytes,
// oop_staging_peak_bytes, ip_staging_peak_bytes.
Status write_json(const std::string& path, const Options& options, const Config& config,
                  const std::optional<MemcpyBaseline>& memcpy_baseline,
                  const std::vector<Row>& rows,
                  const std::optional<WorldInfo>& world = std::nullopt);
Status write_csv(const std::string& path, const std::vector<Row>& rows, bool with_algo = false);

}  // namespace ruccl::perf
