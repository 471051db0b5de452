// neural-dap as VS Code's own test harness drives a debug adapter.
const { test, before, after } = require('node:test');
const assert = require('node:assert');
const path = require('node:path');
const { DebugClient } = require('@vscode/debugadapter-testsupport');

const ROOT = path.resolve(__dirname, '..', '..');
const PYTHON = process.env.NEURAL_DAP_PYTHON || path.join(ROOT, '.venv', 'bin', 'python');
const LAUNCHER = path.join(__dirname, 'launch_adapter.py');
const PROGRAM = path.join(ROOT, 'examples', 'bubble_sort.py');

let dc;
before(async () => {
  dc = new DebugClient(PYTHON, LAUNCHER, 'neural-python', { cwd: ROOT });
  dc.defaultTimeout = 30000;
  await dc.start();
});
after(async () => { await dc.stop(); });

test('hits a breakpoint, steps back and reverse-continues', async () => {
  await dc.hitBreakpoint({ program: PROGRAM }, { path: PROGRAM, line: 16 });
  const stack = await dc.stackTraceRequest({ threadId: 1 });
  assert.strictEqual(stack.body.stackFrames[0].name, 'bubble_sort');
  assert.strictEqual(stack.body.stackFrames[0].line, 16);

  await Promise.all([dc.send('stepBack', { threadId: 1 }), dc.assertStoppedLocation('step', { path: PROGRAM, line: 15 })]);
  // a step that ends on a breakpoint's line reports the breakpoint, as debugpy does
  await Promise.all([dc.nextRequest({ threadId: 1 }), dc.assertStoppedLocation('breakpoint', { path: PROGRAM, line: 16 })]);
  await Promise.all([dc.stepInRequest({ threadId: 1 }), dc.assertStoppedLocation('step', { path: PROGRAM, line: 5 })]);
  await Promise.all([dc.send('reverseContinue', { threadId: 1 }), dc.assertStoppedLocation('breakpoint', { path: PROGRAM, line: 16 })]);

  const scopes = await dc.scopesRequest({ frameId: stack.body.stackFrames[0].id });
  const vars = await dc.variablesRequest({ variablesReference: scopes.body.scopes[0].variablesReference });
  const items = vars.body.variables.find((v) => v.name === 'items');
  assert.strictEqual(items.value, '[5, 2, 4, 1]');

  const evaluated = await dc.evaluateRequest({ expression: 'items[i] > items[i + 1]', frameId: stack.body.stackFrames[0].id });
  assert.strictEqual(evaluated.body.result, 'True');
});

test('capabilities announce time travel', async () => {
  const dc2 = new DebugClient(PYTHON, LAUNCHER, 'neural-python', { cwd: ROOT });
  await dc2.start();
  try {
    const response = await dc2.initializeRequest({ adapterID: 'neural-python', linesStartAt1: true, columnsStartAt1: true });
    assert.strictEqual(response.body.supportsStepBack, true);
    assert.strictEqual(response.body.supportsRestartFrame, true);
    assert.ok(response.body.exceptionBreakpointFilters.some((f) => f.filter === 'uncaught'));
  } finally {
    await dc2.stop();
  }
});

test('runs to the end and terminates when told not to stop there', async () => {
  const dc3 = new DebugClient(PYTHON, LAUNCHER, 'neural-python', { cwd: ROOT });
  await dc3.start();
  try {
    await Promise.all([
      dc3.configurationSequence(),
      dc3.launch({ program: PROGRAM, stopAtEnd: false }),
      dc3.waitForEvent('terminated'),
    ]);
  } finally {
    await dc3.stop();
  }
});

test('a failed prediction is an error on the step, and the first stop is entry', { skip: !process.env.SCRIPTED_MODEL_URL }, async () => {
  const dc4 = new DebugClient(PYTHON, LAUNCHER, 'neural-python', { cwd: ROOT });
  dc4.defaultTimeout = 30000;
  await dc4.start();
  try {
    await Promise.all([
      dc4.configurationSequence(),
      dc4.launch({
        program: PROGRAM, entry: { function: 'bubble_sort', args: '[3, 1, 2]' }, world: 'neural',
        model: { url: process.env.SCRIPTED_MODEL_URL, retries: 0 }, stopOnEntry: true,
      }),
      dc4.assertStoppedLocation('entry', { path: PROGRAM, line: 9 }),
    ]);
    await assert.rejects(dc4.nextRequest({ threadId: 1 }), /could not predict step_over/);
    const stack = await dc4.stackTraceRequest({ threadId: 1 });
    assert.strictEqual(stack.body.stackFrames[0].line, 9);
  } finally {
    await dc4.stop();
  }
});
