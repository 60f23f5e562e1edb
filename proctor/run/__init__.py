"""A run from start to finish: prepared, cut into chunks, orchestrated (by Prefect, Dask or
plainly in this process), stopped, closed, compared and reported."""
