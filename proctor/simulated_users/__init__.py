"""Simulated users that talk to the agent under test: an LLM toward stated goals, and
Google ADK's `conversation_scenario` user simulator."""
