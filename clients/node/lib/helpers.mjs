// Shared setup for the Node client conformance suite. The Go test
// TestNodeClients (internal/server/conformance_node_test.go) starts a
// gateway in front of mock providers and runs `node --test test/` here with
// the environment read below.
import assert from 'node:assert/strict';

export const GATEWAY = process.env.SPILLWAY_URL ?? '';
export const KEY = process.env.SPILLWAY_KEY ?? '';
export const BROKE_KEY = process.env.SPILLWAY_BROKE_KEY ?? '';
export const ADMIN_KEY = process.env.SPILLWAY_ADMIN_KEY ?? '';
export const MAX_BODY_BYTES = Number(process.env.SPILLWAY_MAX_BODY_BYTES ?? 262144);
// The mock providers' base URLs by deployment id (JSON), for their call counts.
export const MOCKS = JSON.parse(process.env.SPILLWAY_MOCKS || '{}');
// Idempotency-Keys starting with this prefix find the gateway's shared
// idempotency store away on their first claim: 503 idempotency_unavailable.
export const IDEM_AWAY_ONCE = process.env.SPILLWAY_IDEM_AWAY_ONCE ?? '';

// OpenAI SDKs take the /v1 prefix in their base URL; Anthropic's add it.
export const OPENAI_BASE = `${GATEWAY}/v1`;
export const ANTHROPIC_BASE = GATEWAY;

// skip is passed to every top-level describe: without a gateway there is
// nothing to talk to (run it through `go test ./internal/server -run TestNodeClients`).
export const skip = GATEWAY === '' || KEY === ''
  ? 'SPILLWAY_URL/SPILLWAY_KEY not set: run through go test ./internal/server -run TestNodeClients'
  : false;

// Public model names of the conformance gateway (conformance_harness_test.go).
export const M = {
  openai: 'conf-openai',
  anthropic: 'conf-anthropic',
  bedrock: 'conf-bedrock',
  gemini: 'conf-gemini',
  failover: 'conf-failover',
  interrupt: 'conf-interrupt',
  embed: 'conf-embed',
  embedGemini: 'conf-embed-gemini',
};

// The deployment behind each healthy model: mock answers begin "mock <deployment> ".
export const DEPLOYMENT = {
  'conf-openai': 'openai',
  'conf-anthropic': 'anthropic',
  'conf-bedrock': 'bedrock',
  'conf-gemini': 'gemini',
  'conf-failover': 'anthropic',
};

export const TIMEOUT_MS = 15_000;

// assertMockText checks that text is a mock answer from the deployment
// serving model.
export function assertMockText(text, model) {
  assert.equal(typeof text, 'string', `expected text, got ${JSON.stringify(text)}`);
  const want = `mock ${DEPLOYMENT[model]} `;
  assert.ok(text.startsWith(want), `expected text starting ${JSON.stringify(want)}, got ${JSON.stringify(text)}`);
}

// oversizedPrompt is a user message that makes the request body larger than
// the gateway's limit.
export function oversizedPrompt() {
  return 'x'.repeat(MAX_BODY_BYTES + 1024);
}

// The tool every tool test declares. The mocks call it with {"city":"Paris"}.
export const WEATHER_SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string', description: 'City name' } },
  required: ['city'],
  additionalProperties: false,
};

export function weatherFor(args) {
  const a = typeof args === 'string' ? JSON.parse(args) : args;
  assert.equal(typeof a, 'object', `tool arguments are not an object: ${JSON.stringify(args)}`);
  assert.ok(a !== null);
  return JSON.stringify({ city: a.city ?? 'unknown', forecast: 'sunny', celsius: 21 });
}

// drain consumes an async iterable, returning its items.
export async function drain(iterable) {
  const out = [];
  for await (const x of iterable) out.push(x);
  return out;
}

// healthNote describes a deployment's health as the admin API reports it,
// for assertion messages (an open circuit explains a 503 or a missing hop).
export async function healthNote(deployment) {
  try {
    const res = await fetch(`${GATEWAY}/v1/admin/health`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    const body = await res.json();
    const d = body.deployments?.find((x) => x.deployment === deployment);
    return d ? `\n(health of ${deployment}: ${JSON.stringify({ state: d.state, reason: d.reason, attempts: d.attempts, failures: d.failures })})` : '';
  } catch {
    return '';
  }
}

// mockCalls returns how many requests the mock provider behind deployment has
// served (its GET /_mock/stats).
export async function mockCalls(deployment) {
  const base = MOCKS[deployment];
  assert.ok(base, `no mock URL for ${deployment} in SPILLWAY_MOCKS`);
  const res = await fetch(`${base}/_mock/stats`);
  assert.equal(res.status, 200, `GET ${base}/_mock/stats`);
  return (await res.json()).requests;
}

// statusFetch wraps fetch and logs each answer's status, Retry-After,
// X-Should-Retry, Idempotent-Replayed and error code, so a case can see what
// the SDK got before it retried.
export function statusFetch(log) {
  return async (url, init) => {
    const res = await fetch(url, init);
    let code = null;
    if (res.status >= 400) {
      try {
        const b = await res.clone().json();
        code = b?.error?.code ?? b?.error?.type ?? null;
      } catch {
        code = null;
      }
    }
    log.push({
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      shouldRetry: res.headers.get('x-should-retry'),
      replayed: res.headers.get('idempotent-replayed'),
      code,
    });
    return res;
  };
}

// idemAwayOnceKey is a fresh Idempotency-Key whose first claim the gateway
// cannot check (cases skip when SPILLWAY_IDEM_AWAY_ONCE is unset).
export function idemAwayOnceKey(name) {
  return `${IDEM_AWAY_ONCE}${name}-${process.pid}-${Date.now()}`;
}
