// SPDX-License-Identifier: GPL-3.0-or-later
// batchscope serve driven by the official OpenAI Node client: models, text
// and chat completions whole and streamed, refused fields and OpenAI's error
// object, a stream the client aborts counted as cancelled in /metrics, and a
// clean exit on SIGTERM with balanced accounting.
// Usage: node tests/openai/client_test.mjs PATH/TO/batchscope
// The client comes from tests/openai/node_modules, which scripts/setup installs.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');
const bin = process.argv[2];
if (!bin) {
  console.error('usage: node tests/openai/client_test.mjs PATH/TO/batchscope');
  process.exit(2);
}
if (!existsSync(join(here, 'node_modules', 'openai', 'package.json'))) {
  // 77: skipped (ctest's SKIP_RETURN_CODE); scripts/setup installs the client.
  console.error('SKIP: tests/openai/node_modules has no openai client; run scripts/setup');
  process.exit(77);
}
const { default: OpenAI } = await import('openai');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const show = (v) => JSON.stringify(v);
function expect(cond, what) {
  if (!cond) throw new Error(what);
}
function eq(got, want, what) {
  expect(got === want, `${what}: expected ${show(want)}, got ${show(got)}`);
}

// The server, its output, and its end.
let log = '';
let running = true;
const child = spawn(bin, ['serve', '--model', join(root, 'models', 'tiny_lm.pt'), '--port', '0'],
                    { stdio: ['ignore', 'pipe', 'pipe'] });
child.stdout.on('data', (d) => { log += d; });
child.stderr.on('data', (d) => { log += d; });
const exited = new Promise((res) => child.on('exit', (code, signal) => {
  running = false;
  res({ code, signal });
}));
child.on('error', (e) => {
  running = false;
  log += `(could not start ${bin}: ${e.message})\n`;
});
process.on('exit', () => { if (running) child.kill('SIGKILL'); });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(1));
function die(message) {
  console.log(`FAIL ${message}`);
  console.log(`--- serve output ---\n${log}`);
  process.exit(1);
}

let url;
for (const start = Date.now(); !url; await sleep(50)) {
  url = /listening on (http:\/\/[^\s]+)/.exec(log)?.[1];
  if (!url && !running) die('serve exited before it listened');
  if (!url && Date.now() - start > 60_000) die('serve did not say where it listens within 60 s');
}
console.log(`serve listens on ${url}`);
const client = new OpenAI({ baseURL: url + '/v1', apiKey: 'unused', maxRetries: 0 });

let failures = 0;
async function check(name, fn) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failures += 1;
    const cause = e?.cause ? ` (${e.cause.message ?? e.cause})` : '';
    console.log(`FAIL ${name}: ${e instanceof TypeError && !cause ? e.stack : (e?.message ?? e) + cause}`);
  }
}
async function collect(stream) {
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}
// The request must be refused with this status (and param); returns the error.
async function refused(request, status, param) {
  let err;
  try {
    await request;
  } catch (e) {
    err = e;
  }
  expect(err, 'the request was accepted');
  expect(err instanceof OpenAI.APIError, `not an OpenAI.APIError: ${err}`);
  expect(err.status, `no answer: ${err.message}`);
  eq(err.status, status, 'status');
  expect(err.error && typeof err.error === 'object' && typeof err.error.message === 'string',
         `error is not OpenAI's error object: ${show(err.error)}`);
  if (param !== undefined) {
    eq(err.param, param, 'error.param');
    eq(err.type, 'invalid_request_error', 'error.type');
  }
  return err;
}

const model = 'tiny_lm';
const prompt = 'And God said';
const messages = [{ role: 'system', content: 'You are terse.' },
                  { role: 'user', content: 'Who begat Enos?' }];
const greedy = { model, temperature: 0, seed: 7, ignore_eos: true };
let answer;  // the chat answer, whole

await check('models.list: one model, tiny_lm, chat_template "default"', async () => {
  const page = await client.models.list();
  eq(page.data.length, 1, 'number of models');
  eq(page.data[0].id, model, 'id');
  eq(page.data[0].chat_template, 'default', 'chat_template');
});

let text;
await check('completions.create whole: finish_reason length, 8 completion tokens', async () => {
  const r = await client.completions.create({ ...greedy, prompt, max_tokens: 8 });
  eq(r.object, 'text_completion', 'object');
  eq(r.choices[0].finish_reason, 'length', 'finish_reason');
  eq(r.usage.completion_tokens, 8, 'usage.completion_tokens');
  text = r.choices[0].text;
  eq(typeof text, 'string', 'type of text');
});

await check('completions.create streamed: text, finish_reason, then usage', async () => {
  const chunks = await collect(await client.completions.create(
      { ...greedy, prompt, max_tokens: 8, stream: true, stream_options: { include_usage: true } }));
  const finish = chunks.findIndex((c) => c.choices[0]?.finish_reason);
  expect(finish >= 0, `no chunk has a finish_reason: ${show(chunks)}`);
  eq(chunks[finish].choices[0].finish_reason, 'length', 'finish_reason');
  eq(chunks.map((c) => c.choices[0]?.text ?? '').join(''), text, 'streamed text');
  const last = chunks[chunks.length - 1];
  expect(finish < chunks.length - 1, 'no usage chunk after the finish_reason chunk');
  eq(last.choices.length, 0, 'choices of the usage chunk');
  eq(last.usage?.completion_tokens, 8, 'usage.completion_tokens');
});

function wholeChat(r, tokens) {
  eq(r.object, 'chat.completion', 'object');
  eq(r.choices.length, 1, 'number of choices');
  eq(r.choices[0].message.role, 'assistant', 'message.role');
  eq(typeof r.choices[0].message.content, 'string', 'type of message.content');
  eq(r.choices[0].finish_reason, 'length', 'finish_reason');
  eq(r.usage.completion_tokens, tokens, 'usage.completion_tokens');
  expect(r.usage.prompt_tokens > 0, `usage.prompt_tokens ${r.usage.prompt_tokens} is not > 0`);
  return r.choices[0].message.content;
}

await check('chat.completions.create whole with max_tokens', async () => {
  answer = wholeChat(await client.chat.completions.create({ ...greedy, messages, max_tokens: 12 }), 12);
});

await check('chat.completions.create whole with max_completion_tokens', async () => {
  wholeChat(await client.chat.completions.create(
      { ...greedy, messages, max_completion_tokens: 12 }), 12);
});

await check('chat.completions.create with content as text parts: same answer', async () => {
  const parts = messages.map((m) => ({ role: m.role, content: [{ type: 'text', text: m.content }] }));
  const got = wholeChat(await client.chat.completions.create(
      { ...greedy, messages: parts, max_tokens: 12 }), 12);
  eq(got, answer, 'answer');
});

await check('chat.completions.create streamed: role, deltas, finish_reason, usage', async () => {
  const chunks = await collect(await client.chat.completions.create(
      { ...greedy, messages, max_tokens: 12, stream: true, stream_options: { include_usage: true } }));
  expect(chunks.length > 2, `only ${chunks.length} chunks`);
  for (const c of chunks) eq(c.object, 'chat.completion.chunk', 'object of a chunk');
  eq(chunks[0].choices[0]?.delta?.role, 'assistant', 'first delta.role');
  eq(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), answer,
     'content deltas joined (the whole answer)');
  eq(chunks.filter((c) => c.choices[0]?.finish_reason === 'length').length, 1,
     'chunks with finish_reason "length"');
  const last = chunks[chunks.length - 1];
  eq(last.choices.length, 0, 'choices of the last chunk');
  eq(last.usage?.completion_tokens, 12, 'usage.completion_tokens of the last chunk');
});

await check('chat n: 2 refused: 422, param n', async () => {
  const e = await refused(client.chat.completions.create({ model, messages, n: 2 }), 422, 'n');
  expect(/\bn\b/.test(e.error.message), `message does not mention n: ${show(e.error.message)}`);
});

await check('chat tools refused: 422, param tools', async () => {
  const tools = [{ type: 'function', function: { name: 'f', parameters: {} } }];
  await refused(client.chat.completions.create({ model, messages, tools }), 422, 'tools');
});

for (const api of ['completions', 'chat']) {
  const create = api === 'chat'
    ? (extra) => client.chat.completions.create({ model, messages, ...extra })
    : (extra) => client.completions.create({ model, prompt, ...extra });
  await check(`${api} max_tokens -1 refused: 422, param max_tokens, quoting -1`, async () => {
    const e = await refused(create({ max_tokens: -1 }), 422, 'max_tokens');
    expect(e.error.message.includes('-1'), `message does not quote -1: ${show(e.error.message)}`);
  });
  await check(`${api} unknown model: 404 naming it`, async () => {
    const e = await refused(create({ model: 'no_such_model' }), 404);
    expect(e instanceof OpenAI.NotFoundError, `not an OpenAI.NotFoundError: ${e}`);
    expect(e.error.message.includes('no_such_model'),
           `message does not name the model: ${show(e.error.message)}`);
  });
}

for (const [method, route] of [['POST', '/v1/completions'], ['POST', '/v1/chat/completions'],
                               ['PUT', '/v1/config']]) {
  await check(`raw ${method} ${route} with body "{": 400, OpenAI's error object`, async () => {
    const r = await fetch(url + route, { method, body: '{', headers: { 'content-type': 'application/json' } });
    const body = await r.text();
    eq(r.status, 400, 'status');
    let error;
    try { ({ error } = JSON.parse(body)); } catch { throw new Error(`body is not JSON: ${body}`); }
    expect(error && typeof error === 'object', `error is not an object: ${body}`);
    eq(typeof error.message, 'string', 'type of error.message');
    eq(error.type, 'invalid_request_error', 'error.type');
    expect('param' in error && 'code' in error, `error lacks param or code: ${body}`);
  });
}

await check('chat stream aborted by the client: counted as cancelled in /metrics', async () => {
  // As long an answer as tiny_lm's context of 1024 tokens leaves room for.
  const stream = await client.chat.completions.create(
      { ...greedy, messages, max_tokens: 900, stream: true });
  let n = 0;
  for await (const _ of stream) if (++n === 3) break;
  eq(n, 3, 'chunks read before aborting');
  stream.controller.abort();
  const want = 'batchscope_generation_requests_total{reason="cancelled"} 1';
  let metrics = '';
  for (const start = Date.now(); Date.now() - start < 10_000; await sleep(100)) {
    metrics = await (await fetch(url + '/metrics')).text();
    if (metrics.split('\n').includes(want)) return;
  }
  const seen = metrics.split('\n').filter((l) => l.startsWith('batchscope_generation_requests_total'));
  throw new Error(`no line '${want}' within 10 s; have:\n  ${seen.join('\n  ')}`);
});

await check('SIGTERM: exit code 0, engine admitted N = completed N', async () => {
  child.kill('SIGTERM');
  const end = await Promise.race([exited, sleep(30_000).then(() => null)]);
  expect(end, 'serve did not exit within 30 s of SIGTERM');
  eq(end.code, 0, `exit code (signal ${end.signal})`);
  const m = /engine admitted (\d+) = completed (\d+)/.exec(log);
  expect(m, `no 'engine admitted N = completed N' line:\n${log}`);
  eq(m[2], m[1], 'completed (as admitted)');
});

if (failures) {
  console.log(`FAIL ${failures} check(s) failed\n--- serve output ---\n${log}`);
  process.exit(1);
}
console.log('ok   all checks passed');
