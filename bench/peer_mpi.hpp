// MPI helpers shared by the peers (peer_mpi.cpp, peer_gloo.cpp): benchmark code,
// never part of the library. Compiled only when CMake found MPI.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ruccl/status.hpp"

namespace ruccl::perf::peer_mpi {

// kInternal naming `what` and MPI's error string unless rc is MPI_SUCCESS.
Status check(int rc, const char* what);

// A private communicator of every process of MPI_COMM_WORLD, ranked by `key`
// (this process's global ruccl rank), with MPI_ERRORS_RETURN: the peers' traffic
// never mixes with ruccl's bootstrap, and an MPI error is a Status, not an abort.
class OrderedComm {
 public:
  static Result<OrderedComm> create(std::size_t key);
  OrderedComm() = default;
  OrderedComm(OrderedComm&& other) noexcept : comm_(other.comm_) { other.comm_ = MPI_COMM_NULL; }
  OrderedComm& operator=(OrderedComm&& other) noexcept;
  ~OrderedComm();

  MPI_Comm get() const { return comm_; }
  int rank() const;
  int size() const;
  Status barrier() const;
  Status max_over_ranks(std::vector<double>& values) const;  // elementwise, in place
  Status sum_over_ranks(std::uint64_t& value) const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace ruccl::perf::peer_mpi
