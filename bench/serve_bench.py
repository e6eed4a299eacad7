#!/usr/bin/env python3
"""Serving benchmark: P concurrent clients against `anelm serve`, and llama.cpp doing the same work.

Usage: bench/serve_bench.py --model FILE.gguf [--anelm build/anelm] [--clients 1,2,4,8]
       [--prompt-tokens 128] [--gen-tokens 64] [--threads 2] [--port 18123] [--long-prompts 2048,8192]

Each client sends one streamed /v1/completions request at the same moment: a prompt of N token ids
(distinct per client, BOS-free, as llamacpp-bench's --parallel prompts) and max_tokens M, with the
model's end-of-generation ids banned by logit_bias -100 (llamacpp-bench ignores EOS; a random model
stopped three of four Qwen3.5 streams early without it), counting only tokens actually streamed. Reported per P: aggregate generated tok/s over the wall time of the whole round, time to first
token and the gaps between streamed tokens (p50, p99), and llama.cpp's figure for the same work from
`llamacpp-bench --parallel P` (its prefill and decode phases back to back: P*M tokens over
P*N / prefill_tok_s + P*M / decode_tok_s seconds). Then a late arrival: the time to first token of
one more request sent while four others decode, against the same request alone on an idle server.
With --long-prompts, one client's N-token prompt: time to first token, and prefill tok/s against
`llamacpp-bench --prompt-tokens N`. One JSON document on stdout.
"""
import argparse, http.client, json, os, subprocess, sys, threading, time

from benchutil import wait_healthy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("ANELM_SHARED_DIR", os.path.join(os.path.dirname(ROOT), "shared"))


def pct(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


# logit_bias banning the model's end-of-generation ids (set once by main from `anelm inspect`).
NO_EOS = {}


def eos_ids(anelm, model):
    out = subprocess.run([anelm, "inspect", "--model", model], capture_output=True, text=True, check=True).stdout
    return json.loads(out[out.index("{"):])["config"].get("eos_ids", [])


def client(port, prompt, gen, out, first=None):
    body = json.dumps({"prompt": prompt, "max_tokens": gen, "temperature": 0, "stream": True, "logit_bias": NO_EOS,
                       "stream_options": {"include_usage": True}})
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    stamps, generated = [], None
    for raw in resp:
        line = raw.decode().strip()
        if line.startswith("data: ") and line != "data: [DONE]":
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                generated = chunk["usage"]["completion_tokens"]
            if chunk.get("choices") and chunk["choices"][0].get("text") is not None:
                stamps.append(time.perf_counter())
                if first is not None:
                    first.set()
    conn.close()
    # The usage chunk counts tokens exactly (a chunk may carry several: bytes of one character wait for
    # the rest).
    out.append({"status": resp.status, "t0": t0, "stamps": stamps,
                "tokens": generated if generated is not None else len(stamps)})


def run_round(port, p, n, gen):
    results, threads = [], []
    for c in range(p):
        prompt = prompt_ids(100 * p + c, n)  # never a prefix another round left in a slot
        threads.append(threading.Thread(target=client, args=(port, prompt, gen, results)))
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    tokens = sum(r["tokens"] for r in results)
    ttft = [r["stamps"][0] - r["t0"] for r in results if r["stamps"]]
    gaps = [b - a for r in results for a, b in zip(r["stamps"], r["stamps"][1:])]
    return {"clients": p, "ok": all(r["status"] == 200 for r in results), "tokens": tokens,
            "wall_s": wall, "aggregate_tok_s": tokens / wall,
            "ttft_s_p50": pct(ttft, 0.5), "ttft_s_p99": pct(ttft, 0.99),
            "token_gap_s_p50": pct(gaps, 0.5), "token_gap_s_p99": pct(gaps, 0.99)}


def prompt_ids(seed, n):
    return [(1000 + 7919 * (seed * n + i)) % 100000 + 10 for i in range(n)]


def late_arrival(port, n, gen):
    """TTFT of a request arriving while four others decode, against the same request alone."""
    alone = []
    client(port, prompt_ids(9001, n), 4, alone)
    results, threads, decoding = [], [], []
    for c in range(4):
        decoding.append(threading.Event())
        threads.append(threading.Thread(target=client,
                                        args=(port, prompt_ids(9100 + c, n), gen * 4, results, decoding[-1])))
        threads[-1].start()
    for e in decoding:
        e.wait()
    late = []
    client(port, prompt_ids(9002, n), 4, late)
    for t in threads:
        t.join()
    t_alone = alone[0]["stamps"][0] - alone[0]["t0"]
    t_late = late[0]["stamps"][0] - late[0]["t0"]
    return {"ttft_alone_s": t_alone, "ttft_with_4_decoding_s": t_late, "ratio": t_late / t_alone}


def long_prompt(port, model, n, threads, no_peer):
    out = []
    client(port, prompt_ids(7000 + n, n), 4, out)
    ttft = out[0]["stamps"][0] - out[0]["t0"]
    r = {"prompt_tokens": n, "ttft_s": ttft, "prefill_tok_s": n / ttft}
    if not no_peer:
        cmd = [os.path.join(SHARED, "peers", "bin", "llamacpp-bench"), model, "--prompt-tokens", str(n),
               "--gen-tokens", "4", "--threads", str(threads), "--reps", "1"]
        j = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
        r["llamacpp_prefill_tok_s"] = j["prefill_tok_s"]
        r["ratio_prefill"] = r["prefill_tok_s"] / j["prefill_tok_s"]
    return r


def peer(model, p, n, gen, threads):
    cmd = [os.path.join(SHARED, "peers", "bin", "llamacpp-bench"), model, "--prompt-tokens", str(n),
           "--gen-tokens", str(gen), "--threads", str(threads), "--reps", "1", "--parallel", str(p)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    j = json.loads(out.strip().splitlines()[-1])
    seconds = p * n / j["prefill_tok_s"] + p * gen / j["decode_tok_s"]
    return {"prefill_tok_s": j["prefill_tok_s"], "decode_tok_s": j["decode_tok_s"],
            "end_to_end_tok_s": p * gen / seconds}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--anelm", default=os.path.join(ROOT, "build", "anelm"))
    ap.add_argument("--clients", default="1,2,4,8")
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--port", type=int, default=18123)
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--long-prompts", default="", help="comma-separated prompt lengths, e.g. 2048,8192")
    a = ap.parse_args()
    NO_EOS.update({str(i): -100 for i in eos_ids(a.anelm, a.model)})
    clients = [int(x) for x in a.clients.split(",")]
    longs = [int(x) for x in a.long_prompts.split(",") if x]
    ctx = max([a.prompt_tokens + 4 * a.gen_tokens] + longs) + 64  # per sequence slot
    parallel = max(clients + [5])  # the late arrival is a fifth sequence
    server = subprocess.Popen([a.anelm, "serve", "--model", a.model, "--port", str(a.port), "--threads",
                               str(a.threads), "--ctx", str(ctx), "--parallel", str(parallel),
                               "--max-queue", str(max(clients) + 1)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_healthy(a.port, 30)
        client(a.port, prompt_ids(99, a.prompt_tokens), a.gen_tokens, [])  # warm-up: weights paged in, made resident
        report = {"tool": "anelm-serve-bench", "model": os.path.basename(a.model),
                  "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "prompt_tokens": a.prompt_tokens, "gen_tokens": a.gen_tokens, "threads": a.threads,
                  "rounds": []}
        for p in clients:
            r = run_round(a.port, p, a.prompt_tokens, a.gen_tokens)
            if not a.no_peer:
                r["llamacpp"] = peer(a.model, p, a.prompt_tokens, a.gen_tokens, a.threads)
                r["ratio_end_to_end"] = r["aggregate_tok_s"] / r["llamacpp"]["end_to_end_tok_s"]
            report["rounds"].append(r)
        report["late_arrival"] = late_arrival(a.port, a.prompt_tokens, a.gen_tokens)
        report["long_prompts"] = [long_prompt(a.port, a.model, n, a.threads, a.no_peer) for n in longs]
    finally:
        server.terminate()
        server.wait()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    sys.exit(main())
