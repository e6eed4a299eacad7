#!/usr/bin/env python3
"""Embedding throughput: `anelm serve` /v1/embeddings against llama.cpp on the same GGUF and texts.

Usage: bench/bench_embeddings.py [--model FILE.gguf | --shape qwen3-0.6b --dtype q8_0] [--anelm build/anelm]
       [--inputs 32] [--words 96] [--threads 2] [--rounds 3] [--reps 3] [--port 18131] [--pooling rank]

--pooling rank measures a reranker instead (a Qwen3-Reranker-shaped GGUF): the texts are documents
scored against one query, on /v1/rerank against node-llama-cpp's ranking context (the same pairs).

Without --model, writes a random Qwen3-Embedding-0.6B-shaped GGUF (`anelm make-model --arch qwen3
--shape qwen3-0.6b --pooling last`, the real Qwen2.5 tokenizer); `--arch bert --shape bge-small
--pooling cls` a BERT one (bge-small-en-v1.5's shape; `--arch nomic-bert --shape nomic-embed-text-v1.5
--pooling mean` nomic-embed-text's) with the real BGE vocabulary (llama.cpp's
models/ggml-vocab-bert-bge.gguf, extracted from the peer kit's source bundle). Texts: --inputs deterministic
English-like texts of --words words each. Rounds are interleaved (llama.cpp, anelm, llama.cpp, ...):
- llama.cpp: bench/llamacpp_embed_bench.mjs (node-llama-cpp, prebuilt llama.cpp of the peer kit): every
  text embedded in turn, one sequence per llama_decode, as the kit's llamacpp-embed; model load and a
  warm-up excluded; tokens/s = the texts' tokens / wall time, median of --reps;
- anelm: one already running `anelm serve` process; every text in ONE /v1/embeddings request (the
  engine packs the inputs into 512-row forward passes); tokens/s = usage.prompt_tokens / wall time of
  the request (HTTP and tokenizing included), median of --reps after one warm-up request.
Prints one JSON document: per round both figures and their ratio, the median ratio, the CPU.
"""
import argparse, http.client, json, os, shutil, socket, statistics, subprocess, sys, tempfile, time

from benchutil import wait_healthy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("ANELM_SHARED_DIR", os.path.join(os.path.dirname(ROOT), "shared"))
KIT = os.path.join(SHARED, "peers")
WORDS = ("river stone lantern quietly harbor seven garden orbit copper meadow whisper engine violet thunder "
         "ledger maple station window silver morning question answer forest signal").split()


def texts(n, words):
    out = []
    for i in range(n):
        w = [WORDS[(i * 31 + k * 7 + k // 5) % len(WORDS)] for k in range(words)]
        out.append(f"Document {i}: " + " ".join(w) + ".")
    return out


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    flags = open("/proc/cpuinfo").read()
                    isa = "avx512" if " avx512f" in flags else "avx2" if " avx2" in flags else "other"
                    return f"{line.split(':', 1)[1].strip()} ({isa}, {os.cpu_count()} cpus)"
    except OSError:
        pass
    return "unknown"


def post(port, path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        raise RuntimeError(f"{path}: {r.status} {data[:300]!r}")
    return json.loads(data)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


QUERY = "Which document mentions a harbor at morning?"


def anelm_request(inputs, rank):
    return ("/v1/rerank", {"query": QUERY, "documents": inputs}) if rank else ("/v1/embeddings", {"input": inputs})


def anelm_round(port, inputs, reps, rank):
    tok_s = []
    for _ in range(reps):
        t0 = time.perf_counter()
        j = post(port, *anelm_request(inputs, rank))
        dt = time.perf_counter() - t0
        tok_s.append(j["usage"]["prompt_tokens"] / dt)
    return j["usage"]["prompt_tokens"], tok_s


def peer_round(model, texts_file, threads, reps, rank):
    out = subprocess.run(["node", os.path.join(ROOT, "bench", "llamacpp_embed_bench.mjs"), KIT, model, texts_file,
                          "--threads", str(threads), "--reps", str(reps)] + (["--rank", QUERY] if rank else []),
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--anelm", default=os.path.join(ROOT, "build", "anelm"))
    ap.add_argument("--model")
    ap.add_argument("--shape", default="qwen3-0.6b")
    ap.add_argument("--arch", default="qwen3")
    ap.add_argument("--dtype", default="q8_0")
    ap.add_argument("--pooling", default="last")
    ap.add_argument("--inputs", type=int, default=32)
    ap.add_argument("--words", type=int, default=96)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    rank = a.pooling == "rank"

    if subprocess.run([os.path.join(KIT, "install.sh"), "--check"], capture_output=True).returncode != 0:
        subprocess.run([os.path.join(KIT, "install.sh")], check=True, stdout=sys.stderr)
    tmp = tempfile.mkdtemp(prefix="bench-embed-")
    model = a.model
    if not model:
        model = os.path.join(tmp, f"{a.arch}-{a.shape}-embed-{a.pooling}-{a.dtype}.gguf")
        tokenizer = os.path.join(SHARED, "models", "qwen2.5-0.5b-instruct")
        if a.arch in ("bert", "nomic-bert"):
            vocab = "ggml-vocab-bert-bge.gguf"
            subprocess.run(["bash", os.path.join(ROOT, "tests", "tokenizer", "llama_vocab_files.sh"), tmp, vocab], check=True)
            tokenizer = os.path.join(tmp, vocab)
        subprocess.run([a.anelm, "make-model", "--arch", a.arch, "--shape", a.shape, "--dtype", a.dtype,
                        "--pooling", a.pooling, "--tokenizer-from", tokenizer, "--out", model],
                       check=True, stdout=subprocess.DEVNULL)
    inputs = texts(a.inputs, a.words)
    texts_file = os.path.join(tmp, "texts.json")
    with open(texts_file, "w") as f:
        json.dump(inputs, f)

    port = a.port or free_port()
    server = subprocess.Popen([a.anelm, "serve", "--model", model, "--port", str(port), "--threads", str(a.threads),
                               "--ctx", "2048", "--parallel", "1", "--embeddings"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rounds = []
    try:
        wait_healthy(port, 120)
        post(port, *anelm_request(inputs, rank))  # warm-up (weights resident, pages touched)
        for r in range(a.rounds):
            peer = peer_round(model, texts_file, a.threads, a.reps, rank)
            tokens, ours = anelm_round(port, inputs, a.reps, rank)
            p, o = statistics.median(peer["tok_s_all"]), statistics.median(ours)
            rounds.append({"round": r + 1, "llamacpp_tok_s": round(p, 1), "anelm_tok_s": round(o, 1),
                           "ratio": round(o / p, 3), "llamacpp_tok_s_all": peer["tok_s_all"],
                           "anelm_tok_s_all": [round(x, 1) for x in ours], "anelm_tokens": tokens,
                           "llamacpp_tokens": peer["tokens"]})
            print(json.dumps(rounds[-1]), file=sys.stderr)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)  # the made model is ~600 MB
    ratios = [r["ratio"] for r in rounds]
    print(json.dumps({"bench": "rerank" if rank else "embeddings", "cpu": cpu_name(), "model": model, "threads": a.threads,
                      "inputs": a.inputs, "words_per_input": a.words, "rounds": rounds,
                      "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
                      "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))


if __name__ == "__main__":
    main()
