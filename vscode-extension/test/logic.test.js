// Unit tests of the extension's logic (no VS Code needed).
const { test } = require('node:test');
const assert = require('node:assert');
const { chooseAdapter, pickInterpreter, installHint, modelLabel, withDefaults } = require('../out/config');
const { statusText, statusTooltip } = require('../out/status');
const { DivergenceMarks } = require('../out/decorations');

test('the interpreter: configured, else the Python extension, else python3', async () => {
  assert.strictEqual(await pickInterpreter({ python: ' /venv/bin/python ' }, async () => '/other'), '/venv/bin/python');
  assert.strictEqual(await pickInterpreter({}, async () => '/from/extension'), '/from/extension');
  assert.strictEqual(await pickInterpreter({}, async () => undefined), 'python3');
  assert.strictEqual(await pickInterpreter({}, async () => { throw new Error('not ready'); }), 'python3');
});

test('a port means a running server on 127.0.0.1, else the adapter runs as a child process', () => {
  assert.deepStrictEqual(chooseAdapter({ port: 4711 }, 'python3'), { kind: 'server', host: '127.0.0.1', port: 4711 });
  assert.deepStrictEqual(chooseAdapter({}, '/v/bin/python'), { kind: 'executable', command: '/v/bin/python', args: ['-m', 'neural_dap', 'adapter'] });
  assert.strictEqual(chooseAdapter({ port: -1 }, 'p').kind, 'executable');
});

test('the install hint names the interpreter and what works: the set-up script or the wheel, then the setting', () => {
  const hint = installHint('/usr/bin/python3');
  assert.match(hint, /not installed in \/usr\/bin\/python3/);
  assert.match(hint, /bash scripts\/setup\.sh/);
  assert.match(hint, /\/usr\/bin\/python3 -m pip install neural_dap-\*\.whl/);
  assert.match(hint, /neuralDap\.python/);
});

test('model labels are short', () => {
  assert.strictEqual(modelLabel(undefined), 'embedded');
  assert.strictEqual(modelLabel({ url: 'http://127.0.0.1:8000/v1' }), '127.0.0.1:8000');
  assert.strictEqual(modelLabel({ url: 'http://x/v1', name: 'cwm' }), 'cwm');
});

test('F5 without a launch.json debugs the active Python file; other files are refused', () => {
  const made = withDefaults({}, '/w/a.py');
  assert.strictEqual(made.type, 'neural-python');
  assert.strictEqual(made.program, '/w/a.py');
  assert.strictEqual(withDefaults({}, '/w/notes.txt'), undefined);
  assert.strictEqual(withDefaults({ type: 'neural-python', request: 'launch', name: 'x', program: 'p.py' }, '/w/a.py').program, 'p.py');
  const pytest = withDefaults({ type: 'neural-python', request: 'launch', name: 'x', module: 'pytest', args: ['-q'] }, '/w/test_a.py');
  assert.strictEqual(pytest.program, undefined); // a module launch gets no program: the adapter refuses both
});

test('status text counts divergences only when checking against reality', () => {
  assert.strictEqual(statusText({ world: 'neural', model: { model: 'nd' }, reconcile: 'none' }, 'x'), '$(beaker) neural: nd');
  assert.strictEqual(statusText({ world: 'neural', model: { model: 'nd' }, reconcile: 'debugpy', divergences: 1 }, 'x'), '$(beaker) neural: nd · 1 divergence');
  assert.match(statusTooltip({ reconcile: 'recorded', statesCompared: 4, divergences: 2 }), /states compared: 4/);
});

test('divergence marks keep one entry per line, 0-based, deduplicated', () => {
  const marks = new DivergenceMarks();
  marks.add({ path: '/a.py', line: 5, text: 'x: predicted 1, actually 2' });
  marks.add({ path: '/a.py', line: 5, text: 'x: predicted 1, actually 2' });
  marks.add({ path: '/a.py', line: 3, text: 'y' });
  marks.add({ path: '/a.py', line: 0, text: 'ignored' });
  assert.deepStrictEqual(marks.marks('/a.py').map((m) => m.line), [2, 4]);
  assert.strictEqual(marks.count, 2);
  marks.clear();
  assert.deepStrictEqual(marks.marks('/a.py'), []);
});

test('the language server: its command, documents and the settings it is given', () => {
  const { serverCommand, serverSettings, needsRestart, DOCUMENT_SELECTOR } = require('../out/language');
  assert.deepStrictEqual(serverCommand('/v/bin/python'), { command: '/v/bin/python', args: ['-m', 'neural_dap', 'lsp'] });
  assert.ok(DOCUMENT_SELECTOR.some((d) => d.scheme === 'untitled' && d.language === 'python'));
  const values = { world: 'neural', maxPredictions: 32, python: '/x', 'languageServer.enabled': true };
  assert.deepStrictEqual(serverSettings({ get: (k) => values[k] }), { world: 'neural', maxPredictions: 32 });
  const { initializationOptions } = require('../out/language');
  assert.deepStrictEqual(initializationOptions({ get: (k) => values[k] }, true), { world: 'neural', maxPredictions: 32, trustedWorkspace: true });
  assert.deepStrictEqual(initializationOptions({ get: () => undefined }, false), { trustedWorkspace: false });
  assert.ok(needsRestart((s) => s === 'neuralDap.python'));
  assert.ok(!needsRestart((s) => s === 'neuralDap.world'));
});
