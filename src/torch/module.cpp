// The Python module ruccl_torch._ruccl_torch: one function that makes the
// process group; python/ruccl_torch registers it as torch.distributed's
// backend "ruccl". Torch's own bindings (torch._C) know c10d::Store and
// c10d::ProcessGroup, so the store comes in and the group goes out as the
// objects torch.distributed uses.
#include <pybind11/chrono.h>
#include <torch/python.h>

#include <pybind11/stl.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "process_group.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_ruccl_torch, m) {
  m.doc() = "ruccl as a torch.distributed backend (import ruccl_torch)";
  m.def(
      "create_process_group",
      [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, double timeout_s,
         std::size_t max_chunk_bytes, const c10::intrusive_ptr<c10d::ProcessGroup>& parent,
         std::vector<std::int64_t> global_ranks) {
        ruccl::torch_backend::BackendOptions options;
        options.timeout = std::chrono::milliseconds(
            static_cast<std::chrono::milliseconds::rep>(timeout_s * 1000.0));
        options.max_chunk_bytes = max_chunk_bytes;
        options.parent = parent;
        options.global_ranks = std::move(global_ranks);
        return ruccl::torch_backend::create_process_group(store, rank, size, options);
      },
      py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout_s"),
      py::arg("max_chunk_bytes") = 0, py::arg("parent") = nullptr,
      py::arg("global_ranks") = std::vector<std::int64_t>{},
      // Creation waits for every process: other Python threads run meanwhile.
      py::call_guard<py::gil_scoped_release>(),
      "Collective over the group's processes: a c10d ProcessGroup over a ruccl world "
      "communicator that meets through `store` (a subgroup of `parent`, ruccl's default group, "
      "shares its transports). RuntimeError with ruccl's message on failure.");
  m.def("shares_transports", &ruccl::torch_backend::shares_transports, py::arg("group"),
        "Whether a ruccl process group shares another group's transports (a new_group of "
        "ruccl's default group).");
}
