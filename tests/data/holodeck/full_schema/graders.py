def mentions_order(ctx):
    return {"score": 1.0 if "42" in ctx.agent_response else 0.0, "reason": "order number"}
