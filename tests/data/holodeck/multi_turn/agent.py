"""Answers from a table; looks orders up and refunds them with recorded tool calls."""

ANSWERS = {
    "Capital of France, please?": "Lyon",
    "Capital of France": "Paris.",
    "Capital of England": "london",
}


def agent(request):
    if request.input.startswith("look up order"):
        request.record_tool_call("lookup_order", {"order_id": 42}, {"status": "shipped"})
        return "shipped"
    if request.input.startswith("refund"):
        request.record_tool_call(
            "refund", {"order_id": 42, "amount": 19.990, "reason": "damaged  item"}, "ok"
        )
        return "refunded"
    return ANSWERS.get(request.input, "you're welcome")
