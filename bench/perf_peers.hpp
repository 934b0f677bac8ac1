// ruccl-perf's peers: other collective implementations measured in the same
// launch as ruccl (world mode, --peers), on the same ranks, sizes and buffers.
//
//   mpi        the MPI ruccl was built with: MPI_Allreduce, MPI_Bcast, MPI_Reduce,
//              MPI_Allgather, MPI_Reduce_scatter_block, MPI_Alltoallv.
//   gloo          Gloo's ring all-reduce (gloo::AllreduceRing: the whole buffer
//                 goes n-1 hops round the ring), TCP transport, rendezvous through a
//                 gloo::rendezvous::Store over MPI point-to-point. all_reduce only,
//                 in place only (Gloo reduces in place).
//   gloo_chunked  Gloo's chunked ring (gloo::AllreduceRingChunked, 2n chunks,
//                 bandwidth-optimal for n > 2), same conditions.
//
// Peer code is benchmark code only: MPI is used here, never in the library, and
// never on ruccl's timed path. A peer runs one rank per process: peers need
// --devices-per-process 1 (one thread drives everything, and the world has one
// rank per MPI rank, so both see the same n and the same bytes per rank).
//
// Per case and placement the runner calls prepare() once (untimed: Gloo builds
// its algorithm object, which registers its buffers with the pairs, here), then
// per iteration barrier() (untimed; each peer its own: MPI_Barrier, Gloo's
// BarrierAllToAll) and call() (timed), and after the loop max_over_ranks() /
// sum_over_ranks() (untimed, MPI) to agree on the times and the wrong counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "perf_types.hpp"
#include "ruccl/status.hpp"

namespace ruccl::perf {

// The placement's buffers, exactly as ruccl gets them (see Runner::measure).
struct PeerBuffers {
  void* in = nullptr;   // the input view's data (all_gather in place: inside out)
  void* out = nullptr;  // the output view's data (in place: == in, or rank's block)
};

class Peer {
 public:
  virtual ~Peer() = default;
  virtual const std::string& name() const = 0;
  virtual std::string description() const = 0;  // for the header and the JSON
  // Empty when the peer can run this case and placement; else why not.
  virtual std::string unsupported(const Case& c, bool in_place) const = 0;
  // Untimed: everything the calls of one placement need (done once, not per call).
  virtual Status prepare(const Case& c, bool in_place, std::size_t rank, PeerBuffers buffers) = 0;
  virtual Status barrier() = 0;  // untimed, before each call
  virtual Status call() = 0;     // the timed call
  // Untimed, over every process: the elementwise max, and the sum.
  virtual Status max_over_ranks(std::vector<double>& values) = 0;
  virtual Status sum_over_ranks(std::uint64_t& value) = 0;
  // Untimed, after the placement: drops what prepare() built.
  virtual void release() {}
};

// The peers this build can make ("mpi", "gloo", "gloo_chunked"), for --help.
std::vector<std::string> available_peers();
// What a name needs when this build cannot make it (empty when it can).
std::string peer_unavailable(const std::string& name);
// Collective over MPI_COMM_WORLD; MPI must be initialised (the world communicator
// has done it). The peer's ranks are ordered like ruccl's (MPI_Comm_split keyed by
// `rank`, this process's global ruccl rank), so rank r feeds the same data to
// both, and roots and blocks mean the same ranks. `max_bytes`: the largest size
// of the sweep (Gloo sends one untimed message of it at setup).
Result<std::unique_ptr<Peer>> make_peer(const std::string& name, std::size_t rank,
                                        std::size_t max_bytes);

}  // namespace ruccl::perf
