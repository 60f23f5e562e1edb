"""The statistics of a nightly verdict: a run judged against its suite's own history."""
