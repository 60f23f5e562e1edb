"""HoloDeck's deterministic evaluators, expected tools and `response_path`."""
