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

export function deepEq(a, b, what) {
  eq(JSON.stringify(a), JSON.stringify(b), what);
}

// The weather tool's parameters, shared by the tool checks of every API.
export const WEATHER = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 12 },
    unit: { type: 'string', enum: ['c', 'f'] },
    days: { type: 'integer', minimum: 1, maximum: 7 },
  },
  required: ['city', 'unit', 'days'],
  additionalProperties: false,
};

// WEATHER's constraints, checked here independently of the grammar that enforces them.
export function validWeather(v, what) {
  assert(v && typeof v === 'object' && !Array.isArray(v), `${what}: not an object: ${JSON.stringify(v)}`);
  deepEq(Object.keys(v).sort(), ['city', 'days', 'unit'], `${what} keys`);
  assert(typeof v.city === 'string' && [...v.city].length <= 12, `${what}.city ${JSON.stringify(v.city)}`);
  assert(['c', 'f'].includes(v.unit), `${what}.unit ${JSON.stringify(v.unit)}`);
  assert(Number.isInteger(v.days) && v.days >= 1 && v.days <= 7, `${what}.days ${v.days}`);
  return v;
}

export function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}
