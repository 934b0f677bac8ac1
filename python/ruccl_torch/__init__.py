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

__all__ = ["Options", "shares_transports"]


class Options:
    """The backend's pg_options (init_process_group / new_group).

    max_chunk_bytes: the byte budget of all_to_all (alltoall_base) messages;
    0 takes ruccl's max_chunk_bytes (RUCCL_MAX_CHUNK_BYTES, else 4 MiB).
    share: a new_group of ruccl's default group shares its transports and
    worker thread (True, the default; one failure domain: a timeout or a dead
    peer in one ends both); False: the group opens a world of its own.
    """

    def __init__(self, max_chunk_bytes=0, share=True):
        if int(max_chunk_bytes) < 0:
            raise ValueError("max_chunk_bytes must be >= 0")
        self.max_chunk_bytes = int(max_chunk_bytes)
        self.share = bool(share)


def _default_ruccl_group():
    """The default process group when it is ruccl's, else None."""
    try:
        group = dist.distributed_c10d._get_default_group()
    except RuntimeError:  # not initialised: this is the default group
        return None
    return group if dist.get_backend(group) == "ruccl" else None


def _create(backend_options, pg_options):
    if pg_options is not None and not isinstance(pg_options, Options):
        raise TypeError("the ruccl backend takes ruccl_torch.Options as pg_options")
    options = pg_options if pg_options is not None else Options()
    ranks = list(getattr(backend_options, "global_ranks_in_group", None) or [])
    parent = _default_ruccl_group() if options.share and ranks else None
    return _ruccl_torch.create_process_group(
        backend_options.store,
        backend_options.group_rank,
        backend_options.group_size,
        backend_options.timeout.total_seconds(),
        options.max_chunk_bytes,
        parent,
        ranks if parent is not None else [],
    )


def shares_transports(group):
    """Whether a ruccl process group shares the default group's transports."""
    return _ruccl_torch.shares_transports(group)


if "RUCCL" not in dist.Backend._plugins:
    dist.Backend.register_backend("ruccl", _create, extended_api=True)
