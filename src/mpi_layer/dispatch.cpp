// The decision of every intercepted collective (dispatch.hpp): the layer's
// switches, then the call's own arguments, then the communicator's Route.
#include "mpi_layer/dispatch.hpp"

namespace ruccl::mpi_layer {

Routed routed(Coll c, MPI_Comm comm, Why local) {
  Registry& reg = Registry::get();
  Why why = reg.blocked();
  if (why == Why::kRouted && !reg.enabled(c)) why = Why::kNotChosen;
  if (why == Why::kRouted && comm == MPI_COMM_NULL) why = Why::kArgument;
  if (why == Why::kRouted) why = local;
  Route* r = nullptr;
  if (why == Why::kRouted) {
    r = reg.route(comm);
    why = r->failed;
  }
  reg.count(c, why);
  return why == Why::kRouted ? Routed(r, reg.thread_multiple()) : Routed();
}

Why reduction_check(MPI_Datatype type, MPI_Op op, std::optional<Reduction>& out) {
  out = reduction_of(type, op);
  if (out) return Why::kRouted;
  return type_info(type) ? Why::kOp : Why::kDatatype;
}

int run_status(Coll c, MPI_Comm comm, const Status& s, Routed& r) {
  r.release();  // the error handler runs without the Route's lock
  return s.is_ok() ? MPI_SUCCESS : Registry::get().fail(comm, c, s);
}

}  // namespace ruccl::mpi_layer
