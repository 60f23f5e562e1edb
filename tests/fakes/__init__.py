"""In-process fakes of external services, spoken to over their real wire protocols."""

from tests.fakes.openai_server import FakeOpenAI, Fault, judged, prompt_of

__all__ = ["FakeOpenAI", "Fault", "judged", "prompt_of"]
