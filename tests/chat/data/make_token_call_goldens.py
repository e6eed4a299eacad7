#!/usr/bin/env python3
"""Writes token_call_cases.json and token_call_goldens.json (tests/chat/data): tool round trips for the
Granite 3.3 and Phi-4-mini templates, whose templates render only a message's content. Each case has two
forms: "hf", what a transformers user passes following the model's documentation (the assistant's call
written as the model writes it, Granite: <|tool_call|>[...]; Phi-4-mini: <|tool_call|>[...]<|/tool_call|>, its
tools as a JSON string in the system message's "tools" field), rendered here by the reference renderer
(shared/models/chat-templates/render_hf.py); and "openai", the same conversation as an OpenAI request, which
anelm's ChatPrompt must render to the same text.

usage: python3 tests/chat/data/make_token_call_goldens.py   (from the repository root; ../shared must exist)
"""
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
shared = os.path.normpath(os.path.join(here, "../../../../shared/models/chat-templates"))
render_hf = os.path.join(shared, "render_hf.py")

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
ADD = {"type": "function", "function": {"name": "add", "description": "Add two integers",
       "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}
TOOLS = [WEATHER, ADD]
CALLS = [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
         {"id": "call_2", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 3, \"b\": 4}"}}]


def model_text(close):
    # As the model writes it; the arguments text kept as the client sent it.
    body = ", ".join('{"name": %s, "arguments": %s}' % (json.dumps(c["function"]["name"]), c["function"]["arguments"])
                     for c in CALLS)
    return "<|tool_call|>[" + body + "]" + close


def conversation(call_content):
    return [{"role": "user", "content": "Weather in Paris and 3+4?"},
            {"role": "assistant", "content": call_content},
            {"role": "tool", "content": "{\"temperature\": 21}"},
            {"role": "tool", "content": "7"}]


def openai_messages(system=None):
    m = [] if system is None else [{"role": "system", "content": system}]
    m += conversation(None)
    m[-3] = {"role": "assistant", "content": None, "tool_calls": CALLS}
    for i, call in zip((-2, -1), CALLS):
        m[i] = dict(m[i], tool_call_id=call["id"])
    return m


def cases():
    phi_tools = json.dumps([t["function"] for t in TOOLS])  # the model card: json.dumps of the functions
    return [
        {"name": "granite_round_trip", "template": "ibm-granite-granite-3.3-2B-Instruct.jinja",
         "hf": {"messages": [{"role": "system", "content": "Be brief."}] + conversation(model_text("")), "tools": TOOLS},
         "openai": {"messages": openai_messages("Be brief."), "tools": TOOLS}},
        {"name": "phi4_tools_offered", "template": "microsoft-Phi-4-mini-instruct.jinja",
         "hf": {"messages": [{"role": "system", "content": "You are a helpful assistant with some tools.", "tools": phi_tools},
                             {"role": "user", "content": "Weather in Paris?"}]},
         "openai": {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS}},
        {"name": "phi4_round_trip", "template": "microsoft-Phi-4-mini-instruct.jinja",
         "hf": {"messages": [{"role": "system", "content": "Be brief.", "tools": phi_tools}] + conversation(model_text("<|/tool_call|>"))},
         "openai": {"messages": openai_messages("Be brief."), "tools": TOOLS}},
    ]


def main():
    out = []
    for c in cases():
        tdir = here if "Phi-4" in c["template"] else shared
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(dict(c["hf"], name=c["name"], add_generation_prompt=True), f)
        text = subprocess.run([sys.executable, render_hf, os.path.join(tdir, c["template"]), f.name],
                              check=True, capture_output=True, text=True).stdout
        os.unlink(f.name)
        out.append(dict(c, text=text))
    with open(os.path.join(here, "token_call_goldens.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
    print(f"{len(out)} renderings -> token_call_goldens.json")


if __name__ == "__main__":
    main()
