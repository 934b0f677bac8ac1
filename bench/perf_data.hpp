// ruccl-perf's data: inputs from (rank, index) whose results are exact, and the
// element-by-element check of the results.
//
// Every input is a small non-negative integer, so sums, products, minima and
// maxima are exact in every dtype and in any reduction order (bf16 holds the
// integers up to 256, so its Sum/Mean checks are exact up to ~60 ranks):
//   sum       (r + i) % 3 + 1
//   mean      i % 4 + (n if (r + i) % n == 0 else 0)   -> sum is a multiple of n
//   min, max  (5r + 3i) % 17
//   prod      1 + [(r + i) % n == 0] + [(r + 2i + 1) % n == 0]
//   moves     (31r + 7i) % 97                     (broadcast, all_gather, all_to_all_v)
// Expected values are computed in int64 and then encoded in the dtype with
// ruccl's semantics (integers wrap; integer Mean truncates the wrapped sum), and
// compared bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "perf_types.hpp"

namespace ruccl::perf {

class DataModel {
 public:
  explicit DataModel(const Case& c) : c_(c) {}

  // Elements of each rank's input (the `in` view).
  std::size_t input_count() const;
  // Elements of rank's result (0 when it gets none: a non-root rank of reduce).
  std::size_t output_count(std::size_t rank) const;
  // Writes rank's input_count() elements of input.
  void fill_input(std::size_t rank, void* data) const;
  // Elements of rank's result at `data` (output_count(rank) of them) that differ
  // from the closed form.
  std::size_t count_wrong_output(std::size_t rank, const void* data) const;
  // Elements of rank's input at `data` that are no longer what fill_input wrote.
  std::size_t count_wrong_input(std::size_t rank, const void* data) const;

  // The values, before encoding (public for tests and error messages).
  std::int64_t input(std::size_t rank, std::size_t index) const;
  // Rank's result element `index`; for a reduction, the exact int64 fold (Mean: the sum).
  std::int64_t result(std::size_t rank, std::size_t index) const;

 private:
  std::int64_t fold(std::size_t index) const;  // op over every rank's input at index

  Case c_;
};

}  // namespace ruccl::perf
