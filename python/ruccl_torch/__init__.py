"""ruccl as a torch.distributed backend.

``import ruccl_torch`` registers the backend "ruccl"; then
``torch.distributed.init_process_group("ruccl")`` (env:// under torchrun, or
any init_method) and ``torch.distributed.new_group(ranks, backend="ruccl")``
make process groups whose collectives run on ruccl. CPU tensors; see
src/torch/README.md for the ops, dtypes and settings.
"""
import torch  # noqa: F401  (loads libtorch before the extension)
import torch.distributed as dist

from . import _ruccl_torch

__all__ = ["Options"]


class Options:
    """The backend's pg_options (init_process_group / new_group).

    max_chunk_bytes: the byte budget of all_to_all (alltoall_base) messages;
    0 takes ruccl's max_chunk_bytes (RUCCL_MAX_CHUNK_BYTES, else 4 MiB).
    """

    def __init__(self, max_chunk_bytes=0):
        if int(max_chunk_bytes) < 0:
            raise ValueError("max_chunk_bytes must be >= 0")
        self.max_chunk_bytes = int(max_chunk_bytes)


def _create(backend_options, pg_options):
    budget = pg_options.max_chunk_bytes if isinstance(pg_options, Options) else 0
    if pg_options is not None and not isinstance(pg_options, Options):
        raise TypeError("the ruccl backend takes ruccl_torch.Options as pg_options")
    return _ruccl_torch.create_process_group(
        backend_options.store,
        backend_options.group_rank,
        backend_options.group_size,
        backend_options.timeout.total_seconds(),
        budget,
    )


if "RUCCL" not in dist.Backend._plugins:
    dist.Backend.register_backend("ruccl", _create, extended_api=True)
