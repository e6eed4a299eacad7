#!/usr/bin/env python3
"""Records llama.cpp's outputs on random tiny models of one family made by `anelm make-model`, as the
fixture tests/engine/<arch>_llamacpp_test.cpp holds anelm against (granite_tiny_llamacpp.json,
smollm3_tiny_llamacpp.json, phi3_tiny_llamacpp.json, gemma3_tiny_llamacpp.json: its 64-position
sliding window is crossed by the 'mid' and 'long' prompts; gpt2_tiny_llamacpp.json: its 'long' prompt is
440 tokens, as the tiny file has 512 learned positions). Needs the peer kit (shared/peers/bin) and a
built anelm.

  python3 tests/data/engine/make_family_llamacpp_fixture.py --arch granite --anelm build/anelm \\
      --peers ../shared/peers/bin --out tests/data/engine/granite_tiny_llamacpp.json

For each type (f32, f16, q8_0) and prompt: llamacpp-generate's greedy ids (--n 32, 2 threads, flash
attention auto). Teacher-forced over prompt + generated[:-1] (llamacpp-logits --top 2 --fa on): the top
id, its logit and its lead over the second, for every type (f32: the logit values check the logit
scale, which greedy ids cannot see); for f16 (llama.cpp rounds the activations of an f16 matmul to
f16) and q8_0 also how many of those top ids llama.cpp itself keeps with --fa off (fa_off_agrees:
its own noise floor).

llamacpp_ctx: the context llama.cpp ran each prompt with (the peer drivers ask for prompt + generated
+ 16 tokens and llama.cpp rounds n_ctx up to a multiple of 256): it decides Phi-3's LongRoPE factors
(long when it exceeds phi3.rope.scaling.original_context_length, 512 in the tiny file: the 'long'
prompt runs with the long factors, the others with the short)."""
import argparse
import json
import os
import subprocess
import tempfile

SEED = 7
N = 32
PROMPTS = {
    "short": [1, 20, 300, 45, 100, 7, 88, 412],
    "mid": [(i * 37 + 5) % 512 for i in range(1, 61)],
    "long": {"count": 700, "mul": 7919, "add": 13, "mod": 512},
}


# GPT-2's tiny file has learned positions for 512 tokens only: prompt + 32 generated must fit.
PROMPTS_BY_ARCH = {"gpt2": dict(PROMPTS, long={"count": 440, "mul": 7919, "add": 13, "mod": 512})}


def ids_of(p):
    if isinstance(p, list):
        return p
    return [(i * p["mul"] + p["add"]) % p["mod"] for i in range(1, p["count"] + 1)]


def llamacpp_ctx(n_tokens):
    """llama.cpp's n_ctx (n_ctx_seq with one sequence) for a driver asking for n_tokens + 16."""
    return (n_tokens + 16 + 255) // 256 * 256


def run_json(cmd, whole=False):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out if whole else out.strip().splitlines()[-1])


def teacher_forced(peers, model, prompt, gen, fa):
    seq = prompt + gen[:-1]
    res = run_json([os.path.join(peers, "llamacpp-logits"), model, "--ids", " ".join(map(str, seq)),
                    "--top", "2", "--threads", "2", "--fa", fa], whole=True)
    positions = {p["pos"]: p for p in res["positions"]}
    top, logit, margin = [], [], []
    for i in range(len(gen)):
        t = positions[len(prompt) - 1 + i]["top"]
        top.append(t[0]["id"])
        logit.append(t[0]["logit"])
        margin.append(round(t[0]["logit"] - t[1]["logit"], 6))
    return {"tf_top": top, "top_logit": logit, "margin": margin}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", required=True, choices=["granite", "smollm3", "phi3", "gemma3", "gpt2"])
    ap.add_argument("--anelm", default="build/anelm")
    ap.add_argument("--peers", default="../shared/peers/bin")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=SEED, help="weight seed (the gemma3 fixture: 13, whose f32 paths have wider near ties than 7)")
    a = ap.parse_args()
    prompts = PROMPTS_BY_ARCH.get(a.arch, PROMPTS)
    fx = {
        "_comment": f"llama.cpp v0.5.0 (shared/peers) on `anelm make-model --arch {a.arch} --shape tiny --dtype "
                    f"{{f32,f16,q8_0}} --seed {a.seed}` (synthetic 512-token vocab): llamacpp-generate --prompt-ids ... "
                    f"--n {N} --threads 2 (greedy, flash attention auto). Made by "
                    f"`python3 tests/data/engine/make_family_llamacpp_fixture.py --arch {a.arch} --seed {a.seed} --out <this file>`. "
                    "The 'long' prompt is ids (i*mul+add) % mod for i in 1..count.",
        "seed": a.seed,
        "prompts": prompts,
        "llamacpp_ctx": {},
        "generated": {},
        "teacher_forced_note": "llamacpp-logits --top 2 --fa on over prompt + generated[:-1]: llama.cpp's top id, its "
                               "logit and its lead over the second at each generated position; fa_off_agrees (f16, q8_0): "
                               "at how many of those positions llama.cpp with --fa off has the same top id",
        "teacher_forced_f32": {},
        "teacher_forced_f16": {},
        "teacher_forced_q8_0": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for t in ["f32", "f16", "q8_0"]:
            model = os.path.join(tmp, f"{a.arch}-{t}.gguf")
            subprocess.run([a.anelm, "make-model", "--arch", a.arch, "--shape", "tiny", "--dtype", t,
                            "--seed", str(a.seed), "--out", model], check=True, capture_output=True)
            fx["generated"][t] = {}
            for name, p in prompts.items():
                prompt = ids_of(p)
                res = run_json([os.path.join(a.peers, "llamacpp-generate"), model, "--prompt-ids",
                                " ".join(map(str, prompt)), "--n", str(N), "--threads", "2"])
                gen = res["generated_ids"]
                fx["generated"][t][name] = gen
                # llamacpp-generate asks for prompt + N, llamacpp-logits for prompt + generated - 1:
                # one context for both when they round to the same multiple of 256.
                ctx = llamacpp_ctx(len(prompt) + N)
                assert ctx == llamacpp_ctx(len(prompt) + len(gen) - 1), name
                fx["llamacpp_ctx"][name] = ctx
                tf = teacher_forced(a.peers, model, prompt, gen, "on")
                if t != "f32":
                    off = teacher_forced(a.peers, model, prompt, gen, "off")
                    tf["fa_off_agrees"] = sum(x == y for x, y in zip(tf["tf_top"], off["tf_top"]))
                fx[f"teacher_forced_{t}"][name] = tf
    with open(a.out, "w") as f:
        json.dump(fx, f)
        f.write("\n")


if __name__ == "__main__":
    main()
