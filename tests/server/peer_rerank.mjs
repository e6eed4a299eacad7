#!/usr/bin/env node
// llama.cpp's rerank scores (the reference for tests/server/rerank_http_test.cpp), through
// node-llama-cpp's ranking context (the peer kit's prebuilt llama.cpp, rank pooling as the GGUF
// says). Each pair is built as llama-server builds it: the model's tokenizer.chat_template.rerank
// with {query} then {document} replaced, tokenized with special tokens and no BOS.
//
// usage: node peer_rerank.mjs KIT_DIR MODEL.gguf INPUT.json [on|off]
//   INPUT: {"query": "...", "documents": ["..."]}; on|off: flash attention (default: llama.cpp's choice)
// Prints {"scores": [...], "tokens": [...]}: the relevance score and token count of each pair.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [kit, modelPath, inputPath, fa] = process.argv.slice(2);
if (!kit || !modelPath || !inputPath) {
    console.error("usage: peer_rerank.mjs KIT_DIR MODEL.gguf INPUT.json");
    process.exit(2);
}
const {loadLlama, die} = await import(pathToFileURL(path.join(kit, "node", "lib.mjs")).href);
if (fa !== undefined && fa !== "on" && fa !== "off") die(`flash attention must be on or off, got ${fa}`);
if (!fs.existsSync(modelPath)) die(`model file not found: ${modelPath}`);
const {query, documents} = JSON.parse(fs.readFileSync(inputPath, "utf8"));
const llama = await loadLlama({threads: 2});
const model = await llama.loadModel({modelPath, gpuLayers: 0, useMmap: true,
                                     ...(fa ? {defaultContextFlashAttention: fa === "on"} : {})});
const template = model.fileInfo.metadata?.tokenizer?.["chat_template.rerank"];
if (typeof template !== "string") die(`${modelPath} has no tokenizer.chat_template.rerank`);
const pairs = documents.map((d) => model.tokenize(template.replaceAll("{query}", query).replaceAll("{document}", d), true));
const longest = Math.max(...pairs.map((p) => p.length));
const ctx = await model.createRankingContext({contextSize: longest + 16, batchSize: longest + 16,
                                             threads: {ideal: 2, min: 2}});
const scores = [];
// The ranking context's per-input evaluation (node-llama-cpp 3.22.1): its public rank() tokenizes
// the template's pieces apart, which is not how llama-server tokenizes the pair.
for (const ids of pairs) scores.push(await ctx._evaluateRankingForInput(ids));
console.log(JSON.stringify({scores, tokens: pairs.map((p) => p.length)}));
await ctx.dispose();
await model.dispose();
