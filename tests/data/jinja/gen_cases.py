# Writes extra_cases.json (the new conversations of tests/jinja/jinja_extra_goldens_test.cpp).
import json
W = {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city",
     "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}
NESTED = {"type": "function", "function": {"name": "book_trip",
          "parameters": {"type": "object", "properties": {
              "legs": {"type": "array", "items": {"type": "object", "properties": {
                  "from": {"type": "string"}, "to": {"type": "string"}, "date": {"type": "string", "format": "date"}},
                  "required": ["from", "to"]}},
              "class": {"type": "string", "enum": ["economy", "business", "first"]},
              "passengers": {"type": "integer", "minimum": 1, "maximum": 9},
              "flexible": {"type": "boolean"},
              "budget": {"type": ["number", "null"]}},
              "required": ["legs"]}}}
NOARGS = {"type": "function", "function": {"name": "now", "description": "Current time, no args",
          "parameters": {"type": "object", "properties": {}}}}
cases = [
 {"name": "x_null_content_tool_calls", "tools": [W], "messages": [
   {"role": "user", "content": "Weather in Rome and Oslo?"},
   {"role": "assistant", "content": None, "tool_calls": [
     {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome", "unit": "celsius"}}},
     {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
   {"role": "tool", "tool_call_id": "call_a", "name": "get_weather", "content": "{\"temp\": 24}"},
   {"role": "tool", "tool_call_id": "call_b", "name": "get_weather", "content": "{\"temp\": -3}"},
   {"role": "assistant", "content": "Rome 24, Oslo -3."},
   {"role": "user", "content": "Thanks"}]},
 {"name": "x_string_arguments", "tools": [W], "messages": [
   {"role": "user", "content": "Paris?"},
   {"role": "assistant", "content": "Checking.", "tool_calls": [
     {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}}]},
   {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21\u00b0C"}]},
 {"name": "x_content_parts", "messages": [
   {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
   {"role": "user", "content": [{"type": "text", "text": "First part."}, {"type": "text", "text": "Second part."}]},
   {"role": "assistant", "content": [{"type": "text", "text": "Ok."}]},
   {"role": "user", "content": [{"type": "text", "text": "Again"}]}]},
 {"name": "x_two_systems", "messages": [
   {"role": "system", "content": "Rule one."}, {"role": "system", "content": "Rule two."},
   {"role": "user", "content": "Go"}]},
 {"name": "x_special_chars", "messages": [
   {"role": "system", "content": "Quote \"this\" and 'that' \\ back\\slash \\n literal"},
   {"role": "user", "content": "<b>bold</b> & <i>it</i> {{ not a tag }} {% nor this %} \u00e9\u00e8 \u2603 \U0001F600\U0001F44D\U0001F3FD\ttab\r\nCRLF\u0000nul"},
   {"role": "assistant", "content": "  leading and trailing spaces  \n\n"},
   {"role": "user", "content": "\u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u4e2d\u6587 \u0420\u0443\u0441\u0441\u043a\u0438\u0439"}]},
 {"name": "x_long_content", "messages": [
   {"role": "user", "content": ("Lorem ipsum dolor sit amet, \u00e9t\u00e9 " * 120) + "end."}]},
 {"name": "x_reasoning_content", "extra": {"enable_thinking": True}, "messages": [
   {"role": "user", "content": "Is 91 prime?"},
   {"role": "assistant", "reasoning_content": "91 = 7 * 13.", "content": "No, 91 = 7 \u00d7 13."},
   {"role": "user", "content": "And 97?"}]},
 {"name": "x_reasoning_tool_turn", "tools": [W], "extra": {"enable_thinking": False}, "messages": [
   {"role": "user", "content": "Weather in Lima?"},
   {"role": "assistant", "reasoning_content": "Need the tool.", "content": "", "tool_calls": [
     {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Lima"}}}]},
   {"role": "tool", "content": "cloudy"},
   {"role": "assistant", "reasoning_content": "Report it.", "content": "Cloudy in Lima."},
   {"role": "user", "content": "Ok"}]},
 {"name": "x_nested_tools", "tools": [NESTED, NOARGS, W], "messages": [
   {"role": "system", "content": "You book trips."},
   {"role": "user", "content": "Book Paris to Rome on 2024-08-01, business, 2 people."}]},
 {"name": "x_empty_messages", "messages": []},
 {"name": "x_named_messages", "messages": [
   {"role": "system", "content": "Group chat.", "name": "moderator"},
   {"role": "user", "content": "Hi all", "name": "alice"},
   {"role": "assistant", "content": "Hello Alice."},
   {"role": "user", "content": "And me", "name": "bob"}]},
 {"name": "x_no_gen_prompt_after_user", "add_generation_prompt": False, "extra": {"enable_thinking": True},
  "now": "2025-02-28T23:59:59", "messages": [
   {"role": "system", "content": "Today matters."}, {"role": "user", "content": "What day is it?"}]},
 {"name": "x_tool_numbers", "tools": [W, {"type": "function", "function": {"name": "add", "description": "Add",
     "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}}],
  "messages": [
   {"role": "user", "content": "1.5 + 2e-7?"},
   {"role": "assistant", "content": "", "tool_calls": [
     {"id": "c9", "type": "function", "function": {"name": "add", "arguments": {"a": 1.5, "b": 2e-07, "exact": True, "note": None, "tags": ["x", 3, 1e20]}}}]},
   {"role": "tool", "tool_call_id": "c9", "name": "add", "content": "1.5000002"},
   {"role": "assistant", "content": "About 1.5000002."}]},
]
json.dump(cases, open("extra_cases.json", "w", encoding="utf-8"), ensure_ascii=False, indent=1)
print(len(cases), "cases")
