// The table of predefined datatypes, built at first use (after MPI_Init: Open
// MPI's handles are addresses of library objects), sorted by handle, then
// read without locks: a lookup is a binary search (a few ns; see
// bench/mpi_layer_overhead).
#include "mpi_layer/mapping.hpp"

#include <algorithm>
#include <functional>
#include <vector>

namespace ruccl::mpi_layer {
namespace {

enum class Kind : std::uint8_t { kSigned, kUnsigned, kFloat, kComplex, kMoveOnly };

struct Row {
  MPI_Datatype type;
  Kind kind;
};

std::optional<DataType> reducible(Kind kind, std::size_t bytes) {
  switch (kind) {
    case Kind::kSigned:
      if (bytes == 1) return DataType::kI8;
      if (bytes == 4) return DataType::kI32;
      if (bytes == 8) return DataType::kI64;
      return std::nullopt;
    case Kind::kUnsigned:
      if (bytes == 1) return DataType::kU8;
      if (bytes == 8) return DataType::kU64;
      return std::nullopt;
    case Kind::kFloat:
      if (bytes == 4) return DataType::kF32;
      if (bytes == 8) return DataType::kF64;
      return std::nullopt;
    case Kind::kComplex:
      if (bytes == 8) return DataType::kF32;
      if (bytes == 16) return DataType::kF64;
      return std::nullopt;
    case Kind::kMoveOnly: return std::nullopt;
  }
  return std::nullopt;
}

struct Entry {
  MPI_Datatype type;
  TypeInfo info;
};

std::vector<Entry> build_table() {
  const Row rows[] = {
      {MPI_FLOAT, Kind::kFloat},
      {MPI_DOUBLE, Kind::kFloat},
      {MPI_INT, Kind::kSigned},
      {MPI_LONG, Kind::kSigned},
      {MPI_LONG_LONG, Kind::kSigned},
      {MPI_LONG_LONG_INT, Kind::kSigned},
      {MPI_SHORT, Kind::kSigned},
      {MPI_SIGNED_CHAR, Kind::kSigned},
      {MPI_UNSIGNED_CHAR, Kind::kUnsigned},
      {MPI_UNSIGNED_SHORT, Kind::kUnsigned},
      {MPI_UNSIGNED, Kind::kUnsigned},
      {MPI_UNSIGNED_LONG, Kind::kUnsigned},
      {MPI_UNSIGNED_LONG_LONG, Kind::kUnsigned},
      {MPI_INT8_T, Kind::kSigned},
      {MPI_INT16_T, Kind::kSigned},
      {MPI_INT32_T, Kind::kSigned},
      {MPI_INT64_T, Kind::kSigned},
      {MPI_UINT8_T, Kind::kUnsigned},
      {MPI_UINT16_T, Kind::kUnsigned},
      {MPI_UINT32_T, Kind::kUnsigned},
      {MPI_UINT64_T, Kind::kUnsigned},
      {MPI_C_FLOAT_COMPLEX, Kind::kComplex},
      {MPI_C_DOUBLE_COMPLEX, Kind::kComplex},
      {MPI_REAL, Kind::kFloat},
      {MPI_DOUBLE_PRECISION, Kind::kFloat},
      {MPI_INTEGER, Kind::kSigned},
      {MPI_REAL4, Kind::kFloat},
      {MPI_REAL8, Kind::kFloat},
      {MPI_INTEGER4, Kind::kSigned},
      {MPI_INTEGER8, Kind::kSigned},
      {MPI_COMPLEX, Kind::kComplex},
      {MPI_DOUBLE_COMPLEX, Kind::kComplex},
      // Moved as bytes, never reduced here.
      {MPI_CHAR, Kind::kMoveOnly},
      {MPI_BYTE, Kind::kMoveOnly},
      {MPI_WCHAR, Kind::kMoveOnly},
      {MPI_LONG_DOUBLE, Kind::kMoveOnly},
      {MPI_C_BOOL, Kind::kMoveOnly},
      {MPI_LOGICAL, Kind::kMoveOnly},
      {MPI_CHARACTER, Kind::kMoveOnly},
  };
  std::vector<Entry> table;
  for (const Row& row : rows) {
    if (row.type == MPI_DATATYPE_NULL) continue;  // a Fortran type this MPI lacks
    int size = 0;
    if (PMPI_Type_size(row.type, &size) != MPI_SUCCESS || size <= 0) continue;
    TypeInfo info;
    info.bytes = static_cast<std::size_t>(size);
    info.reduce_as = reducible(row.kind, info.bytes);
    info.lanes = row.kind == Kind::kComplex ? 2 : 1;
    info.integer = row.kind == Kind::kSigned || row.kind == Kind::kUnsigned;
    table.push_back({row.type, info});
  }
  std::sort(table.begin(), table.end(), [](const Entry& a, const Entry& b) {
    return std::less<MPI_Datatype>()(a.type, b.type);
  });
  return table;
}

const std::vector<Entry>& table() {
  static const std::vector<Entry> t = build_table();  // thread-safe initialisation
  return t;
}

}  // namespace

std::optional<TypeInfo> type_info(MPI_Datatype type) {
  const std::vector<Entry>& t = table();
  const auto it = std::lower_bound(t.begin(), t.end(), type, [](const Entry& e, MPI_Datatype k) {
    return std::less<MPI_Datatype>()(e.type, k);
  });
  if (it == t.end() || it->type != type) return std::nullopt;
  return it->info;
}

std::optional<Reduction> reduction_of(MPI_Datatype type, MPI_Op op) {
  const auto info = type_info(type);
  if (!info) return std::nullopt;
  std::optional<ReduceOp> r;
  bool integer_only = false;
  if (op == MPI_SUM) r = ReduceOp::kSum;
  else if (op == MPI_PROD) r = ReduceOp::kProd;
  else if (op == MPI_MIN) r = ReduceOp::kMin;
  else if (op == MPI_MAX) r = ReduceOp::kMax;
  else if (op == MPI_BAND) r = ReduceOp::kBand, integer_only = true;
  else if (op == MPI_BOR) r = ReduceOp::kBor, integer_only = true;
  else if (op == MPI_BXOR) r = ReduceOp::kBxor, integer_only = true;
  else if (op == MPI_LAND) r = ReduceOp::kLand, integer_only = true;
  else if (op == MPI_LOR) r = ReduceOp::kLor, integer_only = true;
  else if (op == MPI_LXOR) r = ReduceOp::kLxor, integer_only = true;
  if (!r) return std::nullopt;  // user ops, MAXLOC, MINLOC, REPLACE, NO_OP
  // MPI_BYTE takes the bitwise ops only, as bytes.
  if (type == MPI_BYTE) {
    if (*r == ReduceOp::kBand || *r == ReduceOp::kBor || *r == ReduceOp::kBxor)
      return Reduction{DataType::kU8, *r, info->bytes};
    return std::nullopt;
  }
  if (!info->reduce_as) return std::nullopt;
  if (integer_only && !info->integer) return std::nullopt;
  if (info->lanes != 1 && *r != ReduceOp::kSum) return std::nullopt;  // complex: Sum only
  return Reduction{*info->reduce_as, *r, info->lanes};
}

}  // namespace ruccl::mpi_layer
