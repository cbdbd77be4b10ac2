"""What a Dask worker keeps between notebook tasks: one Jupyter kernel.

:class:`KernelPlugin` is registered on every worker of the cluster a batch runs on
(:func:`demonoise.report.run.run_jobs`); the kernel itself is started by the worker's first
notebook task and kept in :mod:`demonoise.report.run`'s per-process state, reset between
notebooks. When the worker closes, the plugin ends the kernel; if the worker dies
without closing (killed), the kernel notices its parent is gone and exits (ipykernel's
parent poller).
"""

from __future__ import annotations

from distributed import WorkerPlugin

__all__ = ["KernelPlugin"]


class KernelPlugin(WorkerPlugin):
    """Ends the worker's kept kernel when the worker closes."""

    def teardown(self, worker) -> None:
        from demonoise.report.run import kill_worker_kernel

        kill_worker_kernel()
