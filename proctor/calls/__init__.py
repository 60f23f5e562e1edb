"""Model calls as a budget: the provider's quota (learned from its answers and the limits a
user states), time limits that count only the call, and the cross-worker cap on calls."""
