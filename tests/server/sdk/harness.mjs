// The small harness the SDK check scripts share: named checks, assertions, and the summary line
// ('N passed, M failed') with the exit code run.sh reads.
let passed = 0;
let failed = 0;

export async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}

export function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

export function eq(a, b, what) {
  assert(a === b, `${what}: ${JSON.stringify(a)} !== ${JSON.stringify(b)}`);
}

export function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}
