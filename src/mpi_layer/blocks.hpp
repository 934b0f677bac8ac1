// One exchange of blocks between the ranks of a Route (internal to
// src/mpi_layer): the shape every MPI collective with per-rank blocks takes
// in ruccl (Alltoall(v), Gather(v), Scatter(v), Allgatherv). Each rank sends
// block d of its send side to rank d and receives block s of its receive
// side from rank s, through one ruccl all_to_all_v of bytes. A rooted
// collective is the exchange in which all blocks but the root's are empty.
#pragma once

#include <cstddef>
#include <vector>

#include "mpi_layer/mapping.hpp"
#include "mpi_layer/registry.hpp"
#include "ruccl/status.hpp"

namespace ruccl::mpi_layer {

// Per rank of the Route, a block of `bytes[k]` at `base + offset[k]`: by
// MPI rank as the caller describes them (Blocks::of, packed), by ruccl rank
// for exchange (in_ruccl_order). An empty block's offset is never read.
struct Blocks {
  const void* base = nullptr;
  std::vector<std::size_t> offset, bytes;
  explicit Blocks(std::size_t ranks) : offset(ranks, 0), bytes(ranks, 0) {}
  // Block k of `count[k]` elements of `element` bytes at element `displ[k]`.
  static Blocks of(const void* base, const int* count, const int* displ, std::size_t element,
                   std::size_t ranks);
  // `ranks` equal blocks of `block` bytes, packed in rank order.
  static Blocks packed(const void* base, std::size_t block, std::size_t ranks);
};

// The same blocks indexed by ruccl rank: block k is the caller's block of
// MPI rank r.mpi_of_ruccl[k] (nothing moves; only the index changes).
Blocks in_ruccl_order(const Route& r, Blocks mpi);

// Sends `send` and receives into `recv`, both by ruccl rank (whose blocks must not overlap one
// another). `copy_send`: the send blocks may overlap the receive blocks (MPI's
// in-place Alltoallv), so they are copied out first. Blocks that lie packed
// in rank order move straight from and into the caller's memory; others
// through a packed copy. A source that sent other than recv.bytes[s] is
// kShapeMismatch naming its MPI rank.
Status exchange(Route& r, const Blocks& send, const Blocks& recv, bool copy_send = false);

// One all_gather of `in` into `recv` (by ruccl rank, every block of in's
// size): straight into the caller's memory when the blocks lie packed in
// ruccl rank order, else through scratch, each block then copied to its
// place (`in_place`: this rank's own block is there already).
Status gather_equal_blocks(Route& r, const TensorView& in, const Blocks& recv, bool in_place);

// MPI_Reduce_scatter (counts[j] MPI elements to MPI rank j) and
// MPI_Reduce_scatter_block (counts null: `each` to every rank) on `r`, the
// parts packed in MPI rank order in the input (vector_collectives.cpp).
Status reduce_scatter_parts(Route& r, const void* sendbuf, void* recvbuf, const int* counts,
                            int each, const Reduction& red);

// True when any of the first `n` counts is negative (MPI reports it).
bool any_negative(const int* counts, int n);

}  // namespace ruccl::mpi_layer
