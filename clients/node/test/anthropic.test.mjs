// The official @anthropic-ai/sdk against spillway's Anthropic Messages
// dialect (the SDK sends anthropic-version 2026-10-21 and the key as
// Authorization: Bearer), through the patterns users write: echoing
// msg.content, the tool runner, the stream and parse helpers, and the SDK's
// error classes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { betaZodTool } from '@anthropic-ai/sdk/helpers/beta/zod';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { z } from 'zod';
import {
  ANTHROPIC_BASE, KEY, BROKE_KEY, M, TIMEOUT_MS, skip,
  assertMockText, oversizedPrompt, WEATHER_SCHEMA, weatherFor, healthNote,
  DEPLOYMENT, IDEM_AWAY_ONCE, mockCalls, statusFetch, idemAwayOnceKey,
} from '../lib/helpers.mjs';

function client(opts = {}) {
  return new Anthropic({ apiKey: KEY, baseURL: ANTHROPIC_BASE, maxRetries: 0, timeout: TIMEOUT_MS, ...opts });
}

// recordingFetch wraps fetch and logs each request's parsed body, the
// headers the caller cares about and the answer's status.
function recordingFetch(log) {
  return async (url, init = {}) => {
    const res = await fetch(url, init);
    let body = null;
    try {
      body = typeof init.body === 'string' ? JSON.parse(init.body) : null;
    } catch {
      body = init.body;
    }
    const h = new Headers(init.headers);
    log.push({ url: String(url), body, status: res.status, beta: h.get('anthropic-beta'), version: h.get('anthropic-version') });
    return res;
  };
}

const MODELS = [M.anthropic, M.openai, M.gemini];

const weatherTool = { name: 'get_weather', description: 'Current weather in a city', input_schema: WEATHER_SCHEMA };

const City = z.object({ city: z.string(), country: z.string(), population: z.number() });

function textOf(msg) {
  return msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

async function rejectsWith(fn, cls) {
  let err;
  try {
    await fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected ${cls.name}, nothing was thrown`);
  assert.ok(err instanceof cls, `expected ${cls.name}, got ${err?.constructor?.name}: ${err?.message}`);
  return err;
}

describe('anthropic messages', { skip }, () => {
  for (const model of MODELS) {
    it(`messages.create on ${model}`, async () => {
      const log = [];
      const msg = await client({ fetch: recordingFetch(log) }).messages.create({
        model,
        max_tokens: 256,
        messages: [{ role: 'user', content: 'Say hello.' }],
      });
      assert.equal(log[0].version, '2026-10-21');
      assert.equal(msg.type, 'message');
      assert.equal(msg.role, 'assistant');
      assert.equal(msg.stop_reason, 'end_turn');
      assert.equal(msg.content[0].type, 'text');
      assertMockText(textOf(msg), model);
      assert.ok(msg.usage.input_tokens > 0);
      assert.ok(msg.usage.output_tokens > 0);
    });

    it(`messages.create stream:true on ${model}`, async () => {
      const stream = await client().messages.create({
        model,
        max_tokens: 256,
        messages: [{ role: 'user', content: 'Say hello.' }],
        stream: true,
      });
      const types = [];
      let text = '';
      let stop = null;
      let outputTokens = 0;
      for await (const ev of stream) {
        types.push(ev.type);
        if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
        if (ev.type === 'message_delta') {
          stop = ev.delta.stop_reason;
          outputTokens = ev.usage.output_tokens;
        }
      }
      assert.equal(types[0], 'message_start');
      assert.equal(types.at(-1), 'message_stop');
      assert.equal(stop, 'end_turn');
      assert.ok(outputTokens > 0);
      assertMockText(text, model);
    });

    it(`multi-turn by pushing {role:'assistant', content: msg.content} on ${model}`, async () => {
      const an = client();
      const messages = [{ role: 'user', content: 'Hello.' }];
      const first = await an.messages.create({ model, max_tokens: 256, messages });
      // Text blocks as returned, citations:null and all.
      messages.push({ role: 'assistant', content: first.content });
      messages.push({ role: 'user', content: 'And again.' });
      const second = await an.messages.create({ model, max_tokens: 256, messages });
      assertMockText(textOf(second), model);
      assert.ok(second.usage.input_tokens > first.usage.input_tokens);
    });

    it(`tool loop by hand on ${model}`, async () => {
      const an = client();
      const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
      const first = await an.messages.create({ model, max_tokens: 256, messages, tools: [weatherTool] });
      assert.equal(first.stop_reason, 'tool_use');
      const uses = first.content.filter((b) => b.type === 'tool_use');
      assert.ok(uses.length >= 1, `no tool_use in ${JSON.stringify(first.content)}`);
      // The assistant turn exactly as returned (tool_use with caller:{type:'direct'}).
      messages.push({ role: 'assistant', content: first.content });
      messages.push({
        role: 'user',
        content: uses.map((u) => {
          assert.equal(u.name, 'get_weather');
          assert.equal(typeof u.input, 'object');
          return { type: 'tool_result', tool_use_id: u.id, content: weatherFor(u.input) };
        }),
      });
      const second = await an.messages.create({ model, max_tokens: 256, messages, tools: [weatherTool] });
      assert.equal(second.stop_reason, 'end_turn');
      assertMockText(textOf(second), model);
    });
  }

  it('returned blocks have the 2026-10-21 shape (text citations:null, tool_use caller)', async () => {
    const an = client();
    const text = await an.messages.create({ model: M.anthropic, max_tokens: 64, messages: [{ role: 'user', content: 'Hello.' }] });
    assert.ok('citations' in text.content[0], `text block: ${JSON.stringify(text.content[0])}`);
    assert.equal(text.content[0].citations, null);
    const tool = await an.messages.create({
      model: M.anthropic, max_tokens: 64, tools: [weatherTool], messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    const use = tool.content.find((b) => b.type === 'tool_use');
    assert.deepEqual(use.caller, { type: 'direct' }, `tool_use block: ${JSON.stringify(use)}`);
  });

  it('a history replayed from the Anthropic API (citations:null, caller direct) is accepted', async () => {
    // A conversation persisted from api.anthropic.com and continued through
    // the gateway carries the fields the API returns; echo them as the SDK would.
    const an = client();
    const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const first = await an.messages.create({ model: M.anthropic, max_tokens: 256, messages, tools: [weatherTool] });
    const asFromAPI = first.content.map((b) => (b.type === 'tool_use'
      ? { caller: { type: 'direct' }, ...b }
      : b.type === 'text' ? { citations: null, ...b } : b));
    messages.push({ role: 'assistant', content: [{ type: 'text', text: 'Let me check.', citations: null }, ...asFromAPI] });
    const use = asFromAPI.find((b) => b.type === 'tool_use');
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: weatherFor(use.input) }] });
    for (const model of [M.anthropic, M.openai]) {
      const next = await an.messages.create({ model, max_tokens: 256, messages, tools: [weatherTool] });
      assertMockText(textOf(next), model);
    }
  });

  it('beta toolRunner with betaZodTool: thread refused, falls back, runs until done', async () => {
    const log = [];
    const calls = [];
    const getWeather = betaZodTool({
      name: 'get_weather',
      description: 'Current weather in a city',
      inputSchema: z.object({ city: z.string() }),
      run: (input) => {
        calls.push(input);
        return weatherFor(input);
      },
    });
    const final = await client({ fetch: recordingFetch(log) }).beta.messages.toolRunner({
      model: M.anthropic,
      max_tokens: 256,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [getWeather],
    }).runUntilDone();
    assert.equal(calls.length, 1);
    assert.equal(final.stop_reason, 'end_turn');
    assert.equal(final.content.at(-1).type, 'text');
    assertMockText(textOf(final), M.anthropic);
    // The runner asked for a message thread first; the stateless gateway
    // refused it in the way the SDK falls back from.
    assert.ok(log[0].body.thread, `first request: ${JSON.stringify(log[0].body)}`);
    assert.equal(log[0].status, 400);
    assert.ok(log.slice(1).every((r) => r.status === 200 && r.body.thread === undefined),
      `requests after the fallback: ${JSON.stringify(log.map((r) => [r.status, r.body.thread]))}`);
  });

  it('beta toolRunner with betaTool (JSON schema) on conf-openai', async () => {
    const calls = [];
    const getWeather = betaTool({
      name: 'get_weather',
      description: 'Current weather in a city',
      inputSchema: WEATHER_SCHEMA,
      run: (input) => {
        calls.push(input);
        return weatherFor(input);
      },
    });
    const final = await client().beta.messages.toolRunner({
      model: M.openai,
      max_tokens: 256,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [getWeather],
    }).runUntilDone();
    assert.equal(calls.length, 1);
    assert.equal(final.content.at(-1).type, 'text');
    assertMockText(textOf(final), M.openai);
  });

  for (const model of [M.anthropic, M.openai]) {
    it(`messages.stream helper: 'text' events and finalMessage on ${model}`, async () => {
      let deltas = '';
      const stream = client().messages.stream({
        model,
        max_tokens: 256,
        messages: [{ role: 'user', content: 'Say hello.' }],
      });
      stream.on('text', (delta) => { deltas += delta; });
      const final = await stream.finalMessage();
      assert.equal(final.stop_reason, 'end_turn');
      assertMockText(textOf(final), model);
      assert.equal(deltas, textOf(final));
      assert.ok(final.usage.input_tokens > 0);
      assert.ok(final.usage.output_tokens > 0);
    });
  }

  for (const model of [M.anthropic, M.openai, M.gemini]) {
    it(`messages.parse with zodOutputFormat on ${model}`, async () => {
      const msg = await client().messages.parse({
        model,
        max_tokens: 512,
        messages: [{ role: 'user', content: 'Describe Paris.' }],
        output_config: { format: zodOutputFormat(City) },
      });
      const p = msg.parsed_output;
      assert.ok(p && typeof p === 'object', `parsed_output is ${JSON.stringify(p)}; text ${JSON.stringify(textOf(msg))}`);
      assert.equal(typeof p.city, 'string');
      assert.equal(typeof p.country, 'string');
      assert.equal(typeof p.population, 'number');
    });
  }

  it('messages.countTokens', async () => {
    const r = await client().messages.countTokens({ model: M.anthropic, messages: [{ role: 'user', content: 'Hello.' }] });
    assert.ok(r.input_tokens > 0);
  });

  for (const thinking of [{ type: 'enabled', budget_tokens: 1024 }, { type: 'adaptive' }]) {
    it(`extended thinking ${JSON.stringify(thinking)}`, async () => {
      const msg = await client().messages.create({
        model: M.anthropic,
        max_tokens: 4096,
        thinking,
        messages: [{ role: 'user', content: 'Think, then say hello.' }],
      });
      const types = msg.content.map((b) => b.type);
      assert.equal(types[0], 'thinking', `content types: ${types}`);
      assert.equal(types.at(-1), 'text');
      assert.equal(typeof msg.content[0].signature, 'string');
      assert.ok(msg.usage.output_tokens_details?.thinking_tokens > 0, JSON.stringify(msg.usage));
    });
  }

  for (const model of [M.anthropic, M.gemini]) {
    it(`extended thinking with a tool call between turns, streamed, on ${model}`, async () => {
      const params = {
        model,
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        tools: [{ name: 'get_weather', description: 'Weather for a city', input_schema: WEATHER_SCHEMA }],
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
      };
      const first = await client().messages.stream(params).finalMessage();
      assert.equal(first.content[0].type, 'thinking', JSON.stringify(first.content));
      assert.ok(first.content[0].thinking.length > 0 && first.content[0].signature.length > 0);
      const use = first.content.find((b) => b.type === 'tool_use');
      assert.ok(use, 'no tool_use block');
      // The pattern users write: the whole content back, signatures and all.
      params.messages.push({ role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: weatherFor(use.input) }] });
      const second = await client().messages.create(params);
      assert.equal(second.content[0].type, 'thinking');
      assert.equal(second.content.at(-1).type, 'text');
    });
  }
});

describe('anthropic models', { skip }, () => {
  it('models.list (Anthropic shape)', async () => {
    const ids = [];
    for await (const m of client().models.list()) {
      assert.equal(m.type, 'model');
      assert.equal(typeof m.display_name, 'string');
      assert.equal(typeof m.created_at, 'string');
      ids.push(m.id);
    }
    assert.ok(ids.includes(M.anthropic), `models: ${ids.join(', ')}`);
  });

  it('models.retrieve(conf-anthropic)', async () => {
    const m = await client().models.retrieve(M.anthropic);
    assert.equal(m.type, 'model');
    assert.equal(m.id, M.anthropic);
  });
});

describe('anthropic errors', { skip }, () => {
  const hello = [{ role: 'user', content: 'Hello.' }];

  it('unknown model: NotFoundError', async () => {
    const err = await rejectsWith(
      () => client().messages.create({ model: 'no-such-model', max_tokens: 64, messages: hello }), Anthropic.NotFoundError);
    assert.equal(err.status, 404);
    assert.equal(err.type, 'not_found_error');
    assert.equal(err.error?.error?.code, 'model_not_found');
  });

  it('bad key: AuthenticationError', async () => {
    const err = await rejectsWith(
      () => client({ apiKey: 'sk-spw-nope' }).messages.create({ model: M.anthropic, max_tokens: 64, messages: hello }),
      Anthropic.AuthenticationError);
    assert.equal(err.status, 401);
    assert.equal(err.type, 'authentication_error');
  });

  it('spent budget: RateLimitError key_budget_exceeded', async () => {
    const err = await rejectsWith(
      () => client({ apiKey: BROKE_KEY }).messages.create({ model: M.anthropic, max_tokens: 64, messages: hello }),
      Anthropic.RateLimitError);
    assert.equal(err.status, 429);
    assert.equal(err.type, 'rate_limit_error');
    // The gateway's stable reason rides beside Anthropic's type.
    assert.equal(err.error?.error?.code, 'key_budget_exceeded', `body: ${JSON.stringify(err.error)}`);
  });

  it('body over the limit: 413', async () => {
    const err = await rejectsWith(
      () => client().messages.create({ model: M.anthropic, max_tokens: 64, messages: [{ role: 'user', content: oversizedPrompt() }] }),
      Anthropic.APIError);
    assert.equal(err.status, 413);
    assert.equal(err.type, 'request_too_large');
    assert.equal(err.error?.error?.code, 'request_too_large');
  });

  it('conf-interrupt streamed: iteration throws stream_interrupted', async () => {
    const stream = await client().messages.create({ model: M.interrupt, max_tokens: 256, messages: hello, stream: true });
    const types = [];
    let text = '';
    const err = await rejectsWith(async () => {
      for await (const ev of stream) {
        types.push(ev.type);
        if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
      }
    }, Anthropic.APIError);
    assert.equal(err.type, 'stream_interrupted', `error: ${err.message}${await healthNote('broken')}`);
    assert.ok(!types.includes('message_stop'), `a broken stream must not finish: ${types}`);
    assert.ok(!types.includes('message_delta'), `no stop reason for a broken stream: ${types}`);
    assert.ok(text.length > 0, 'the content sent before the cut is delivered');
  });

  it('conf-failover succeeds and x-spillway-trail shows the hop', async () => {
    const { data, response } = await client().messages
      .create({ model: M.failover, max_tokens: 64, messages: hello })
      .withResponse();
    assertMockText(textOf(data), M.failover);
    const trail = response.headers.get('x-spillway-trail') ?? '';
    assert.ok(trail.includes('flaky=provider_unavailable'),
      `x-spillway-trail: ${JSON.stringify(trail)}${await healthNote('flaky')}`);
  });
});

// A gateway of several replicas shares Idempotency-Keys through its shared
// store. When that store cannot check a key, the gateway answers 503
// idempotency_unavailable with Retry-After: 1 and runs nothing; the SDK
// retries it on its own, and the caller gets one answer from one provider call.
describe('anthropic idempotency', { skip: skip || (IDEM_AWAY_ONCE === '' && 'SPILLWAY_IDEM_AWAY_ONCE not set') }, () => {
  it('messages.create with an Idempotency-Key retries idempotency_unavailable on its own', async () => {
    const log = [];
    // maxRetries left at the SDK's default, as users leave it.
    const c = new Anthropic({ apiKey: KEY, baseURL: ANTHROPIC_BASE, timeout: TIMEOUT_MS, fetch: statusFetch(log) });
    const headers = { 'Idempotency-Key': idemAwayOnceKey('anthropic-messages') };
    const params = { model: M.anthropic, max_tokens: 64, messages: [{ role: 'user', content: 'Say hello.' }] };
    const deployment = DEPLOYMENT[M.anthropic];
    const before = await mockCalls(deployment);

    const first = await c.messages.create(params, { headers });
    assert.equal(first.content[0].type, 'text');
    assertMockText(first.content[0].text, M.anthropic);
    assert.deepEqual(log.map((x) => x.status), [503, 200], `answers the SDK got: ${JSON.stringify(log)}`);
    assert.equal(log[0].code, 'idempotency_unavailable');
    assert.equal(log[0].retryAfter, '1');
    assert.equal(log[0].shouldRetry, null, 'the refusal must leave X-Should-Retry unset');
    assert.equal(await mockCalls(deployment) - before, 1, 'provider calls');

    // The key was decided once: sending the request again replays that answer.
    const { data: again, response } = await c.messages.create(params, { headers }).withResponse();
    assert.equal(response.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.id, first.id);
    assert.equal(again.content[0].text, first.content[0].text);
    assert.equal(await mockCalls(deployment) - before, 1, 'provider calls after the replay');
  });
});
