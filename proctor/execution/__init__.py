"""A case on its way through HoloDeck's execution state machine: cut into chunks, run
through the stages (files, agent, metrics) with the live objects a run's stages share, and
scored as a whole or turn by turn."""
