"""Suite loaders: every supported format into the pipeline's one `Case` shape."""

from proctor.loaders.discover import discover, load_suites
from proctor.loaders.errors import Problem, SuiteError
from proctor.loaders.suite import load_suite, slug

__all__ = ["Problem", "SuiteError", "discover", "load_suite", "load_suites", "slug"]
