// The extension activated against a mocked `vscode` module.
const { test } = require('node:test');
const assert = require('node:assert');
const { createMock, install } = require('./vscode-mock');

const mock = createMock();
install(mock);
const extension = require('../out/extension');
extension.activate({ subscriptions: [] });

const session = (configuration, requests = []) => ({
  type: 'neural-python', name: 's', configuration, workspaceFolder: undefined,
  customRequest: async (command, args) => { requests.push([command, args]); return { world: 'neural', divergences: 2 }; },
});

test('registers the debug type, its factory and the commands', () => {
  assert.ok(mock.registered.factories.has('neural-python'));
  assert.ok(mock.registered.providers.has('neural-python'));
  for (const id of ['neuralDap.stepBackInto', 'neuralDap.stepBackOut', 'neuralDap.showSessionSummary', 'neuralDap.switchBranch']) {
    assert.ok(mock.registered.commands.has(id), id);
  }
});

test('a configured port connects to a running server', async () => {
  const descriptor = await mock.registered.factories.get('neural-python').createDebugAdapterDescriptor(session({ port: 4711 }));
  assert.strictEqual(descriptor.port, 4711);
  assert.strictEqual(descriptor.host, '127.0.0.1');
});

test('an interpreter without neural-dap: one message that says what works, and the launch ends quietly', async () => {
  const provider = mock.registered.providers.get('neural-python');
  const before = mock.messages.error.length;
  const resolved = await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, { type: 'neural-python', program: '/p.py', python: '/nonexistent/python' });
  assert.strictEqual(resolved, undefined);
  const shown = mock.messages.error.slice(before);
  assert.strictEqual(shown.length, 1);
  assert.match(shown[0], /not installed in \/nonexistent\/python/);
  assert.match(shown[0], /scripts\/setup\.sh/);
  assert.doesNotMatch(shown[0], /pip install neural-dap\b/); // not on PyPI: that would install nothing
});

test('a configured port skips the interpreter check', async () => {
  const provider = mock.registered.providers.get('neural-python');
  const config = { type: 'neural-python', program: '/p.py', port: 4711, python: '/nonexistent/python' };
  assert.deepStrictEqual(await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, config), config);
});

test('an interpreter with neural-dap starts `python -m neural_dap adapter`', async () => {
  const python = process.env.NEURAL_DAP_PYTHON;
  if (!python) return; // set by the Python test that runs these (tests/test_vscode_extension.py)
  const provider = mock.registered.providers.get('neural-python');
  const resolved = await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, { type: 'neural-python', program: '/p.py', python });
  assert.strictEqual(resolved.python, python);
  const descriptor = await mock.registered.factories.get('neural-python').createDebugAdapterDescriptor(session({ python }));
  assert.strictEqual(descriptor.command, python);
  assert.deepStrictEqual(descriptor.args, ['-m', 'neural_dap', 'adapter']);
});

test('a child session (startDebugging from the adapter) starts its adapter in its parent\'s folder', async () => {
  const factory = mock.registered.factories.get('neural-python');
  const folder = { uri: { fsPath: '/work/project' } };
  const parent = { ...session({ python: '/usr/bin/python3' }), workspaceFolder: folder };
  const child = { ...session({ python: '/usr/bin/python3', childRecording: '/tmp/neural-dap-children-x/7.events' }), parentSession: parent };
  assert.strictEqual((await factory.createDebugAdapterDescriptor(parent)).options.cwd, '/work/project');
  assert.strictEqual((await factory.createDebugAdapterDescriptor(child)).options.cwd, '/work/project');
  const own = { ...child, workspaceFolder: { uri: { fsPath: '/work/other' } } };
  assert.strictEqual((await factory.createDebugAdapterDescriptor(own)).options.cwd, '/work/other');
});

test('step-back commands send the custom requests to the active session', async () => {
  const requests = [];
  mock.vscode.debug.activeDebugSession = session({}, requests);
  await mock.registered.commands.get('neuralDap.stepBackInto')();
  await mock.registered.commands.get('neuralDap.stepBackOut')();
  assert.deepStrictEqual(requests.map((r) => r[0]), ['stepBackInto', 'stepBackOut']);
  mock.vscode.debug.activeDebugSession = undefined;
  await mock.registered.commands.get('neuralDap.stepBackInto')();
  assert.match(mock.messages.info.at(-1), /No neural-dap session/);
});

test('switch branch lists the what-if branches and switches to the one picked', async () => {
  const requests = [];
  const s = session({}, requests);
  s.customRequest = async (command, args) => {
    requests.push([command, args]);
    return { branches: [{ id: 0, current: false, description: 'branch 0 (the original run)' }, { id: 1, current: true, description: 'branch 1: x = 2 → 5' }] };
  };
  mock.vscode.debug.activeDebugSession = s;
  mock.vscode.window.pick = (items) => items.find((i) => i.id === 0);
  await mock.registered.commands.get('neuralDap.switchBranch')();
  assert.deepStrictEqual(requests, [['branches', undefined], ['branches', { switch: 0 }]]);
  mock.vscode.window.pick = undefined;
  mock.vscode.debug.activeDebugSession = undefined;
});

test('a neural session shows a status bar item that counts divergences, and hides at the end', () => {
  const item = mock.statusItems[0];
  const s = session({ world: 'neural', reconcile: 'recorded', model: 'embedded' });
  mock.events.start.fire(s);
  assert.ok(item.visible);
  mock.events.custom.fire({ session: s, event: 'neuralDap/status', body: { world: 'neural', model: { model: 'embedded' }, reconcile: 'recorded', divergences: 3 } });
  assert.strictEqual(item.text, '$(beaker) neural: embedded · 3 divergences');
  mock.events.terminate.fire(s);
  assert.ok(!item.visible);
});

test('lines where predictions diverged are decorated in the visible editors', () => {
  const s = session({ world: 'neural', reconcile: 'debugpy' });
  mock.vscode.window.visibleTextEditors = [mock.editor('/w/prog.py'), mock.editor('/w/other.py')];
  mock.events.start.fire(s);
  mock.events.custom.fire({ session: s, event: 'neuralDap/divergence', body: { path: '/w/prog.py', line: 7, text: 'local x: predicted 1, actually 2' } });
  const last = mock.decorationsSet.filter((d) => d.path === '/w/prog.py').at(-1);
  assert.strictEqual(last.ranges.length, 1);
  assert.strictEqual(last.ranges[0].range.startLine, 6);
  assert.match(last.ranges[0].hoverMessage.value, /predicted 1, actually 2/);
  assert.strictEqual(mock.decorationsSet.filter((d) => d.path === '/w/other.py').at(-1).ranges.length, 0);
});

test('the language server starts with `python -m neural_dap lsp` and the settings, and follows the switch', async () => {
  const { LanguageServerHost } = require('../out/languageClient');
  const started = [];
  const factory = (command, args, settings) => {
    const client = { running: false, async start() { this.running = true; started.push({ command, args, settings }); }, async stop() { this.running = false; } };
    return client;
  };
  mock.settings.set('neuralDap.languageServer.enabled', true);
  mock.settings.set('neuralDap.world', 'both');
  const output = mock.vscode.window.createOutputChannel('t');
  const host = new LanguageServerHost(async () => '/v/bin/python', output, factory);
  await host.sync();
  assert.ok(host.running);
  assert.deepStrictEqual(started, [{ command: '/v/bin/python', args: ['-m', 'neural_dap', 'lsp'], settings: { world: 'both', trustedWorkspace: false } }]);
  mock.settings.set('neuralDap.languageServer.enabled', false);
  await host.onConfigurationChanged({ affectsConfiguration: (s) => s === 'neuralDap.languageServer.enabled' });
  assert.ok(!host.running);
  mock.settings.delete('neuralDap.world');
});

test('the server learns whether the workspace is trusted, and starts again, trusted, when trust is granted', async () => {
  const { LanguageServerHost } = require('../out/languageClient');
  const started = [];
  const stopped = [];
  const factory = (command, args, settings) => ({ async start() { started.push(settings); }, async stop() { stopped.push(settings); } });
  mock.settings.set('neuralDap.languageServer.enabled', true);
  const host = new LanguageServerHost(async () => '/v/bin/python', mock.vscode.window.createOutputChannel('t'), factory);
  await host.sync();
  assert.deepStrictEqual(started, [{ trustedWorkspace: false }]);
  mock.vscode.workspace.isTrusted = true;
  await host.onTrustGranted();
  assert.deepStrictEqual(started, [{ trustedWorkspace: false }, { trustedWorkspace: true }]);
  assert.deepStrictEqual(stopped, [{ trustedWorkspace: false }]);
  assert.ok(host.running);
  await host.stop();
  mock.vscode.workspace.isTrusted = false;
  mock.settings.set('neuralDap.languageServer.enabled', false);
});

test('activation subscribes to trust being granted', () => {
  assert.strictEqual(mock.events.trust.listeners.length, 1);
  assert.doesNotThrow(() => mock.events.trust.fire()); // its server is off here: nothing to restart
});

test('a language server that cannot start is reported, and the extension goes on', async () => {
  const { LanguageServerHost } = require('../out/languageClient');
  mock.settings.set('neuralDap.languageServer.enabled', true);
  const output = mock.vscode.window.createOutputChannel('t');
  const host = new LanguageServerHost(async () => '/no/python', output, () => ({ async start() { throw new Error('spawn ENOENT'); }, async stop() {} }));
  await host.sync();
  assert.ok(!host.running);
  assert.match(mock.messages.error.at(-1), /language server did not start .*\/no\/python -m neural_dap lsp.*ENOENT/);
  mock.settings.set('neuralDap.languageServer.enabled', false);
});

test('the setting neuralDap.python is the interpreter when the launch names none', async () => {
  const python = process.env.NEURAL_DAP_PYTHON;
  if (!python) return; // set by tests/test_vscode_extension.py
  mock.settings.set('neuralDap.python', python);
  const provider = mock.registered.providers.get('neural-python');
  const resolved = await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, { type: 'neural-python', program: '/p.py' });
  assert.strictEqual(resolved.python, python);
  mock.settings.delete('neuralDap.python');
});

// A session that answers each custom request from `answers` (a function of the command and arguments).
const answering = (requests, answers) => ({
  ...session({}, requests),
  id: 'history-session',
  customRequest: async (command, args) => {
    requests.push([command, args]);
    const answer = answers(command, args);
    if (answer instanceof Error) throw answer;
    return answer;
  },
});

const moment = (index, line, fn = 'fill') => ({ index, path: '/w/bag.py', line, function: fn, thread: 1 });

test('the history and origin commands are contributed to the palette and the Variables view context menu', () => {
  const manifest = require('../package.json');
  const commands = manifest.contributes.commands.map((c) => c.command);
  const menu = manifest.contributes.menus['debug/variables/context'].map((m) => m.command);
  for (const id of ['neuralDap.showValueHistory', 'neuralDap.showValueOrigin']) {
    assert.ok(mock.registered.commands.has(id), id);
    assert.ok(commands.includes(id) && menu.includes(id), id);
  }
  const titles = manifest.contributes.commands.filter((c) => c.command.startsWith('neuralDap.showValue')).map((c) => `${c.category}: ${c.title}`);
  assert.deepStrictEqual(titles, ['neural-dap: Show Value History', 'neural-dap: Show Value Origin']);
});

test('Show Value History on a Variables entry asks valueHistory in the focused frame and travels to the row picked', async () => {
  const requests = [];
  const page = {
    items: [
      { moment: moment(12, 10), old: null, new: '0', call: 1 },
      { moment: moment(31, 12), old: '0', new: '3', call: 1 },
      { moment: moment(55, 12), old: '3', new: '5', call: 2 },
    ],
    start: 0, count: 200, total: 3, totalExact: true,
  };
  const s = answering(requests, (command) => (command === 'valueHistory' ? page : {}));
  mock.vscode.debug.activeDebugSession = s;
  mock.vscode.debug.activeStackItem = { session: s, threadId: 1, frameId: 7 };
  mock.vscode.window.pick = (items) => items[1];
  const context = { sessionId: 'history-session', container: { name: 'Locals', variablesReference: 3 }, variable: { name: 'items', value: '[0, 1]', evaluateName: 'self.items' } };
  await mock.registered.commands.get('neuralDap.showValueHistory')(context);
  assert.deepStrictEqual(requests, [
    ['valueHistory', { expression: 'self.items', frameId: 7, count: 200 }],
    ['travel', { index: 31 }],
  ]);
  const shown = mock.vscode.window.quickPicks.at(-1);
  assert.deepStrictEqual(shown.items.map((i) => i.label), ['line 10: (not set) → 0', 'line 12: 0 → 3', 'line 12: 3 → 5']);
  assert.strictEqual(shown.items[2].description, 'bag.py · in fill (call 2) · event 55');
  assert.match(shown.options.title, /^self\.items: 3 changes — pick one/);
  mock.vscode.window.pick = undefined;
  mock.vscode.debug.activeDebugSession = undefined;
  mock.vscode.debug.activeStackItem = undefined;
});

test('Show Value Origin from the palette asks for an expression, lists the chain with why it ends, and travels', async () => {
  const requests = [];
  const origin = {
    expression: 'q', value: '42', end: 'computed', reason: 'computed by a call: `compute(7)`',
    steps: [
      { expression: 'q', value: '42', moment: moment(27, 16, 'f'), statement: 'q = p', kind: 'assigned' },
      { expression: 'p', value: '42', moment: moment(25, 33, 'main'), statement: 'r = f(obj.x)', kind: 'argument' },
      { expression: 'a', value: '42', moment: moment(15, 29, 'main'), statement: 'a = compute(7)', kind: 'assigned' },
    ],
  };
  const s = answering(requests, (command) => (command === 'valueOrigin' ? origin : {}));
  mock.vscode.debug.activeDebugSession = s;
  mock.vscode.debug.activeStackItem = { session: { id: 'another session' }, threadId: 1, frameId: 9 }; // not this session's
  mock.vscode.window.input = () => ' q ';
  mock.vscode.window.pick = (items) => items.at(-1);
  await mock.registered.commands.get('neuralDap.showValueOrigin')();
  assert.match(mock.vscode.window.inputBoxes.at(-1).prompt, /self\.items/);
  assert.deepStrictEqual(requests, [
    ['valueOrigin', { expression: 'q', frameId: undefined }],
    ['travel', { index: 15 }],
  ]);
  const shown = mock.vscode.window.quickPicks.at(-1);
  assert.deepStrictEqual(shown.items.map((i) => i.label), ['line 16: q = p', 'line 33: r = f(obj.x)', 'line 29: a = compute(7)']);
  assert.strictEqual(shown.items[1].description, 'p = 42 (argument) · bag.py · in main · event 25');
  assert.strictEqual(shown.options.title, 'q = 42 — computed: computed by a call: `compute(7)`');
  mock.vscode.window.input = undefined;
  mock.vscode.window.pick = undefined;
  mock.vscode.debug.activeDebugSession = undefined;
  mock.vscode.debug.activeStackItem = undefined;
});

test('nothing to list, a refused question and a cancelled input: a message or nothing, and no travel', async () => {
  const requests = [];
  const s = answering(requests, (command, args) => {
    if (command === 'valueOrigin') return { expression: args.expression, value: null, steps: [], end: 'unbound', reason: '`zz` has no value here' };
    if (command === 'valueHistory') return new Error("'a + 1' is not a local, an attribute path or an item");
    return {};
  });
  mock.vscode.debug.activeDebugSession = s;
  await mock.registered.commands.get('neuralDap.showValueOrigin')({ variable: { name: 'zz' } });
  assert.strictEqual(mock.messages.info.at(-1), 'neural-dap: `zz` has no value here');
  await mock.registered.commands.get('neuralDap.showValueHistory')({ variable: { name: 'a + 1' } });
  assert.match(mock.messages.error.at(-1), /value history failed: 'a \+ 1' is not a local/);
  mock.vscode.window.input = () => undefined; // Escape in the input box
  await mock.registered.commands.get('neuralDap.showValueHistory')();
  assert.deepStrictEqual(requests.map((r) => r[0]), ['valueOrigin', 'valueHistory']);
  mock.vscode.window.input = undefined;
  mock.vscode.debug.activeDebugSession = undefined;
  await mock.registered.commands.get('neuralDap.showValueOrigin')({ variable: { name: 'x' } });
  assert.match(mock.messages.info.at(-1), /No neural-dap session/);
});
