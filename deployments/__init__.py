"""Deployments of Proctor's flows, for `prefect deploy` (prefect.yaml) or `serve`."""
