#!/usr/bin/env python3
"""Soak: `anelm serve` under minutes of mixed, partly hostile traffic; does it stay up, answer
correctly and keep its memory flat?

Usage: bench/soak.py [--model FILE.gguf --chat-template FILE.jinja] [--anelm build/anelm]
       [--minutes 10] [--clients 6] [--threads 2] [--port 18131] [--seed 1] [--out soak.json]
       [--kinds chat,tools_forced,...] [--config FILE] [--serve-arg=--backend --serve-arg=ane]
       [--request-timeout 120]

Without --model: a tiny random Qwen3.5 (`anelm make-model --arch qwen35`, the real qwen35 vocabulary
from ../shared/models) served with the real Qwen3.5 template, so the recurrent state, its prompt
cache checkpoints, thinking and the XML tool-call syntax are all in play.

C client threads loop over a random mix for the given time: chat completions streamed and not
(some streams dropped by the client after a few chunks, some requests dropped while still
prefilling), forced and automatic tool calls, json_schema output, legacy completions with n = 2 and
logprobs, the Responses API (stored, continued by previous_response_id, streamed), the Anthropic
Messages API, embeddings, a shared ~400-token system prompt (prompt cache), prompts longer than the
context and malformed bodies (both must be 400), and the GET endpoints. A sampler reads the
server's VmRSS (/proc) and /health every second.

Verdict (exit 1 when it fails): the server is alive at the end and /health never failed; no
answer was a 5xx or dropped by the server; every valid request got 200 (429 when the queue is full
counts as valid back-pressure) and every invalid one its 400; the server exits 0 on SIGTERM; and
RSS after the first quarter (prompt cache and response store filling their bounds, allocator
warm-up) grows by at most --rss-slack-mib over the rest of the run (the mean of its first five
samples against its last five). One JSON document on stdout (and --out).
"""
import argparse, http.client, json, os, random, socket, subprocess, sys, tempfile, threading, time

from benchutil import emit_report, wait_healthy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("ANELM_SHARED_DIR", os.path.join(os.path.dirname(ROOT), "shared"))

WORDS = ("alpha beta gamma delta river stone cloud paper window garden engine silver orange "
         "quiet bright seven eleven north south market letter music winter summer").split()
SYSTEM = "You are a careful assistant. " + " ".join(WORDS[i % len(WORDS)] for i in range(400))
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                   "required": ["city"]}}}]
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                           "tags": {"type": "array", "items": {"type": "string"}}},
          "required": ["name", "age"]}


KINDS = ["chat", "chat_stream", "chat_drop", "prefill_drop", "tools_forced", "tools_auto", "json_schema",
         "completions_n2", "responses", "responses_stream", "messages", "messages_stream", "embeddings",
         "system_prompt", "too_long", "malformed", "gets"]


class Soak:
    def __init__(self, port, ctx, seed, timeout):
        self.port, self.ctx, self.rng_seed, self.timeout = port, ctx, seed, timeout
        self.lock = threading.Lock()
        self.counts = {}       # kind -> {status or outcome: n}
        self.failures = []     # first few unexpected outcomes, with what was sent
        self.response_ids = []
        self.kinds = KINDS

    def record(self, kind, outcome, ok, detail=None):
        with self.lock:
            self.counts.setdefault(kind, {}).setdefault(str(outcome), 0)
            self.counts[kind][str(outcome)] += 1
            if not ok and len(self.failures) < 20:
                self.failures.append({"kind": kind, "outcome": str(outcome), "detail": detail})

    def request(self, method, path, body=None, raw=None, stream=False, drop_after=None, drop_in=None):
        """(status, body text) of one request; drop_after closes a stream after that many lines,
        drop_in closes the socket that many seconds after sending (a client that gives up while its
        prompt is queued or prefilling)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        try:
            data = raw if raw is not None else (json.dumps(body) if body is not None else None)
            conn.request(method, path, data, {"Content-Type": "application/json"})
            if drop_in is not None:
                time.sleep(drop_in)
                conn.sock.shutdown(socket.SHUT_RDWR)
                return "dropped", ""
            resp = conn.getresponse()
            if stream and resp.status == 200:
                lines = 0
                for raw_line in resp:
                    lines += 1
                    if drop_after is not None and lines >= drop_after:
                        return "dropped", ""
                return resp.status, ""
            return resp.status, resp.read().decode("utf-8", "replace")
        finally:
            conn.close()

    def words(self, rng, n):
        return " ".join(rng.choice(WORDS) for _ in range(n))

    def one(self, rng, kind):
        msgs = [{"role": "user", "content": self.words(rng, rng.randint(3, 60))}]
        mt = rng.randint(1, 40)
        base = {"messages": msgs, "max_tokens": mt, "temperature": rng.choice([0, 0.7, 1.0]), "seed": rng.randint(0, 99)}
        expect = 200
        if kind == "chat":
            status, _ = self.request("POST", "/v1/chat/completions", base)
        elif kind == "chat_stream":
            status, _ = self.request("POST", "/v1/chat/completions", dict(base, stream=True, stream_options={"include_usage": True}), stream=True)
        elif kind == "chat_drop":
            status, _ = self.request("POST", "/v1/chat/completions", dict(base, stream=True, max_tokens=64), stream=True,
                                     drop_after=rng.randint(1, 6))
            expect = "dropped"
        elif kind == "prefill_drop":
            status, _ = self.request("POST", "/v1/chat/completions", dict(base, messages=[{"role": "user", "content": self.words(rng, 300)}]),
                                     drop_in=rng.uniform(0.02, 0.3))
            expect = "dropped"
        elif kind == "tools_forced":
            status, text = self.request("POST", "/v1/chat/completions", dict(base, tools=TOOLS, max_tokens=80,
                                        tool_choice={"type": "function", "function": {"name": "get_weather"}}))
            if status == 200:
                msg = json.loads(text)["choices"][0]["message"]
                calls = msg.get("tool_calls") or []
                if not calls or calls[0]["function"]["name"] != "get_weather":
                    # A forced call cut short by max_tokens has no complete call to parse.
                    if json.loads(text)["choices"][0]["finish_reason"] != "length":
                        status = "no tool call"
        elif kind == "tools_auto":
            status, _ = self.request("POST", "/v1/chat/completions", dict(base, tools=TOOLS, stream=rng.random() < 0.5),
                                     stream=True)
        elif kind == "json_schema":
            status, text = self.request("POST", "/v1/chat/completions", dict(base, max_tokens=120, temperature=0.8,
                                        response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMA}}))
            if status == 200:
                choice = json.loads(text)["choices"][0]
                if choice["finish_reason"] == "stop":
                    try:
                        json.loads(choice["message"]["content"])
                    except ValueError:
                        status = "invalid json under a schema"
        elif kind == "completions_n2":
            status, _ = self.request("POST", "/v1/completions", {"prompt": self.words(rng, 20), "max_tokens": mt, "n": 2,
                                                                 "logprobs": 2, "temperature": 0.9, "seed": rng.randint(0, 99)})
        elif kind in ("responses", "responses_stream"):
            body = {"input": self.words(rng, 20), "max_output_tokens": mt + 16, "store": True}
            with self.lock:
                prev = rng.choice(self.response_ids) if self.response_ids and rng.random() < 0.5 else None
            if prev:
                body["previous_response_id"] = prev
            if kind == "responses_stream":
                body["stream"] = True
                status, _ = self.request("POST", "/v1/responses", body, stream=True)
            else:
                status, text = self.request("POST", "/v1/responses", body)
                if status == 200:
                    with self.lock:
                        self.response_ids.append(json.loads(text)["id"])
                        del self.response_ids[:-200]
                elif status == 404 and prev:
                    expect = 404  # evicted from the bounded store: OpenAI's answer for an unknown id
        elif kind in ("messages", "messages_stream"):
            body = {"model": "m", "max_tokens": mt, "messages": msgs, "system": "Be brief."}
            if kind == "messages_stream":
                body["stream"] = True
            status, _ = self.request("POST", "/v1/messages", body, stream=body.get("stream", False))
        elif kind == "embeddings":
            status, _ = self.request("POST", "/v1/embeddings", {"input": [self.words(rng, rng.randint(1, 80)) for _ in range(rng.randint(1, 4))]})
        elif kind == "system_prompt":
            status, _ = self.request("POST", "/v1/chat/completions", dict(base, messages=[{"role": "system", "content": SYSTEM}] + msgs))
        elif kind == "too_long":
            status, _ = self.request("POST", "/v1/completions", {"prompt": self.words(rng, 2 * self.ctx), "max_tokens": 4})
            expect = 400
        elif kind == "malformed":
            status, _ = self.request("POST", rng.choice(["/v1/chat/completions", "/v1/responses", "/v1/messages"]),
                                     raw=rng.choice(['{"messages": [', '{"messages": 7}', '[]', '{"max_tokens": -3, "messages": []}']))
            expect = 400
        else:
            status, _ = self.request("GET", rng.choice(["/v1/models", "/health", "/metrics"]))
        ok = status == expect or (status == 429 and expect in (200, "dropped"))
        self.record(kind, status, ok, None if ok else {"expected": expect})

    def client(self, i, deadline):
        rng = random.Random(self.rng_seed * 1000 + i)
        while time.time() < deadline:
            kind = rng.choice(self.kinds)
            try:
                self.one(rng, kind)
            except (OSError, http.client.HTTPException) as e:  # the server dropped us, or took too long
                self.record(kind, type(e).__name__, False, str(e))
                time.sleep(0.2)


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return None


def default_model(anelm, workdir):
    """A tiny random Qwen3.5 with the real vocabulary, and the real Qwen3.5 template."""
    vocab = os.path.join(SHARED, "models", "ggml-vocab-qwen35.gguf")
    template = os.path.join(SHARED, "models", "chat-templates", "Qwen3.5-4B.jinja")
    for f in (vocab, template):
        if not os.path.exists(f):
            sys.exit(f"soak: {f} not found (set ANELM_SHARED_DIR, or pass --model and --chat-template)")
    model = os.path.join(workdir, "qwen35-tiny-q8_0.gguf")
    subprocess.run([anelm, "make-model", "--arch", "qwen35", "--shape", "tiny", "--dtype", "q8_0",
                    "--tokenizer-from", vocab, "--out", model], check=True, stdout=subprocess.DEVNULL)
    return model, template


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="")
    ap.add_argument("--anelm", default=os.path.join(ROOT, "build", "anelm"))
    ap.add_argument("--chat-template", default="")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--port", type=int, default=18131)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rss-slack-mib", type=float, default=16)
    ap.add_argument("--request-timeout", type=float, default=120,
                    help="seconds a request may take (a timeout fails the run); the ANE simulator wants more")
    ap.add_argument("--config", default="", help="a server config file (anelm serve --config)")
    ap.add_argument("--serve-arg", action="append", default=[], help="one more `anelm serve` argument (repeatable)")
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated request kinds to mix")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    workdir = tempfile.TemporaryDirectory()
    if not a.model:
        a.model, template = default_model(a.anelm, workdir.name)
        a.chat_template = a.chat_template or template
    cmd = [a.anelm, "serve", "--model", a.model, "--port", str(a.port), "--threads", str(a.threads), "--ctx", str(a.ctx),
           "--parallel", "4", "--max-queue", "4", "--cache-ram", "32", "--embeddings", "--no-webui", "--log-level", "warn"]
    if a.chat_template:
        cmd += ["--chat-template", a.chat_template]
    if a.config:
        cmd += ["--config", a.config]
    cmd += a.serve_arg
    err_file = tempfile.TemporaryFile(mode="w+")
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err_file)
    soak = Soak(a.port, a.ctx, a.seed, a.request_timeout)
    soak.kinds = a.kinds.split(",")
    samples, health_failures = [], []
    try:
        wait_healthy(a.port)
        start = time.time()
        deadline = start + 60 * a.minutes
        clients = [threading.Thread(target=soak.client, args=(i, deadline)) for i in range(a.clients)]
        for c in clients:
            c.start()
        while time.time() < deadline:
            t = time.time() - start
            try:
                status, text = soak.request("GET", "/health")
                h = json.loads(text) if status == 200 else {}
            except (OSError, http.client.HTTPException, ValueError) as e:
                status, h = type(e).__name__, {}
            if status != 200:
                health_failures.append({"t": round(t, 1), "status": str(status)})
            cache, store = h.get("prompt_cache", {}), h.get("response_store", {})
            samples.append({"t": round(t, 1), "rss_mib": round(rss_mib(server.pid), 1),
                            "cache_bytes": cache.get("bytes"), "cache_entries": cache.get("entries"),
                            "store_bytes": store.get("bytes"), "store_entries": store.get("entries")})
            time.sleep(1)
        for c in clients:
            c.join()
        alive = server.poll() is None and soak.request("GET", "/health")[0] == 200
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        err_file.seek(0)
        err = err_file.read()
    settled = [s["rss_mib"] for s in samples if s["t"] >= 15 * a.minutes]  # after the first quarter
    k = min(5, len(settled) // 2)
    growth = sum(settled[-k:]) / k - sum(settled[:k]) / k if k else None
    report = {"tool": "anelm-soak", "model": os.path.basename(a.model),
              "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "minutes": a.minutes,
              "clients": a.clients, "requests": sum(sum(v.values()) for v in soak.counts.values()),
              "by_kind": soak.counts, "failures": soak.failures, "health_failures": health_failures[:20],
              "alive_at_end": alive, "exit_code": server.returncode,
              "rss_mib": {"first": samples[0]["rss_mib"] if samples else None,
                          "after_first_quarter": settled[0] if settled else None,
                          "end": samples[-1]["rss_mib"] if samples else None,
                          "max": max((s["rss_mib"] for s in samples), default=None),
                          "growth_after_first_quarter": growth},
              "samples": samples[::10], "server_stderr_tail": err.splitlines()[-10:]}
    report["pass"] = (alive and server.returncode == 0 and not health_failures and not soak.failures
                      and growth is not None and growth <= a.rss_slack_mib)
    emit_report(report, a.out)
    return 0 if report["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
