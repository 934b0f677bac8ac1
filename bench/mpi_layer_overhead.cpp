// The PMPI layer's own cost per call (README "MPI programs, unchanged"): its
// lookups of datatype, op and communicator and its counters, timed in loops
// against the layer's internals (the objects of libruccl_mpi.so linked in, so
// MPI_Allreduce here is the layer's). The decision of a routed all-reduce is
// reduction_check + routed. Two differences price the whole path (noisy: each
// is the difference of two timings, one of them a ruccl collective):
// MPI_Allreduce routed (one float, MPI_SUM) minus the same ruccl all-reduce
// called directly, and MPI_Allreduce falling back (MPI_2INT, MAXLOC) minus
// PMPI_Allreduce. Run on one process, where the collectives are local:
//   mpirun -np 1 build/bin/mpi_layer_overhead [--reps 7]
// Prints "<what> <ns per call>" (the median over the repetitions).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mpi_layer/dispatch.hpp"
#include "mpi_layer/mapping.hpp"
#include "mpi_layer/registry.hpp"

namespace {

namespace layer = ruccl::mpi_layer;

template <typename T>
void keep(const T& value) {
  asm volatile("" : : "g"(&value) : "memory");  // the loop's result is used
}

// Nanoseconds per call of `body`, `calls` times in a row.
double ns_per_call(const std::function<void()>& body, long calls) {
  for (long k = 0; k < calls / 10 + 1; ++k) body();  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  for (long k = 0; k < calls; ++k) body();
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(calls);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7;
  for (int a = 1; a + 1 < argc; a += 2)
    if (std::strcmp(argv[a], "--reps") == 0) reps = std::max(1, std::atoi(argv[a + 1]));
  MPI_Init(&argc, &argv);
  MPI_Comm dup = MPI_COMM_NULL;
  PMPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Datatype derived = MPI_DATATYPE_NULL;
  PMPI_Type_contiguous(2, MPI_FLOAT, &derived);
  PMPI_Type_commit(&derived);

  // The Routes exist before timing (each creation is a ruccl world).
  layer::Route* world = nullptr;
  if (const layer::Routed r =
          layer::routed(layer::Coll::kAllreduce, MPI_COMM_WORLD, layer::Why::kRouted))
    world = &*r;  // (single-threaded: no lock held)
  (void)layer::routed(layer::Coll::kAllreduce, dup, layer::Why::kRouted);
  if (world == nullptr) {
    std::fprintf(stderr, "mpi_layer_overhead: MPI_COMM_WORLD is not routed (RUCCL_MPI=0?)\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  float in = 1, out = 0;
  int pair_in[2] = {1, 0}, pair_out[2] = {0, 0};
  const auto ruccl_call = [&] {
    keep(world->comm->all_reduce_into(world->rank, layer::host_view(&in, ruccl::DataType::kF32, 1),
                                      layer::host_view(&out, ruccl::DataType::kF32, 1),
                                      ruccl::ReduceOp::kSum));
  };
  const auto routed_call = [&] {
    keep(MPI_Allreduce(&in, &out, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
  };
  const auto pmpi_call = [&] {
    keep(PMPI_Allreduce(pair_in, pair_out, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD));
  };
  const auto fallback_call = [&] {
    keep(MPI_Allreduce(pair_in, pair_out, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD));
  };
  struct Case {
    std::string what;
    std::function<void()> body;
    long calls;
  };
  const long many = 2000000, few = 100000;
  const std::vector<Case> cases = {
      {"type_info(MPI_FLOAT), first in the table", [] { keep(layer::type_info(MPI_FLOAT)); }, many},
      {"type_info(MPI_CHARACTER), last", [] { keep(layer::type_info(MPI_CHARACTER)); }, many},
      {"type_info(a derived type), not found", [&] { keep(layer::type_info(derived)); }, many},
      {"reduction_check(MPI_FLOAT, MPI_SUM)",
       [] {
         std::optional<layer::Reduction> red;
         keep(layer::reduction_check(MPI_FLOAT, MPI_SUM, red));
         keep(red);
       },
       many},
      {"routed(MPI_COMM_WORLD): switches, Route, counter",
       [] { keep(layer::routed(layer::Coll::kAllreduce, MPI_COMM_WORLD, layer::Why::kRouted)); },
       many},
      {"routed(a duplicate): the Route from its attribute",
       [&] { keep(layer::routed(layer::Coll::kAllreduce, dup, layer::Why::kRouted)); }, many},
      {"decision of a routed MPI_Allreduce (the two above)",
       [] {
         std::optional<layer::Reduction> red;
         const layer::Why local = layer::reduction_check(MPI_FLOAT, MPI_SUM, red);
         keep(layer::routed(layer::Coll::kAllreduce, MPI_COMM_WORLD, local));
         keep(red);
       },
       many},
      {"ruccl all_reduce_into, 1 float, called directly", ruccl_call, few},
      {"MPI_Allreduce, 1 float, through the layer", routed_call, few},
      {"PMPI_Allreduce, MPI_2INT MAXLOC", pmpi_call, few},
      {"MPI_Allreduce, MPI_2INT MAXLOC, falling back", fallback_call, few},
  };
  std::vector<std::vector<double>> ns(cases.size());
  for (int r = 0; r < reps; ++r)  // interleaved: every case once per repetition
    for (std::size_t c = 0; c < cases.size(); ++c)
      ns[c].push_back(ns_per_call(cases[c].body, cases[c].calls));
  std::vector<double> med;
  for (const auto& v : ns) med.push_back(median(v));
  std::printf("# the layer's cost per call, ns (median of %d repetitions, 1 process)\n", reps);
  for (std::size_t c = 0; c < cases.size(); ++c)
    std::printf("%-52s %8.1f\n", cases[c].what.c_str(), med[c]);
  std::printf("%-52s %8.1f\n", "=> routed call: layer minus ruccl", med[8] - med[7]);
  std::printf("%-52s %8.1f\n", "=> fallback: layer minus PMPI", med[10] - med[9]);

  PMPI_Type_free(&derived);
  MPI_Comm_free(&dup);
  MPI_Finalize();
  return 0;
}
