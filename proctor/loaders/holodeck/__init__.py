"""HoloDeck `agent.yaml` files: test cases, metrics, tools and global configuration."""
