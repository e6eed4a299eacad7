#!/usr/bin/env node
// llama.cpp's embedding throughput through node-llama-cpp (the peer kit's llamacpp-embed path):
// loads MODEL once, embeds one text as a warm-up, then REPS times every text of TEXTS.json, one
// sequence per llama_decode as node-llama-cpp's LlamaEmbeddingContext does. Prints one JSON line:
// {"tool", "tokens", "tok_s_all": [...], "ms_all": [...]} (model load excluded).
//
// usage: node llamacpp_embed_bench.mjs KIT_DIR MODEL.gguf TEXTS.json [--threads 2] [--reps 3]
// KIT_DIR is ../shared/peers (its node/lib.mjs finds the installed node-llama-cpp).
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [kit, modelPath, textsPath, ...rest] = process.argv.slice(2);
if (!kit || !modelPath || !textsPath) {
    console.error("usage: llamacpp_embed_bench.mjs KIT_DIR MODEL.gguf TEXTS.json [--threads T] [--reps R]");
    process.exit(2);
}
const opt = (name, dflt) => {
    const i = rest.indexOf(name);
    return i >= 0 && i + 1 < rest.length ? Number(rest[i + 1]) : dflt;
};
const threads = opt("--threads", 2), reps = opt("--reps", 3);
const {loadLlama, loadModel} = await import(pathToFileURL(path.join(kit, "node", "lib.mjs")).href);
const texts = JSON.parse(fs.readFileSync(textsPath, "utf8"));
const llama = await loadLlama({threads});
const model = await loadModel(llama, modelPath);
const longest = Math.max(...texts.map((t) => model.tokenize(t).length)) + 2;
const ctx = await model.createEmbeddingContext({contextSize: longest + 16, batchSize: longest + 16,
                                               threads: {ideal: threads, min: threads}});
let tokens = 0;
for (const t of texts) tokens += ctx.calculateInputLength(t);
await ctx.getEmbeddingFor(texts[0]);  // warm-up: pages the weights in
const tokS = [], msAll = [];
for (let r = 0; r < reps; r++) {
    const t0 = process.hrtime.bigint();
    for (const t of texts) await ctx.getEmbeddingFor(t);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    msAll.push(+ms.toFixed(1));
    tokS.push(+(tokens / (ms / 1000)).toFixed(1));
}
console.log(JSON.stringify({tool: "llamacpp-embed-bench", threads, reps, inputs: texts.length, tokens,
                            tok_s_all: tokS, ms_all: msAll}));
await ctx.dispose();
await model.dispose();
