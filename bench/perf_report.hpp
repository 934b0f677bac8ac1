// ruccl-perf's output: the nccl-tests table on stdout, and JSON / CSV files.
//
// Table columns: size (bytes), count (elements), type, redop, root, (world mode:
// algo, the global strategy of the row's communicator), then for
// out-of-place and for in-place: time (us, mean of the per-iteration max over
// ranks), algbw and busbw (GB/s, 1e9 bytes/s), #wrong (N/A without -c 1), and
// p50 / p99 per-iteration time (us). A placement a collective lacks reads N/A.
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
void print_row(std::FILE* out, const Row& row);  // the algo column when row.algo is set
// "# ratio p50 a/b: ..." of two rows of the same case measured interleaved.
void print_ratio(std::FILE* out, const Row& a, const Row& b);
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
// (--label, or null). The CSV gets a column algo (world mode), then impl.
Status write_json(const std::string& path, const Options& options, const Config& config,
                  const std::optional<MemcpyBaseline>& memcpy_baseline,
                  const std::vector<Row>& rows,
                  const std::optional<WorldInfo>& world = std::nullopt);
Status write_csv(const std::string& path, const std::vector<Row>& rows, bool with_algo = false);

}  // namespace ruccl::perf
