"""Suite loaders: every supported format into the pipeline's one `Case` shape."""

from proctor.loaders.errors import Problem, SuiteError
from proctor.loaders.suite import load_suite, slug

__all__ = ["Problem", "SuiteError", "load_suite", "slug"]
