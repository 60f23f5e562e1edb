"""A deterministic, tool-using weather agent: the bundled agent under test.

It needs no model and no network, so `proctor run examples/weather/weather.evalset.json`
works anywhere. It understands current weather, tomorrow's forecast and umbrella advice,
remembers the city across turns, reports its tool calls, and has one deliberate gap:
it ignores requests for Fahrenheit (the suite's failing case).
"""

from __future__ import annotations

import re

from proctor.agents import AgentRequest, AgentResponse

CURRENT = {
    "Tokyo": (22, "clear skies"),
    "Paris": (17, "light clouds"),
    "London": (14, "drizzle"),
    "Berlin": (16, "sunshine"),
    "New York": (25, "humid sunshine"),
}
TOMORROW = {
    "Tokyo": (24, "sunshine", 0.05),
    "Paris": (15, "rain showers", 0.8),
    "London": (13, "rain", 0.9),
    "Berlin": (18, "clear skies", 0.1),
    "New York": (27, "thunderstorms", 0.7),
}


def get_weather(city: str) -> dict[str, object]:
    temperature, conditions = CURRENT[city]
    return {"city": city, "temperature_c": temperature, "conditions": conditions}


def get_forecast(city: str, days: int) -> dict[str, object]:
    temperature, conditions, rain = TOMORROW[city]
    return {"city": city, "days": days, "temperature_c": temperature, "conditions": conditions, "rain": rain}


def _cities(text: str) -> list[str]:
    found = [(text.find(city), city) for city in CURRENT if city.lower() in text.lower()]
    return [city for _, city in sorted(found)]


def _last_city(request: AgentRequest) -> str | None:
    for message in reversed(request.history):
        cities = _cities(message["content"])
        if cities:
            return cities[-1]
    return None


def weather_agent(request: AgentRequest) -> AgentResponse:
    text = request.input
    cities = _cities(text) or ([c] if (c := _last_city(request)) else [])
    words = len(text.split())
    request.record_usage(prompt_tokens=words * 4 + 60, completion_tokens=0)
    if re.search(r"\b(hello|hi|who are you)\b", text, re.IGNORECASE) and not cities:
        answer = "I am a weather assistant. Ask me about the weather or tomorrow's forecast in a city."
    elif not cities:
        answer = "Which city do you mean? I know Tokyo, Paris, London, Berlin and New York."
    elif re.search(r"umbrella|rain", text, re.IGNORECASE):
        forecast = get_forecast(cities[0], days=1)
        request.record_tool_call("get_forecast", {"city": cities[0], "days": 1}, forecast)
        advice = (
            "yes you should bring an umbrella"
            if forecast["rain"] >= 0.5
            else "no you will not need an umbrella"
        )
        answer = f"Based on the forecast, {advice}."
    elif re.search(r"tomorrow|forecast", text, re.IGNORECASE):
        forecast = get_forecast(cities[0], days=1)
        request.record_tool_call("get_forecast", {"city": cities[0], "days": 1}, forecast)
        answer = f"Tomorrow in {cities[0]} expect {forecast['conditions']} and {forecast['temperature_c']}°C."
    else:
        parts = []
        for city in cities:
            weather = get_weather(city)
            request.record_tool_call("get_weather", {"city": city}, weather)
            parts.append(
                f"The weather in {city} is {weather['temperature_c']}°C with {weather['conditions']}."
            )
        answer = " ".join(parts)
    request.record_usage(completion_tokens=len(answer.split()) * 2)
    return AgentResponse(answer=answer)
