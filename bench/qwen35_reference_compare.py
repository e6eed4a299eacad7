#!/usr/bin/python3
"""Qwen3.5: each engine's teacher-forced logits held against the peer kit's numpy reference.

Usage: /usr/bin/python3 bench/qwen35_reference_compare.py MODEL.gguf --case CASE.json [--act none|q8|f16]
       [--out OUT.json]

CASE.json is what `bench/parity_llamacpp.py --save-cases DIR` writes per (file, prompt): llama.cpp's
prompt and greedy ids and every engine's teacher-forced top-k over them (anelm, llama.cpp flash
attention on and off). The reference (../shared/peers/qwen35_reference.py: token by token, f32
weights and matmuls, f64 norms, gates, state and attention) computes the same positions, and per
engine this prints how often its top-1 is the reference's and how far its top-k logits are from the
reference's logits of the same ids. A random model's near ties part two engines' ids; this tells
which engine moved: one whose logits sit farther from the reference than the other's computes
something else. --act picks the arithmetic the reference rounds like: none (exact), q8 (llama.cpp's
Q8_0 activation quantisation before every matmul: amax / 127 with an f16 scale, x * 127 / amax
rounded to nearest even; and its F16 KV cache), f16 (llama.cpp's F16 matmuls, which round the
activations to f16; and the F16 KV cache). Needs numpy (Debian: python3-numpy). F32/F16/Q8_0 files
only (the reference reads no other type). The 0.8B shape takes ~3 GB and ~1 s per position.
"""
import argparse, json, os, sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("ANELM_SHARED_DIR", os.path.join(os.path.dirname(ROOT), "shared"))
sys.path.insert(0, os.path.join(SHARED, "peers"))
import qwen35_reference as R  # noqa: E402


def q8_act(x):
    """x as llama.cpp's quantize_row_q8_0 leaves it (AVX2 path), back in floats."""
    x = x.astype(np.float32).reshape(-1, 32)
    amax = np.abs(x).max(axis=1, keepdims=True)
    d16 = (amax / np.float32(127)).astype(np.float16).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        idv = np.where(amax > 0, np.float32(127) / amax, 0).astype(np.float32)
    q = np.rint(x * idv)
    return (q * d16).reshape(-1)


class Emu(R.Qwen35):
    """The reference with llama.cpp's roundings (--act)."""
    act = "none"

    def mm(self, name, x):
        if self.act == "q8":
            x = q8_act(x)
        elif self.act == "f16":
            x = x.astype(np.float16)
        return (self.T[name] @ x.astype(np.float32)).astype(np.float64)

    def attention(self, il, x):
        """The reference's gated attention, with K and V rounded to f16 as they enter the cache."""
        b, T, hd, nh, nkv = "blk.%d." % il, self.T, self.hd, self.n_head, self.n_head_kv
        qg = self.mm(b + "attn_q.weight", x).reshape(nh, 2 * hd)
        q, gate = qg[:, :hd].copy(), qg[:, hd:].reshape(-1)
        k = self.mm(b + "attn_k.weight", x).reshape(nkv, hd)
        v = self.mm(b + "attn_v.weight", x).reshape(nkv, hd)
        q = self.rope(R.rmsnorm(q, T[b + "attn_q_norm.weight"], self.eps))
        k = self.rope(R.rmsnorm(k, T[b + "attn_k_norm.weight"], self.eps))
        if self.act != "none":  # llama.cpp's KV cache is F16
            k, v = k.astype(np.float16).astype(np.float64), v.astype(np.float16).astype(np.float64)
        self.kcache[il].append(k)
        self.vcache[il].append(v)
        K, V = np.stack(self.kcache[il]), np.stack(self.vcache[il])
        o = np.empty((nh, hd))
        for h in range(nh):
            kvh = h // (nh // nkv)
            sc = K[:, kvh, :] @ q[h] / np.sqrt(hd)
            pr = np.exp(sc - sc.max())
            o[h] = (pr / pr.sum()) @ V[:, kvh, :]
        return self.mm(b + "attn_output.weight", o.reshape(-1) * R.sigmoid(gate))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--case", required=True, help="a parity_llamacpp.py --save-cases file")
    ap.add_argument("--act", default="none", choices=["none", "q8", "f16"])
    ap.add_argument("--out", help="also write the JSON here")
    a = ap.parse_args()
    case = json.load(open(a.case))
    p, gen = case["prompt_ids"], case["generated_ids"]
    seq = p + gen[:-1]
    m = Emu(a.model)
    m.act = a.act
    ref = []
    for i, t in enumerate(seq):
        lg = m.step(t)
        if i >= len(p) - 1:
            ref.append(lg.astype(np.float64))
    res = {"act": a.act, "steps": len(ref), "engines": {}}
    top = [int(np.argmax(r)) for r in ref]
    srt = [np.sort(r)[::-1] for r in ref]
    res["ref_margin"] = [round(float(s[0] - s[1]), 4) for s in srt]
    res["ref_top"] = top
    for name, steps in case["engines"].items():
        agree = sum(int(s[0][0] == top[i]) for i, s in enumerate(steps))
        diffs = [abs(l - ref[i][j]) for i, s in enumerate(steps) for j, l in s]
        d1 = [abs(s[0][1] - ref[i][s[0][0]]) for i, s in enumerate(steps)]
        res["engines"][name] = {"top1_agree_ref": agree, "mean_abs_diff_topk": round(float(np.mean(diffs)), 4),
                                "max_abs_diff_topk": round(float(np.max(diffs)), 4),
                                "mean_abs_diff_top1": round(float(np.mean(d1)), 4)}
    js = json.dumps(res, indent=1)
    if a.out:
        open(a.out, "w").write(js)
    print(js)


if __name__ == "__main__":
    main()
