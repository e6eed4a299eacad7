#!/usr/bin/env node
// llama.cpp's embeddings (the reference for the embedding tests), through node-llama-cpp's
// embedding context (the peer kit's prebuilt llama.cpp, pooling as the GGUF says): the kit's
// llamacpp-embed with flash attention chosen, so a test can measure llama.cpp's own on/off spread.
//
// usage: node peer_embed.mjs KIT_DIR MODEL.gguf TEXTS.json [on|off]
//   TEXTS: a JSON array of strings; on|off: flash attention (default: llama.cpp's choice)
// Prints {"embeddings": [[...], ...]}: llama.cpp's raw pooled vector of each text.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [kit, modelPath, inputPath, fa] = process.argv.slice(2);
if (!kit || !modelPath || !inputPath) {
    console.error("usage: peer_embed.mjs KIT_DIR MODEL.gguf TEXTS.json [on|off]");
    process.exit(2);
}
const {loadLlama, die} = await import(pathToFileURL(path.join(kit, "node", "lib.mjs")).href);
if (fa !== undefined && fa !== "on" && fa !== "off") die(`flash attention must be on or off, got ${fa}`);
if (!fs.existsSync(modelPath)) die(`model file not found: ${modelPath}`);
const texts = JSON.parse(fs.readFileSync(inputPath, "utf8"));
if (!Array.isArray(texts) || texts.length === 0 || !texts.every((s) => typeof s === "string")) {
    die("TEXTS.json must hold a non-empty JSON array of strings");
}
const llama = await loadLlama({threads: 2});
const model = await llama.loadModel({modelPath, gpuLayers: 0, useMmap: true,
                                     ...(fa ? {defaultContextFlashAttention: fa === "on"} : {})});
const longest = Math.max(...texts.map((t) => model.tokenize(t).length));
const ctx = await model.createEmbeddingContext({contextSize: longest + 16, batchSize: longest + 16,
                                               threads: {ideal: 2, min: 2}});
const embeddings = [];
for (const t of texts) embeddings.push(Array.from((await ctx.getEmbeddingFor(t)).vector));
console.log(JSON.stringify({embeddings}));
await ctx.dispose();
await model.dispose();
