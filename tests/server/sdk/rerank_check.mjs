// Checks a running anelm server's rerank API with Cohere's official JavaScript client (the `cohere-ai`
// npm package: its v1 client posts to /v1/rerank, its v2 client to /v2/rerank) and with the bare
// request Jina-style clients send (Open WebUI's external reranker, LangChain, Dify): the clients parse
// the answer, their results equal the bare answer's (same order, same scores), top_n and
// return_documents are honoured, and a refused request surfaces as the client's 400 error.
// The scores themselves are checked against llama.cpp by tests/server/rerank_http_test.cpp.
//
// Meant for a reranker (run_all.sh serves a tiny random Qwen3 made with `make-model --pooling rank`).
// Usage: node rerank_check.mjs BASE_URL   (BASE_URL like http://127.0.0.1:8080/v1). Prints 'N passed, M failed'.
import { check, assert, eq, finish } from './harness.mjs';
import { CohereClient, CohereClientV2, CohereError } from 'cohere-ai';

const baseURL = process.argv[2];
if (!baseURL) {
  console.error('usage: node rerank_check.mjs BASE_URL');
  process.exit(2);
}
const rootURL = baseURL.replace(/\/v1\/?$/, '');
const token = process.env.ANELM_API_KEY || 'none';
const v1 = new CohereClient({ token, environment: rootURL });
const v2 = new CohereClientV2({ token, environment: rootURL });

const query = 'What do cats eat?';
const documents = [
  'Cats are obligate carnivores: they eat meat, mostly small prey.',
  'The Eiffel Tower was finished in 1889.',
  'Le chat mange des croquettes.',
  'Tea is a drink.',
];

async function bare(body) {
  const r = await fetch(`${rootURL}/v1/rerank`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  eq(r.status, 200, 'status of the bare request');
  return r.json();
}

const base = await bare({ model: 'rerank', query, documents });

function sameResults(got, want, n, what) {
  eq(got.length, n, `${what}: results`);
  for (let k = 0; k < n; k++) {
    eq(got[k].index, want[k].index, `${what}: index of result ${k}`);
    eq(got[k].relevanceScore, want[k].relevance_score, `${what}: score of result ${k}`);
  }
}

await check('the bare (Jina) request: every document once, scores in (0, 1), best first', async () => {
  eq(base.results.length, documents.length, 'results');
  eq(new Set(base.results.map((r) => r.index)).size, documents.length, 'distinct indices');
  for (let k = 0; k < base.results.length; k++) {
    const s = base.results[k].relevance_score;
    assert(s > 0 && s < 1, `score ${s}`);
    if (k > 0) assert(s <= base.results[k - 1].relevance_score, 'sorted');
  }
  assert(base.usage.prompt_tokens > 0, 'usage');
});

await check('Cohere v1 client (/v1/rerank) with topN and returnDocuments', async () => {
  const r = await v1.rerank({ query, documents, topN: 2, returnDocuments: true });
  sameResults(r.results, base.results, 2, 'v1');
  for (const x of r.results) eq(x.document.text, documents[x.index], 'returned document');
});

await check('Cohere v2 client (/v2/rerank), documents as strings', async () => {
  const r = await v2.rerank({ model: 'rerank', query, documents });
  sameResults(r.results, base.results, documents.length, 'v2');
});

await check('a refused request is the client\'s 400 error naming the field', async () => {
  try {
    await v2.rerank({ model: 'rerank', query, documents: [] });
  } catch (e) {
    assert(e instanceof CohereError, `not a CohereError: ${e}`);
    eq(e.statusCode, 400, 'status');
    eq(e.body.error.param, 'documents', 'param');
    return;
  }
  throw new Error('an empty documents list was accepted');
});

finish();
