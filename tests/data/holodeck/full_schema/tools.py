"""The agent's function tool, as HoloDeck loads it (file + function)."""


def lookup_order(order_id: int, verbose: bool = False, note: str = "") -> dict:
    """Look up an order.

    Args:
        order_id: The order's number.
        verbose: Whether to include the history.
        note: A note for the warehouse.
    """
    return {"order_id": order_id, "status": "shipped", "price": 19.99}
