"""Prefect's Dask task runner for `--dask-address`: case chunks spread over a cluster."""

from __future__ import annotations

from typing import Any


def dask_task_runner(address: str) -> Any:
    """Prefect's Dask task runner: a local cluster of worker processes, or an existing one."""
    from prefect_dask import DaskTaskRunner

    if address == "local" or address.startswith("local:"):
        from prefect.client.orchestration import get_client

        workers = int(address.partition(":")[2] or 2)
        # The workers report their task runs to this flow's API, even a temporary one.
        api_url = str(get_client().api_url)
        return DaskTaskRunner(
            cluster_class="distributed.LocalCluster",
            cluster_kwargs={
                "n_workers": workers,
                "threads_per_worker": 1,
                "processes": True,
                "dashboard_address": None,
                "env": {"PREFECT_API_URL": api_url},
            },
        )
    return DaskTaskRunner(address=address)
