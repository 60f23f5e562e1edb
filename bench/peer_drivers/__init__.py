"""One module per framework for `bench/peers.py` (and `bench/quota.py`): each writes its copy of
the workload (`write_files`), knows how to run it (a `Framework` with `command` and
`in_process`) and how to find the framework installed (`find`). `common` holds what they share;
`example` is Proctor's bundled example as a user runs it."""
