// ruccl-perf's output: the nccl-tests table on stdout, and JSON / CSV files.
//
// Table columns: size (bytes), count (elements), type, redop, root, then for
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

void print_header(std::FILE* out, const Options& options, const Config& config,
                  const std::optional<MemcpyBaseline>& memcpy_baseline);
void print_section(std::FILE* out, CollectiveKind kind);
void print_note(std::FILE* out, const std::string& note);  // "# note"
void print_row(std::FILE* out, const Row& row);
// Totals, as nccl-tests ends: wrong elements and the average bus bandwidth.
void print_footer(std::FILE* out, const std::vector<Row>& rows);

// Sum of wrong elements, and whether any row failed or was wrong.
std::size_t total_wrong(const std::vector<Row>& rows);
bool any_error(const std::vector<Row>& rows);

Status write_json(const std::string& path, const Options& options, const Config& config,
                  const std::optional<MemcpyBaseline>& memcpy_baseline,
                  const std::vector<Row>& rows);
Status write_csv(const std::string& path, const std::vector<Row>& rows);

}  // namespace ruccl::perf
