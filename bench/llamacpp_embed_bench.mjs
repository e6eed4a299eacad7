#!/usr/bin/env node
// llama.cpp's embedding throughput through node-llama-cpp (the peer kit's llamacpp-embed path):
// loads MODEL once, embeds one text as a warm-up, then REPS times every text of TEXTS.json, one
// sequence per llama_decode as node-llama-cpp's LlamaEmbeddingContext does. Prints one JSON line:
// {"tool", "tokens", "tok_s_all": [...], "ms_all": [...]} (model load excluded).
// --rank QUERY: a reranker instead (node-llama-cpp's LlamaRankingContext): each text is a document
// scored against QUERY, the pair built as llama-server builds it (the model's rerank template filled
// in, tokenized with special tokens), one pair per llama_decode.
//
// usage: node llamacpp_embed_bench.mjs KIT_DIR MODEL.gguf TEXTS.json [--threads 2] [--reps 3] [--rank QUERY]
// KIT_DIR is ../shared/peers (its node/lib.mjs finds the installed node-llama-cpp).
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [kit, modelPath, textsPath, ...rest] = process.argv.slice(2);
if (!kit || !modelPath || !textsPath) {
    console.error("usage: llamacpp_embed_bench.mjs KIT_DIR MODEL.gguf TEXTS.json [--threads T] [--reps R] [--rank QUERY]");
    process.exit(2);
}
const opt = (name, dflt) => {
    const i = rest.indexOf(name);
    return i >= 0 && i + 1 < rest.length ? Number(rest[i + 1]) : dflt;
};
const threads = opt("--threads", 2), reps = opt("--reps", 3);
const rankAt = rest.indexOf("--rank");
const query = rankAt >= 0 ? rest[rankAt + 1] : null;
const {loadLlama, loadModel} = await import(pathToFileURL(path.join(kit, "node", "lib.mjs")).href);
const texts = JSON.parse(fs.readFileSync(textsPath, "utf8"));
const llama = await loadLlama({threads});
const model = await loadModel(llama, modelPath);
let ctx, run, tokens = 0;
if (query !== null) {
    const template = model.fileInfo.metadata?.tokenizer?.["chat_template.rerank"];
    const pairs = texts.map((t) => model.tokenize(template.replaceAll("{query}", query).replaceAll("{document}", t), true));
    const longest = Math.max(...pairs.map((p) => p.length));
    ctx = await model.createRankingContext({contextSize: longest + 16, batchSize: longest + 16,
                                           threads: {ideal: threads, min: threads}});
    for (const p of pairs) tokens += p.length;
    run = (i) => ctx._evaluateRankingForInput(pairs[i]);  // as tests/server/peer_rerank.mjs
} else {
    const longest = Math.max(...texts.map((t) => model.tokenize(t).length)) + 2;
    ctx = await model.createEmbeddingContext({contextSize: longest + 16, batchSize: longest + 16,
                                             threads: {ideal: threads, min: threads}});
    for (const t of texts) tokens += ctx.calculateInputLength(t);
    run = (i) => ctx.getEmbeddingFor(texts[i]);
}
await run(0);  // warm-up: pages the weights in
const tokS = [], msAll = [];
for (let r = 0; r < reps; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < texts.length; i++) await run(i);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    msAll.push(+ms.toFixed(1));
    tokS.push(+(tokens / (ms / 1000)).toFixed(1));
}
console.log(JSON.stringify({tool: query !== null ? "llamacpp-rank-bench" : "llamacpp-embed-bench", threads, reps,
                            inputs: texts.length, tokens, tok_s_all: tokS, ms_all: msAll}));
await ctx.dispose();
await model.dispose();
