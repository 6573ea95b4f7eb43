// The official openai package (npm "openai") against spillway, through the
// patterns users write: echoing the returned message, runTools, the stream
// and parse helpers, the Responses API, and the SDK's error classes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import {
  OPENAI_BASE, KEY, BROKE_KEY, M, TIMEOUT_MS, skip,
  assertMockText, oversizedPrompt, WEATHER_SCHEMA, weatherFor, drain, healthNote,
  DEPLOYMENT, IDEM_AWAY_ONCE, mockCalls, statusFetch, idemAwayOnceKey,
} from '../lib/helpers.mjs';

function client(opts = {}) {
  return new OpenAI({ apiKey: KEY, baseURL: OPENAI_BASE, maxRetries: 0, timeout: TIMEOUT_MS, ...opts });
}

const CHAT_MODELS = [M.openai, M.anthropic, M.bedrock, M.gemini];

const weatherTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'Current weather in a city', parameters: WEATHER_SCHEMA },
};

// A schema every structured-output test asks for.
const City = z.object({ city: z.string(), country: z.string(), population: z.number() });

function assertCity(parsed) {
  assert.ok(parsed && typeof parsed === 'object', `parsed is ${JSON.stringify(parsed)}`);
  assert.equal(typeof parsed.city, 'string');
  assert.equal(typeof parsed.country, 'string');
  assert.equal(typeof parsed.population, 'number');
}

// rejectsWith runs fn and asserts it throws an instance of cls, returning the error.
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

describe('openai chat.completions', { skip }, () => {
  for (const model of CHAT_MODELS) {
    it(`create on ${model}`, async () => {
      const c = await client().chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'Say hello.' }],
      });
      assert.equal(c.object, 'chat.completion');
      assert.equal(c.choices.length, 1);
      assert.equal(c.choices[0].message.role, 'assistant');
      assert.equal(c.choices[0].finish_reason, 'stop');
      assertMockText(c.choices[0].message.content, model);
      assert.ok(c.usage.prompt_tokens > 0);
      assert.ok(c.usage.completion_tokens > 0);
      assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
    });

    it(`create stream:true with include_usage on ${model}`, async () => {
      const stream = await client().chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'Say hello.' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let finish = null;
      let usage = null;
      let role = null;
      for await (const chunk of stream) {
        assert.equal(chunk.object, 'chat.completion.chunk');
        for (const ch of chunk.choices) {
          role ??= ch.delta?.role ?? null;
          text += ch.delta?.content ?? '';
          finish = ch.finish_reason ?? finish;
        }
        if (chunk.usage) usage = chunk.usage;
      }
      assert.equal(role, 'assistant');
      assert.equal(finish, 'stop');
      assertMockText(text, model);
      assert.ok(usage, 'no usage chunk');
      assert.ok(usage.prompt_tokens > 0);
      assert.ok(usage.completion_tokens > 0);
    });

    it(`multi-turn by pushing choices[0].message on ${model}`, async () => {
      const oa = client();
      const messages = [{ role: 'user', content: 'Hello.' }];
      const first = await oa.chat.completions.create({ model, messages });
      const msg = first.choices[0].message;
      assert.equal(msg.refusal, null);
      assert.deepEqual(msg.annotations, []);
      // The object as the SDK returned it: refusal:null, annotations:[] and all.
      messages.push(msg);
      messages.push({ role: 'user', content: 'And again.' });
      const second = await oa.chat.completions.create({ model, messages });
      assertMockText(second.choices[0].message.content, model);
      assert.ok(second.usage.prompt_tokens > first.usage.prompt_tokens);
    });
  }

  for (const model of [M.openai, M.anthropic, M.gemini]) {
    it(`tool loop by hand on ${model}`, async () => {
      const oa = client();
      const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
      const first = await oa.chat.completions.create({ model, messages, tools: [weatherTool] });
      const msg = first.choices[0].message;
      assert.equal(first.choices[0].finish_reason, 'tool_calls');
      assert.ok(msg.tool_calls?.length >= 1, `no tool_calls: ${JSON.stringify(msg)}`);
      messages.push(msg);
      for (const call of msg.tool_calls) {
        assert.equal(call.type, 'function');
        assert.equal(call.function.name, 'get_weather');
        assert.ok(call.id);
        messages.push({ role: 'tool', tool_call_id: call.id, content: weatherFor(call.function.arguments) });
      }
      const second = await oa.chat.completions.create({ model, messages, tools: [weatherTool] });
      assert.equal(second.choices[0].finish_reason, 'stop');
      assertMockText(second.choices[0].message.content, model);
    });
  }

  function runnableWeather(calls) {
    return {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Current weather in a city',
        parameters: WEATHER_SCHEMA,
        parse: JSON.parse,
        function: (args) => {
          calls.push(args);
          return weatherFor(args);
        },
      },
    };
  }

  it('runTools (non-streaming)', async () => {
    const calls = [];
    const runner = client().chat.completions.runTools({
      model: M.openai,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [runnableWeather(calls)],
    });
    const content = await runner.finalContent();
    assert.equal(calls.length, 1);
    assert.equal(typeof calls[0], 'object');
    assertMockText(content, M.openai);
    const all = runner.messages;
    assert.ok(all.some((m) => m.role === 'tool'), 'no tool message in the runner transcript');
  });

  it('runTools stream:true', async () => {
    const calls = [];
    let deltas = '';
    const runner = client().chat.completions.runTools({
      model: M.anthropic,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [runnableWeather(calls)],
      stream: true,
    });
    runner.on('content', (d) => { deltas += d; });
    const content = await runner.finalContent();
    assert.equal(calls.length, 1);
    assertMockText(content, M.anthropic);
    assert.equal(deltas, content);
  });

  it('chat.completions.stream helper with finalChatCompletion', async () => {
    let deltas = '';
    const stream = client().chat.completions.stream({
      model: M.openai,
      messages: [{ role: 'user', content: 'Say hello.' }],
      stream_options: { include_usage: true },
    });
    stream.on('content', (d) => { deltas += d; });
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0].finish_reason, 'stop');
    assertMockText(final.choices[0].message.content, M.openai);
    assert.equal(deltas, final.choices[0].message.content);
    assert.ok(final.usage?.completion_tokens > 0, 'no usage on the final completion');
  });

  const parseTodo = {
    [M.openai]: false,
    [M.anthropic]: false,
    [M.bedrock]: false,
    [M.gemini]: false,
  };
  for (const model of CHAT_MODELS) {
    const todo = parseTodo[model];
    it(`chat.completions.parse with zodResponseFormat on ${model}`, { todo }, async () => {
      const c = await client().chat.completions.parse({
        model,
        messages: [{ role: 'user', content: 'Describe Paris.' }],
        response_format: zodResponseFormat(City, 'city_info'),
      });
      assert.equal(c.choices[0].message.refusal, null);
      assertCity(c.choices[0].message.parsed);
    });
  }
});

describe('openai responses', { skip }, () => {
  for (const model of CHAT_MODELS) {
    it(`responses.create on ${model}`, async () => {
      const r = await client().responses.create({ model, input: 'Say hello.' });
      assert.equal(r.object, 'response');
      assert.equal(r.status, 'completed');
      assertMockText(r.output_text, model);
      assert.ok(r.usage.input_tokens > 0);
      assert.ok(r.usage.output_tokens > 0);
    });
  }

  it('multi-turn by input.push(...response.output)', async () => {
    const oa = client();
    const input = [{ role: 'user', content: 'Hello.' }];
    const first = await oa.responses.create({ model: M.openai, input });
    input.push(...first.output);
    input.push({ role: 'user', content: 'And again.' });
    const second = await oa.responses.create({ model: M.openai, input });
    assert.equal(second.status, 'completed');
    assertMockText(second.output_text, M.openai);
    assert.ok(second.usage.input_tokens > first.usage.input_tokens);
  });

  for (const model of [M.openai, M.anthropic]) {
    it(`function-tool loop (push output, then function_call_output) on ${model}`, async () => {
      const oa = client();
      const tools = [{ type: 'function', name: 'get_weather', description: 'Current weather in a city', parameters: WEATHER_SCHEMA, strict: true }];
      const input = [{ role: 'user', content: 'What is the weather in Paris?' }];
      const first = await oa.responses.create({ model, input, tools });
      const calls = first.output.filter((o) => o.type === 'function_call');
      assert.ok(calls.length >= 1, `no function_call in ${JSON.stringify(first.output)}`);
      input.push(...first.output);
      for (const call of calls) {
        assert.equal(call.name, 'get_weather');
        assert.ok(call.call_id);
        input.push({ type: 'function_call_output', call_id: call.call_id, output: weatherFor(call.arguments) });
      }
      const second = await oa.responses.create({ model, input, tools });
      assert.equal(second.status, 'completed');
      assertMockText(second.output_text, model);
    });
  }

  it('responses.stream helper with finalResponse', async () => {
    let deltas = '';
    const stream = client().responses.stream({ model: M.openai, input: 'Say hello.' });
    stream.on('response.output_text.delta', (e) => { deltas += e.delta; });
    const final = await stream.finalResponse();
    assert.equal(final.status, 'completed');
    assert.ok(final.output_text.length > 0, 'empty output_text');
    assertMockText(final.output_text, M.openai);
    assert.equal(deltas, final.output_text);
  });

  for (const model of [M.openai, M.anthropic, M.gemini]) {
    it(`responses.parse with zodTextFormat on ${model}`, async () => {
      const r = await client().responses.parse({
        model,
        input: 'Describe Paris.',
        text: { format: zodTextFormat(City, 'city_info') },
      });
      assert.equal(r.status, 'completed');
      assertCity(r.output_parsed);
    });
  }
});

describe('openai models', { skip }, () => {
  it('models.list includes conf-openai', async () => {
    const ids = [];
    for await (const m of client().models.list()) {
      assert.equal(m.object, 'model');
      ids.push(m.id);
    }
    assert.ok(ids.includes(M.openai), `models: ${ids.join(', ')}`);
  });

  it('models.retrieve(conf-openai)', async () => {
    const m = await client().models.retrieve(M.openai);
    assert.equal(m.id, M.openai);
    assert.equal(m.object, 'model');
  });

  it('embeddings.create (the SDK asks for base64 and decodes it), failed over from a 529 primary', async () => {
    const { data: e, response } = await client().embeddings.create({ model: M.embed, input: ['hello', 'world'] }).withResponse();
    assert.equal(e.data.length, 2);
    assert.ok(Array.isArray(e.data[0].embedding) && e.data[0].embedding.length > 0);
    assert.ok(e.data[0].embedding.every((x) => typeof x === 'number' && x >= -1 && x <= 1));
    assert.ok(e.usage.prompt_tokens > 0);
    assert.match(response.headers.get('x-spillway-trail') ?? '', /flaky=provider_unavailable/);
  });

  it('embeddings.create with encoding_format float and dimensions, on Gemini', async () => {
    const e = await client().embeddings.create({ model: M.embedGemini, input: 'hello', encoding_format: 'float', dimensions: 12 });
    assert.equal(e.data[0].embedding.length, 12);
  });

  it('embeddings from a chat model: BadRequestError wrong_model_kind', async () => {
    const err = await rejectsWith(() => client().embeddings.create({ model: M.openai, input: 'x' }), OpenAI.BadRequestError);
    assert.equal(err.code, 'wrong_model_kind');
  });
});

describe('openai errors', { skip }, () => {
  const hello = [{ role: 'user', content: 'Hello.' }];

  it('unknown model: NotFoundError model_not_found', async () => {
    const err = await rejectsWith(
      () => client().chat.completions.create({ model: 'no-such-model', messages: hello }), OpenAI.NotFoundError);
    assert.equal(err.status, 404);
    assert.equal(err.code, 'model_not_found');
  });

  it('unknown model on responses: NotFoundError model_not_found', async () => {
    const err = await rejectsWith(
      () => client().responses.create({ model: 'no-such-model', input: 'Hello.' }), OpenAI.NotFoundError);
    assert.equal(err.code, 'model_not_found');
  });

  it('bad key: AuthenticationError', async () => {
    const err = await rejectsWith(
      () => client({ apiKey: 'sk-spw-nope' }).chat.completions.create({ model: M.openai, messages: hello }),
      OpenAI.AuthenticationError);
    assert.equal(err.status, 401);
  });

  it('spent budget: RateLimitError key_budget_exceeded', async () => {
    const err = await rejectsWith(
      () => client({ apiKey: BROKE_KEY }).chat.completions.create({ model: M.openai, messages: hello }),
      OpenAI.RateLimitError);
    assert.equal(err.status, 429);
    assert.equal(err.code, 'key_budget_exceeded');
  });

  it('spent budget streamed: RateLimitError key_budget_exceeded', async () => {
    const err = await rejectsWith(async () => {
      const s = await client({ apiKey: BROKE_KEY }).chat.completions.create({ model: M.openai, messages: hello, stream: true });
      await drain(s);
    }, OpenAI.RateLimitError);
    assert.equal(err.code, 'key_budget_exceeded');
  });

  it('body over the limit: 413 request_too_large', async () => {
    const err = await rejectsWith(
      () => client().chat.completions.create({ model: M.openai, messages: [{ role: 'user', content: oversizedPrompt() }] }),
      OpenAI.APIError);
    assert.equal(err.status, 413);
    assert.equal(err.code, 'request_too_large');
  });

  it('conf-interrupt streamed: iteration throws stream_interrupted, no finish', async () => {
    const stream = await client().chat.completions.create({ model: M.interrupt, messages: hello, stream: true });
    let text = '';
    let finish = null;
    const err = await rejectsWith(async () => {
      for await (const chunk of stream) {
        for (const ch of chunk.choices) {
          text += ch.delta?.content ?? '';
          finish = ch.finish_reason ?? finish;
        }
      }
    }, OpenAI.APIError);
    assert.equal(err.code, 'stream_interrupted', `error: ${err.message}${await healthNote('broken')}`);
    assert.equal(err.type, 'stream_interrupted');
    assert.equal(finish, null, 'a broken stream must not finish normally');
    assert.ok(text.length > 0, 'the content sent before the cut is delivered');
  });

  it('conf-interrupt non-streaming: 502 upstream_error', async () => {
    const err = await rejectsWith(
      () => client().chat.completions.create({ model: M.interrupt, messages: hello }), OpenAI.InternalServerError);
    assert.equal(err.status, 502, `error: ${err.message}${await healthNote('broken')}`);
    assert.equal(err.code, 'upstream_error');
  });

  it('conf-failover succeeds and x-spillway-trail shows the hop', async () => {
    const { data, response } = await client().chat.completions
      .create({ model: M.failover, messages: hello })
      .withResponse();
    assertMockText(data.choices[0].message.content, M.failover);
    const trail = response.headers.get('x-spillway-trail') ?? '';
    assert.ok(trail.includes('flaky=provider_unavailable'),
      `x-spillway-trail: ${JSON.stringify(trail)}${await healthNote('flaky')}`);
  });

  // Beyond the budget: these fail until the harness lets a run try the
  // broken deployment more than three times.
  it('conf-interrupt with the stream helper: finalChatCompletion rejects', async () => {
    const stream = client().chat.completions.stream({ model: M.interrupt, messages: hello });
    const err = await rejectsWith(() => stream.finalChatCompletion(), OpenAI.APIError);
    assert.equal(err.code, 'stream_interrupted', `error: ${err.message}${await healthNote('broken')}`);
  });

  it('conf-interrupt on responses.stream: rejects with stream_interrupted', async () => {
    const stream = client().responses.stream({ model: M.interrupt, input: 'Hello.' });
    let completed = false;
    stream.on('response.completed', () => { completed = true; });
    const err = await rejectsWith(() => stream.finalResponse(), OpenAI.APIError);
    assert.equal(err.code, 'stream_interrupted', `error: ${err.message}${await healthNote('broken')}`);
    assert.equal(completed, false);
  });
});

// A gateway of several replicas shares Idempotency-Keys through its shared
// store. When that store cannot check a key, the gateway answers 503
// idempotency_unavailable with Retry-After: 1 and runs nothing; the SDK
// retries it on its own, and the caller gets one answer from one provider call.
describe('openai idempotency', { skip: skip || (IDEM_AWAY_ONCE === '' && 'SPILLWAY_IDEM_AWAY_ONCE not set') }, () => {
  it('chat.completions.create with an Idempotency-Key retries idempotency_unavailable on its own', async () => {
    const log = [];
    // maxRetries left at the SDK's default, as users leave it.
    const c = new OpenAI({ apiKey: KEY, baseURL: OPENAI_BASE, timeout: TIMEOUT_MS, fetch: statusFetch(log) });
    const headers = { 'Idempotency-Key': idemAwayOnceKey('openai-chat') };
    const params = { model: M.openai, messages: [{ role: 'user', content: 'Say hello.' }] };
    const deployment = DEPLOYMENT[M.openai];
    const before = await mockCalls(deployment);

    const first = await c.chat.completions.create(params, { headers });
    assertMockText(first.choices[0].message.content, M.openai);
    assert.deepEqual(log.map((x) => x.status), [503, 200], `answers the SDK got: ${JSON.stringify(log)}`);
    assert.equal(log[0].code, 'idempotency_unavailable');
    assert.equal(log[0].retryAfter, '1');
    assert.equal(log[0].shouldRetry, null, 'the refusal must leave X-Should-Retry unset');
    assert.equal(await mockCalls(deployment) - before, 1, 'provider calls');

    // The key was decided once: sending the request again replays that answer.
    const { data: again, response } = await c.chat.completions.create(params, { headers }).withResponse();
    assert.equal(response.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.id, first.id);
    assert.equal(again.choices[0].message.content, first.choices[0].message.content);
    assert.equal(await mockCalls(deployment) - before, 1, 'provider calls after the replay');
  });
});
