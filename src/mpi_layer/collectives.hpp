// The layer's collectives behind the C entry points (collectives.cpp,
// vector_collectives.cpp, rooted_collectives.cpp,
// scan_collectives.cpp) and the Fortran ones (fortran.cpp), internal to
// src/mpi_layer. Each takes the C arguments, decides (dispatch.hpp) and, when
// ruccl serves the call, runs it and returns its MPI return code; nullopt
// means the call goes to MPI (counted as a fallback), through the caller's
// own PMPI entry: PMPI_Allreduce for C, pmpi_allreduce_ for Fortran.
#pragma once

#include <mpi.h>

#include <optional>

namespace ruccl::mpi_layer {

std::optional<int> allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm);
std::optional<int> reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type,
                          MPI_Op op, int root, MPI_Comm comm);
std::optional<int> bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm);
std::optional<int> allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                             void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
std::optional<int> reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                        MPI_Datatype type, MPI_Op op, MPI_Comm comm);
std::optional<int> alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                            void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
std::optional<int> barrier(MPI_Comm comm);
std::optional<int> alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                             MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                             const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
std::optional<int> reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                  MPI_Datatype type, MPI_Op op, MPI_Comm comm);
std::optional<int> allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                              void* recvbuf, const int recvcounts[], const int displs[],
                              MPI_Datatype recvtype, MPI_Comm comm);
std::optional<int> gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                          int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
std::optional<int> gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                           const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                           int root, MPI_Comm comm);
std::optional<int> scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                           int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
std::optional<int> scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm);
std::optional<int> exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type,
                          MPI_Op op, MPI_Comm comm);
std::optional<int> scatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                            MPI_Datatype sendtype, void* recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm);

}  // namespace ruccl::mpi_layer
