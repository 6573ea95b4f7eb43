// LangChain's chat models (@langchain/openai ChatOpenAI, @langchain/anthropic
// ChatAnthropic, which pulls its own older @anthropic-ai/sdk: x-api-key and
// anthropic-version 2023-06-01) against spillway: invoke, stream, bindTools
// with a manual tool loop, withStructuredOutput, and one conversation carried
// across providers.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ChatOpenAI } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { HumanMessage, SystemMessage, AIMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import {
  GATEWAY, OPENAI_BASE, KEY, M, TIMEOUT_MS, skip, assertMockText, weatherFor,
} from '../lib/helpers.mjs';

function chatOpenAI(opts = {}) {
  return new ChatOpenAI({
    model: M.openai, apiKey: KEY, configuration: { baseURL: OPENAI_BASE }, maxRetries: 0, timeout: TIMEOUT_MS, ...opts,
  });
}

function chatAnthropic(opts = {}) {
  return new ChatAnthropic({
    model: M.anthropic, apiKey: KEY, anthropicApiUrl: GATEWAY, maxRetries: 0, maxTokens: 256, ...opts,
  });
}

const getWeather = tool(
  async ({ city }) => weatherFor({ city }),
  {
    name: 'get_weather',
    description: 'Current weather in a city',
    schema: z.object({ city: z.string().describe('City name') }),
  },
);

// @langchain/openai 1.6.0 turns a tool-call-only AIMessage whose content is
// blocks (as ChatAnthropic returns it) into {"role":"assistant","content":[]},
// which OpenAI and the gateway reject (langchainjs#11416).
// @langchain/openai 1.6.0 sends content:[] for a tool-call-only AIMessage
// that came from ChatAnthropic (langchainjs#11416); the gateway reads an
// empty list beside tool calls as no content.

const City = z.object({ city: z.string(), country: z.string(), population: z.number() }).describe('Facts about a city');

function assertCity(p) {
  assert.ok(p && typeof p === 'object', `structured output is ${JSON.stringify(p)}`);
  assert.equal(typeof p.city, 'string');
  assert.equal(typeof p.country, 'string');
  assert.equal(typeof p.population, 'number');
}

// textOf reads an AIMessage's text whether content is a string or blocks.
function textOf(msg) {
  if (typeof msg.content === 'string') return msg.content;
  return msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

// toolLoop runs one manual round: the bound model calls the tool, the tool's
// ToolMessage goes back, and the model answers text.
async function toolLoop(llm, model) {
  const bound = llm.bindTools([getWeather]);
  const messages = [new HumanMessage('What is the weather in Paris?')];
  const ai = await bound.invoke(messages);
  assert.ok(ai instanceof AIMessage || ai.constructor.name.startsWith('AIMessage'), `got ${ai.constructor.name}`);
  assert.ok(ai.tool_calls?.length >= 1, `no tool_calls: ${JSON.stringify(ai)}`);
  messages.push(ai);
  for (const tc of ai.tool_calls) {
    assert.equal(tc.name, 'get_weather');
    assert.equal(typeof tc.args, 'object');
    const tm = await getWeather.invoke(tc); // a ToolMessage with tool_call_id set
    assert.ok(tm instanceof ToolMessage, `tool returned ${tm?.constructor?.name}`);
    assert.equal(tm.tool_call_id, tc.id);
    messages.push(tm);
  }
  const final = await bound.invoke(messages);
  assert.equal(final.tool_calls?.length ?? 0, 0);
  assertMockText(textOf(final), model);
  return messages;
}

async function collect(stream) {
  let full;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    full = full === undefined ? chunk : full.concat(chunk);
  }
  return { full, chunks };
}

describe('langchain ChatOpenAI', { skip }, () => {
  it('invoke', async () => {
    const ai = await chatOpenAI().invoke([new SystemMessage('Be brief.'), new HumanMessage('Say hello.')]);
    assertMockText(textOf(ai), M.openai);
    assert.ok(ai.usage_metadata?.input_tokens > 0);
    assert.ok(ai.usage_metadata?.output_tokens > 0);
    assert.equal(ai.response_metadata?.finish_reason, 'stop');
  });

  it('stream (chunks concatenated, usage_metadata present)', async () => {
    const { full, chunks } = await collect(await chatOpenAI().stream('Say hello.'));
    assert.ok(chunks > 1, `only ${chunks} chunk(s)`);
    assertMockText(textOf(full), M.openai);
    assert.ok(full.usage_metadata, 'no usage_metadata on the streamed message');
    assert.ok(full.usage_metadata.input_tokens > 0);
    assert.ok(full.usage_metadata.output_tokens > 0);
  });

  it('bindTools with a zod tool and a manual loop', async () => {
    await toolLoop(chatOpenAI(), M.openai);
  });

  it('withStructuredOutput(zod schema)', async () => {
    const out = await chatOpenAI().withStructuredOutput(City).invoke('Describe Paris.');
    assertCity(out);
  });

  it('useResponsesApi: true invoke', async () => {
    const ai = await chatOpenAI({ useResponsesApi: true }).invoke('Say hello.');
    assertMockText(textOf(ai), M.openai);
    assert.ok(ai.usage_metadata?.output_tokens > 0);
  });

  it('useResponsesApi: true bindTools loop', async () => {
    await toolLoop(chatOpenAI({ useResponsesApi: true }), M.openai);
  });
});

describe('langchain ChatAnthropic', { skip }, () => {
  it('invoke', async () => {
    const ai = await chatAnthropic().invoke([new SystemMessage('Be brief.'), new HumanMessage('Say hello.')]);
    assertMockText(textOf(ai), M.anthropic);
    assert.ok(ai.usage_metadata?.input_tokens > 0);
    assert.ok(ai.usage_metadata?.output_tokens > 0);
    assert.equal(ai.response_metadata?.stop_reason, 'end_turn');
  });

  it('stream (chunks concatenated, usage_metadata present)', async () => {
    const { full, chunks } = await collect(await chatAnthropic().stream('Say hello.'));
    assert.ok(chunks > 1, `only ${chunks} chunk(s)`);
    assertMockText(textOf(full), M.anthropic);
    assert.ok(full.usage_metadata?.output_tokens > 0, `usage_metadata: ${JSON.stringify(full.usage_metadata)}`);
  });

  it('stream usage_metadata counts the input tokens', async () => {
    const { full } = await collect(await chatAnthropic().stream('Say hello.'));
    assert.ok(full.usage_metadata?.input_tokens > 0, `usage_metadata: ${JSON.stringify(full.usage_metadata)}`);
  });

  it('bindTools with a zod tool and a manual loop', async () => {
    await toolLoop(chatAnthropic(), M.anthropic);
  });

  it("withStructuredOutput(zod schema, {method: 'jsonSchema'}) (output_config.format)", async () => {
    const out = await chatAnthropic().withStructuredOutput(City, { method: 'jsonSchema' }).invoke('Describe Paris.');
    assertCity(out);
  });

  // ChatAnthropic's default method forces a tool named "extract" with the schema.
  it('withStructuredOutput(zod schema)', async () => {
    const out = await chatAnthropic().withStructuredOutput(City).invoke('Describe Paris.');
    assertCity(out);
  });
});

describe('langchain across providers', { skip }, () => {
  it('a text conversation moves from ChatAnthropic to ChatOpenAI (conf-gemini) and back', async () => {
    const messages = [new SystemMessage('Be brief.'), new HumanMessage('Hello.')];
    messages.push(await chatAnthropic().invoke(messages), new HumanMessage('And on Gemini?'));
    const g = await chatOpenAI({ model: M.gemini }).invoke(messages);
    assertMockText(textOf(g), M.gemini);
    messages.push(g, new HumanMessage('Back to Anthropic.'));
    const a = await chatAnthropic().invoke(messages);
    assertMockText(textOf(a), M.anthropic);
  });

  it('a conversation started on ChatAnthropic continues on ChatOpenAI (conf-gemini)', async () => {
    // Turn 1 and the tool round on Anthropic's format; the history, with its
    // block-content AIMessage and ToolMessage, then goes to a Gemini-backed
    // model through the OpenAI format.
    const messages = await toolLoop(chatAnthropic(), M.anthropic);
    const gemini = chatOpenAI({ model: M.gemini });
    const ai = await gemini.bindTools([getWeather]).invoke(messages);
    assertMockText(textOf(ai), M.gemini);
    messages.push(ai, new HumanMessage('Thanks. And tomorrow?'));
    const next = await gemini.invoke(messages);
    assertMockText(textOf(next), M.gemini);
  });

  it('a conversation started on ChatOpenAI (conf-gemini) continues on ChatAnthropic', async () => {
    const messages = await toolLoop(chatOpenAI({ model: M.gemini }), M.gemini);
    messages.push(new HumanMessage('Thanks. And tomorrow?'));
    const ai = await chatAnthropic().bindTools([getWeather]).invoke(messages);
    // The last turn is a human question, so the model may call the tool again
    // or answer; either way it must accept the foreign history.
    assert.ok(ai.tool_calls?.length >= 1 || textOf(ai).startsWith('mock anthropic '), JSON.stringify(ai.content));
  });
});
