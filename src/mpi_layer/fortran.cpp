// The Fortran entry points of the routed collectives. Open MPI's Fortran
// bindings (mpif.h and `use mpi`, libmpi_mpifh) convert their arguments and
// call PMPI_*, so a Fortran program never reaches the C interceptors. The
// layer therefore defines the Fortran symbols too, under every name mangling
// Open MPI exports (mpi_allreduce_, mpi_allreduce, mpi_allreduce__,
// MPI_ALLREDUCE): it converts the handles (PMPI_*_f2c) and the sentinels
// MPI_IN_PLACE and MPI_BOTTOM (in Open MPI the addresses of common blocks,
// mpi_fortran_in_place_ and mpi_fortran_bottom_ under gfortran), then makes
// the same decision as the C entry (collectives.hpp). A call the layer does
// not route goes, with its Fortran arguments unchanged, to the Fortran PMPI
// entry (pmpi_allreduce_), which does what it does without the layer.
//
// MPI_Fint is the Fortran INTEGER; every argument arrives by reference, and
// ierror is written last. mpi_init_, mpi_init_thread_ and mpi_finalize_ are
// intercepted as MPI_Init, MPI_Init_thread and MPI_Finalize are.
// Open MPI 4's mpi_f08 bindings call internal entries (ompi_allreduce_f, ...)
// with the same arguments: those names are aliases too.
#include <mpi.h>

#include "mpi_layer/collectives.hpp"
#include "mpi_layer/registry.hpp"

namespace {

using FAllreduce = void(const void*, void*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*,
                        const MPI_Fint*, MPI_Fint*);
using FReduce = void(const void*, void*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*,
                     const MPI_Fint*, const MPI_Fint*, MPI_Fint*);
using FBcast = void(void*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*,
                    MPI_Fint*);
// Allgather and Alltoall
using FMove = void(const void*, const MPI_Fint*, const MPI_Fint*, void*, const MPI_Fint*,
                   const MPI_Fint*, const MPI_Fint*, MPI_Fint*);
using FReduceScatterBlock = void(const void*, void*, const MPI_Fint*, const MPI_Fint*,
                                 const MPI_Fint*, const MPI_Fint*, MPI_Fint*);
using FReduceScatter = void(const void*, void*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*,
                            const MPI_Fint*, MPI_Fint*);
using FAlltoallv = void(const void*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*, void*,
                        const MPI_Fint*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*,
                        MPI_Fint*);
using FBarrier = void(const MPI_Fint*, MPI_Fint*);
// Gather and Scatter
using FRooted = void(const void*, const MPI_Fint*, const MPI_Fint*, void*, const MPI_Fint*,
                     const MPI_Fint*, const MPI_Fint*, const MPI_Fint*, MPI_Fint*);
using FGatherv = void(const void*, const MPI_Fint*, const MPI_Fint*, void*, const MPI_Fint*,
                      const MPI_Fint*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*,
                      MPI_Fint*);
using FScatterv = void(const void*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*, void*,
                       const MPI_Fint*, const MPI_Fint*, const MPI_Fint*, const MPI_Fint*,
                       MPI_Fint*);
using FAllgatherv = void(const void*, const MPI_Fint*, const MPI_Fint*, void*, const MPI_Fint*,
                         const MPI_Fint*, const MPI_Fint*, const MPI_Fint*, MPI_Fint*);
using FFinalize = void(MPI_Fint*);
using FInit = void(MPI_Fint*);
using FInitThread = void(const MPI_Fint*, MPI_Fint*, MPI_Fint*);
using FFreeMem = void(void*, MPI_Fint*);

}  // namespace

// The names below are the Fortran ABI's (Open MPI's exports), not ours to style.
// NOLINTBEGIN(readability-identifier-naming, bugprone-reserved-identifier)
extern "C" {

// Open MPI's Fortran sentinels (libmpi) and Fortran PMPI entries
// (libmpi_mpifh): weak, so the layer loads into programs without them.
extern MPI_Fint mpi_fortran_in_place_ __attribute__((weak));
extern MPI_Fint mpi_fortran_in_place __attribute__((weak));
extern MPI_Fint mpi_fortran_in_place__ __attribute__((weak));
extern MPI_Fint MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern MPI_Fint mpi_fortran_bottom_ __attribute__((weak));
extern MPI_Fint mpi_fortran_bottom __attribute__((weak));
extern MPI_Fint mpi_fortran_bottom__ __attribute__((weak));
extern MPI_Fint MPI_FORTRAN_BOTTOM __attribute__((weak));

FAllreduce pmpi_allreduce_ __attribute__((weak));
FReduce pmpi_reduce_ __attribute__((weak));
FBcast pmpi_bcast_ __attribute__((weak));
FMove pmpi_allgather_ __attribute__((weak));
FReduceScatterBlock pmpi_reduce_scatter_block_ __attribute__((weak));
FReduceScatter pmpi_reduce_scatter_ __attribute__((weak));
FMove pmpi_alltoall_ __attribute__((weak));
FAlltoallv pmpi_alltoallv_ __attribute__((weak));
FBarrier pmpi_barrier_ __attribute__((weak));
FAllgatherv pmpi_allgatherv_ __attribute__((weak));
FRooted pmpi_gather_ __attribute__((weak));
FGatherv pmpi_gatherv_ __attribute__((weak));
FRooted pmpi_scatter_ __attribute__((weak));
FScatterv pmpi_scatterv_ __attribute__((weak));
FAllreduce pmpi_scan_ __attribute__((weak));
FAllreduce pmpi_exscan_ __attribute__((weak));
FFinalize pmpi_finalize_ __attribute__((weak));
FInit pmpi_init_ __attribute__((weak));
FInitThread pmpi_init_thread_ __attribute__((weak));
FFreeMem pmpi_free_mem_ __attribute__((weak));

}  // extern "C"
// NOLINTEND(readability-identifier-naming, bugprone-reserved-identifier)

namespace {

namespace layer = ruccl::mpi_layer;

bool is_one_of(const void* p, const MPI_Fint* a, const MPI_Fint* b, const MPI_Fint* c,
               const MPI_Fint* d) {
  return p != nullptr && (p == a || p == b || p == c || p == d);
}

// A Fortran buffer argument as C sees it.
template <typename T>
T* buffer(T* p) {
  if (is_one_of(p, &mpi_fortran_in_place_, &mpi_fortran_in_place, &mpi_fortran_in_place__,
                &MPI_FORTRAN_IN_PLACE))
    return static_cast<T*>(MPI_IN_PLACE);
  if (is_one_of(p, &mpi_fortran_bottom_, &mpi_fortran_bottom, &mpi_fortran_bottom__,
                &MPI_FORTRAN_BOTTOM))
    return static_cast<T*>(MPI_BOTTOM);
  return p;
}

// A handle Open MPI cannot convert (out of range) comes back null: MPI_COMM_NULL
// here, so the layer falls back and MPI reports it.
MPI_Comm comm_of(const MPI_Fint* f) {
  const MPI_Comm c = PMPI_Comm_f2c(*f);
  return c == MPI_Comm{} ? MPI_COMM_NULL : c;
}
MPI_Datatype type_of(const MPI_Fint* f) { return PMPI_Type_f2c(*f); }
MPI_Op op_of(const MPI_Fint* f) { return PMPI_Op_f2c(*f); }

// ierror of a routed call (unless null, as Open MPI's bindings allow), else
// the Fortran PMPI entry with the arguments as the program passed them (null
// only without Fortran MPI, which never calls here).
template <typename... P, typename... A>
void finish(const std::optional<int>& rc, MPI_Fint* ierr, void (*pmpi)(P...), A... args) {
  if (!rc && pmpi != nullptr) {
    pmpi(args..., ierr);
    return;
  }
  if (ierr != nullptr) *ierr = rc ? static_cast<MPI_Fint>(*rc) : MPI_ERR_INTERN;
}

}  // namespace

// NOLINTBEGIN(readability-identifier-naming, bugprone-reserved-identifier)
extern "C" {

void mpi_allreduce_(const void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* type,
                    const MPI_Fint* op, const MPI_Fint* comm, MPI_Fint* ierr) {
  finish(layer::allreduce(buffer(sendbuf), buffer(recvbuf), *count, type_of(type), op_of(op),
                          comm_of(comm)),
         ierr, pmpi_allreduce_, sendbuf, recvbuf, count, type, op, comm);
}

void mpi_reduce_(const void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* type,
                 const MPI_Fint* op, const MPI_Fint* root, const MPI_Fint* comm, MPI_Fint* ierr) {
  finish(layer::reduce(buffer(sendbuf), buffer(recvbuf), *count, type_of(type), op_of(op), *root,
                       comm_of(comm)),
         ierr, pmpi_reduce_, sendbuf, recvbuf, count, type, op, root, comm);
}

void mpi_bcast_(void* buf, const MPI_Fint* count, const MPI_Fint* type, const MPI_Fint* root,
                const MPI_Fint* comm, MPI_Fint* ierr) {
  finish(layer::bcast(buffer(buf), *count, type_of(type), *root, comm_of(comm)), ierr, pmpi_bcast_,
         buf, count, type, root, comm);
}

void mpi_allgather_(const void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype,
                    void* recvbuf, const MPI_Fint* recvcount, const MPI_Fint* recvtype,
                    const MPI_Fint* comm, MPI_Fint* ierr) {
  finish(layer::allgather(buffer(sendbuf), *sendcount, type_of(sendtype), buffer(recvbuf),
                          *recvcount, type_of(recvtype), comm_of(comm)),
         ierr, pmpi_allgather_, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

void mpi_reduce_scatter_block_(const void* sendbuf, void* recvbuf, const MPI_Fint* recvcount,
                               const MPI_Fint* type, const MPI_Fint* op, const MPI_Fint* comm,
                               MPI_Fint* ierr) {
  finish(layer::reduce_scatter_block(buffer(sendbuf), buffer(recvbuf), *recvcount, type_of(type),
                                     op_of(op), comm_of(comm)),
         ierr, pmpi_reduce_scatter_block_, sendbuf, recvbuf, recvcount, type, op, comm);
}

void mpi_reduce_scatter_(const void* sendbuf, void* recvbuf, const MPI_Fint* recvcounts,
                         const MPI_Fint* type, const MPI_Fint* op, const MPI_Fint* comm,
                         MPI_Fint* ierr) {
  finish(layer::reduce_scatter(buffer(sendbuf), buffer(recvbuf), recvcounts, type_of(type),
                               op_of(op), comm_of(comm)),
         ierr, pmpi_reduce_scatter_, sendbuf, recvbuf, recvcounts, type, op, comm);
}

void mpi_alltoall_(const void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype,
                   void* recvbuf, const MPI_Fint* recvcount, const MPI_Fint* recvtype,
                   const MPI_Fint* comm, MPI_Fint* ierr) {
  finish(layer::alltoall(buffer(sendbuf), *sendcount, type_of(sendtype), buffer(recvbuf),
                         *recvcount, type_of(recvtype), comm_of(comm)),
         ierr, pmpi_alltoall_, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

void mpi_alltoallv_(const void* sendbuf, const MPI_Fint* sendcounts, const MPI_Fint* sdispls,
                    const MPI_Fint* sendtype, void* recvbuf, const MPI_Fint* recvcounts,
                    const MPI_Fint* rdispls, const MPI_Fint* recvtype, const MPI_Fint* comm,
                    MPI_Fint* ierr) {
  finish(layer::alltoallv(buffer(sendbuf), sendcounts, sdispls, type_of(sendtype), buffer(recvbuf),
                          recvcounts, rdispls, type_of(recvtype), comm_of(comm)),
         ierr, pmpi_alltoallv_, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
         rdispls, recvtype, comm);
}

void mpi_barrier_(const MPI_Fint* comm, MPI_Fint* ierr) {
  finish(layer::barrier(comm_of(comm)), ierr, pmpi_barrier_, comm);
}

void mpi_allgatherv_(const void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype,
                     void* recvbuf, const MPI_Fint* recvcounts, const MPI_Fint* displs,
                     const MPI_Fint* recvtype, const MPI_Fint* comm, MPI_Fint* ierr) {
  finish(layer::allgatherv(buffer(sendbuf), *sendcount, type_of(sendtype), buffer(recvbuf),
                           recvcounts, displs, type_of(recvtype), comm_of(comm)),
         ierr, pmpi_allgatherv_, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
         recvtype, comm);
}

void mpi_gather_(const void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype,
                 void* recvbuf, const MPI_Fint* recvcount, const MPI_Fint* recvtype,
                 const MPI_Fint* root, const MPI_Fint* comm, MPI_Fint* ierr) {
  finish(layer::gather(buffer(sendbuf), *sendcount, type_of(sendtype), buffer(recvbuf), *recvcount,
                       type_of(recvtype), *root, comm_of(comm)),
         ierr, pmpi_gather_, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
         comm);
}

void mpi_gatherv_(const void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype,
                  void* recvbuf, const MPI_Fint* recvcounts, const MPI_Fint* displs,
                  const MPI_Fint* recvtype, const MPI_Fint* root, const MPI_Fint* comm,
                  MPI_Fint* ierr) {
  finish(layer::gatherv(buffer(sendbuf), *sendcount, type_of(sendtype), buffer(recvbuf), recvcounts,
                        displs, type_of(recvtype), *root, comm_of(comm)),
         ierr, pmpi_gatherv_, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
         root, comm);
}

void mpi_scatter_(const void* sendbuf, const MPI_Fint* sendcount, const MPI_Fint* sendtype,
                  void* recvbuf, const MPI_Fint* recvcount, const MPI_Fint* recvtype,
                  const MPI_Fint* root, const MPI_Fint* comm, MPI_Fint* ierr) {
  finish(layer::scatter(buffer(sendbuf), *sendcount, type_of(sendtype), buffer(recvbuf), *recvcount,
                        type_of(recvtype), *root, comm_of(comm)),
         ierr, pmpi_scatter_, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
         comm);
}

void mpi_scatterv_(const void* sendbuf, const MPI_Fint* sendcounts, const MPI_Fint* displs,
                   const MPI_Fint* sendtype, void* recvbuf, const MPI_Fint* recvcount,
                   const MPI_Fint* recvtype, const MPI_Fint* root, const MPI_Fint* comm,
                   MPI_Fint* ierr) {
  finish(layer::scatterv(buffer(sendbuf), sendcounts, displs, type_of(sendtype), buffer(recvbuf),
                         *recvcount, type_of(recvtype), *root, comm_of(comm)),
         ierr, pmpi_scatterv_, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
         root, comm);
}

void mpi_scan_(const void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* type,
               const MPI_Fint* op, const MPI_Fint* comm, MPI_Fint* ierr) {
  finish(layer::scan(buffer(sendbuf), buffer(recvbuf), *count, type_of(type), op_of(op),
                     comm_of(comm)),
         ierr, pmpi_scan_, sendbuf, recvbuf, count, type, op, comm);
}

void mpi_exscan_(const void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* type,
                 const MPI_Fint* op, const MPI_Fint* comm, MPI_Fint* ierr) {
  finish(layer::exscan(buffer(sendbuf), buffer(recvbuf), *count, type_of(type), op_of(op),
                       comm_of(comm)),
         ierr, pmpi_exscan_, sendbuf, recvbuf, count, type, op, comm);
}

// As MPI_Init / MPI_Init_thread: MPI_COMM_WORLD's ruccl communicator is
// made here, so that every later one is split from it.
void mpi_init_(MPI_Fint* ierr) {
  if (pmpi_init_ == nullptr) {
    if (ierr != nullptr) *ierr = MPI_ERR_INTERN;
    return;
  }
  pmpi_init_(ierr);
  if (ierr == nullptr || *ierr == MPI_SUCCESS) layer::Registry::get().at_init();
}

void mpi_init_thread_(const MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  if (pmpi_init_thread_ == nullptr) {
    if (ierr != nullptr) *ierr = MPI_ERR_INTERN;
    return;
  }
  pmpi_init_thread_(required, provided, ierr);
  if (ierr == nullptr || *ierr == MPI_SUCCESS) layer::Registry::get().at_init();
}

// As MPI_Finalize: the counts, and every ruccl communicator freed before MPI's end.
void mpi_finalize_(MPI_Fint* ierr) {
  layer::Registry::get().finalize();
  finish(std::nullopt, ierr, pmpi_finalize_);
}

// MPI_FREE_MEM: memory the layer's MPI_Alloc_mem gave a C caller may be
// freed from Fortran (memory.cpp); any other goes to MPI.
void mpi_free_mem_(void* base, MPI_Fint* ierr) {
  finish(layer::Registry::free_memory(base) ? std::optional<int>(MPI_SUCCESS) : std::nullopt, ierr,
         pmpi_free_mem_, base);
}

// The other manglings Open MPI exports, as aliases.
FAllreduce mpi_allreduce __attribute__((alias("mpi_allreduce_")));
FAllreduce mpi_allreduce__ __attribute__((alias("mpi_allreduce_")));
FAllreduce MPI_ALLREDUCE __attribute__((alias("mpi_allreduce_")));
FReduce mpi_reduce __attribute__((alias("mpi_reduce_")));
FReduce mpi_reduce__ __attribute__((alias("mpi_reduce_")));
FReduce MPI_REDUCE __attribute__((alias("mpi_reduce_")));
FBcast mpi_bcast __attribute__((alias("mpi_bcast_")));
FBcast mpi_bcast__ __attribute__((alias("mpi_bcast_")));
FBcast MPI_BCAST __attribute__((alias("mpi_bcast_")));
FMove mpi_allgather __attribute__((alias("mpi_allgather_")));
FMove mpi_allgather__ __attribute__((alias("mpi_allgather_")));
FMove MPI_ALLGATHER __attribute__((alias("mpi_allgather_")));
FReduceScatterBlock mpi_reduce_scatter_block __attribute__((alias("mpi_reduce_scatter_block_")));
FReduceScatterBlock mpi_reduce_scatter_block__ __attribute__((alias("mpi_reduce_scatter_block_")));
FReduceScatterBlock MPI_REDUCE_SCATTER_BLOCK __attribute__((alias("mpi_reduce_scatter_block_")));
FReduceScatter mpi_reduce_scatter __attribute__((alias("mpi_reduce_scatter_")));
FReduceScatter mpi_reduce_scatter__ __attribute__((alias("mpi_reduce_scatter_")));
FReduceScatter MPI_REDUCE_SCATTER __attribute__((alias("mpi_reduce_scatter_")));
FMove mpi_alltoall __attribute__((alias("mpi_alltoall_")));
FMove mpi_alltoall__ __attribute__((alias("mpi_alltoall_")));
FMove MPI_ALLTOALL __attribute__((alias("mpi_alltoall_")));
FAlltoallv mpi_alltoallv __attribute__((alias("mpi_alltoallv_")));
FAlltoallv mpi_alltoallv__ __attribute__((alias("mpi_alltoallv_")));
FAlltoallv MPI_ALLTOALLV __attribute__((alias("mpi_alltoallv_")));
FBarrier mpi_barrier __attribute__((alias("mpi_barrier_")));
FBarrier mpi_barrier__ __attribute__((alias("mpi_barrier_")));
FBarrier MPI_BARRIER __attribute__((alias("mpi_barrier_")));
FAllgatherv mpi_allgatherv __attribute__((alias("mpi_allgatherv_")));
FAllgatherv mpi_allgatherv__ __attribute__((alias("mpi_allgatherv_")));
FAllgatherv MPI_ALLGATHERV __attribute__((alias("mpi_allgatherv_")));
FRooted mpi_gather __attribute__((alias("mpi_gather_")));
FRooted mpi_gather__ __attribute__((alias("mpi_gather_")));
FRooted MPI_GATHER __attribute__((alias("mpi_gather_")));
FGatherv mpi_gatherv __attribute__((alias("mpi_gatherv_")));
FGatherv mpi_gatherv__ __attribute__((alias("mpi_gatherv_")));
FGatherv MPI_GATHERV __attribute__((alias("mpi_gatherv_")));
FRooted mpi_scatter __attribute__((alias("mpi_scatter_")));
FRooted mpi_scatter__ __attribute__((alias("mpi_scatter_")));
FRooted MPI_SCATTER __attribute__((alias("mpi_scatter_")));
FScatterv mpi_scatterv __attribute__((alias("mpi_scatterv_")));
FScatterv mpi_scatterv__ __attribute__((alias("mpi_scatterv_")));
FScatterv MPI_SCATTERV __attribute__((alias("mpi_scatterv_")));
FAllreduce mpi_scan __attribute__((alias("mpi_scan_")));
FAllreduce mpi_scan__ __attribute__((alias("mpi_scan_")));
FAllreduce MPI_SCAN __attribute__((alias("mpi_scan_")));
FAllreduce mpi_exscan __attribute__((alias("mpi_exscan_")));
FAllreduce mpi_exscan__ __attribute__((alias("mpi_exscan_")));
FAllreduce MPI_EXSCAN __attribute__((alias("mpi_exscan_")));
FInit mpi_init __attribute__((alias("mpi_init_")));
FInit mpi_init__ __attribute__((alias("mpi_init_")));
FInit MPI_INIT __attribute__((alias("mpi_init_")));
FInitThread mpi_init_thread __attribute__((alias("mpi_init_thread_")));
FInitThread mpi_init_thread__ __attribute__((alias("mpi_init_thread_")));
FInitThread MPI_INIT_THREAD __attribute__((alias("mpi_init_thread_")));
FFinalize mpi_finalize __attribute__((alias("mpi_finalize_")));
FFinalize mpi_finalize__ __attribute__((alias("mpi_finalize_")));
FFinalize MPI_FINALIZE __attribute__((alias("mpi_finalize_")));
FFreeMem mpi_free_mem __attribute__((alias("mpi_free_mem_")));
FFreeMem mpi_free_mem__ __attribute__((alias("mpi_free_mem_")));
FFreeMem MPI_FREE_MEM __attribute__((alias("mpi_free_mem_")));
// Open MPI 4's mpi_f08 bindings (libmpi_usempif08) pass the integer inside
// each handle to these internal entries of libmpi_mpifh, with the same
// arguments as mpi_allreduce_ and the same sentinels.
FAllreduce ompi_allreduce_f __attribute__((alias("mpi_allreduce_")));
FReduce ompi_reduce_f __attribute__((alias("mpi_reduce_")));
FBcast ompi_bcast_f __attribute__((alias("mpi_bcast_")));
FMove ompi_allgather_f __attribute__((alias("mpi_allgather_")));
FReduceScatterBlock ompi_reduce_scatter_block_f __attribute__((alias("mpi_reduce_scatter_block_")));
FReduceScatter ompi_reduce_scatter_f __attribute__((alias("mpi_reduce_scatter_")));
FMove ompi_alltoall_f __attribute__((alias("mpi_alltoall_")));
FAlltoallv ompi_alltoallv_f __attribute__((alias("mpi_alltoallv_")));
FBarrier ompi_barrier_f __attribute__((alias("mpi_barrier_")));
FAllgatherv ompi_allgatherv_f __attribute__((alias("mpi_allgatherv_")));
FRooted ompi_gather_f __attribute__((alias("mpi_gather_")));
FGatherv ompi_gatherv_f __attribute__((alias("mpi_gatherv_")));
FRooted ompi_scatter_f __attribute__((alias("mpi_scatter_")));
FScatterv ompi_scatterv_f __attribute__((alias("mpi_scatterv_")));
FAllreduce ompi_scan_f __attribute__((alias("mpi_scan_")));
FAllreduce ompi_exscan_f __attribute__((alias("mpi_exscan_")));
FInit ompi_init_f __attribute__((alias("mpi_init_")));
FInitThread ompi_init_thread_f __attribute__((alias("mpi_init_thread_")));
FFinalize ompi_finalize_f __attribute__((alias("mpi_finalize_")));
FFreeMem ompi_free_mem_f __attribute__((alias("mpi_free_mem_")));

}  // extern "C"
// NOLINTEND(readability-identifier-naming, bugprone-reserved-identifier)
