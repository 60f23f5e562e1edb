"""Answers "3", calls lookup_order once, and fails when asked to."""


def agent(request):
    if request.input == "crash please":
        request.record_tool_call("lookup_order", {"order_id": 1}, "half done")
        raise RuntimeError("the agent fell over")
    request.record_tool_call("lookup_order", {"order_id": 1}, {"count": 3})
    return "3" if request.input == "how many?" else "about 4"
