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

test('value history rows: the line and the change, where and which event; the title counts them', () => {
  const { historyItems, historyTitle } = require('../out/history');
  const page = {
    items: [
      { moment: { index: 4, path: '/w/a.py', line: 7, function: 'main' }, old: null, new: '0', call: 1 },
      { moment: { index: 9, path: '/w/a.py', line: 8, function: 'main' }, old: '0', new: 'x'.repeat(100), call: 1 },
    ],
    start: 0, count: 2, total: 40, totalExact: false,
  };
  const rows = historyItems(page);
  assert.deepStrictEqual(rows.map((r) => [r.label.slice(0, 14), r.index]), [['line 7: (not s', 4], ['line 8: 0 → xx', 9]]);
  assert.ok(rows[1].label.endsWith('…') && rows[1].label.length < 80);
  assert.strictEqual(rows[0].description, 'a.py · in main (call 1) · event 4');
  assert.strictEqual(historyTitle('total', page), 'total: 2 changes (2 of at least 40) — pick one to travel there');
  // a change made in a callee through another name: dated at its statement, where it ran
  const made = historyItems({
    items: [{
      moment: { index: 17, path: '/w/a.py', line: 7, function: 'fill' }, old: '[0, 5]', new: '[0, 5, 7]', call: 1,
      statement: { index: 16, path: '/w/a.py', line: 7, function: 'fill' }, code: 'xs.append(7)',
    }],
    start: 0, count: 1, total: 1,
  });
  assert.deepStrictEqual([made[0].label, made[0].index, made[0].detail], ['line 7: [0, 5] → [0, 5, 7]', 16, 'by xs.append(7)']);
  assert.strictEqual(made[0].description, 'a.py · in fill (call 1) · event 16');
  assert.strictEqual(historyTitle('total', { items: [], start: 0, count: 2, total: 0 }), 'total: no changes recorded');
});

test('origin rows: each step\'s statement and what it gave; the title says why the chain ends', () => {
  const { originItems, originTitle, expressionOf } = require('../out/history');
  const origin = {
    expression: 'glob', value: '7', end: 'global', reason: '`COUNT` is a global or a builtin: not followed',
    steps: [{ expression: 'glob', value: '7', moment: { index: 36, path: '/w/a.py', line: 37, function: 'main' }, statement: 'glob = COUNT', kind: 'assigned' }],
  };
  assert.deepStrictEqual(originItems(origin), [{ label: 'line 37: glob = COUNT', description: 'glob = 7 · a.py · in main · event 36', index: 36 }]);
  assert.strictEqual(originTitle(origin), 'glob = 7 — global: `COUNT` is a global or a builtin: not followed');
  assert.strictEqual(expressionOf({ variable: { name: 'items', evaluateName: 'self.items' } }), 'self.items');
  assert.strictEqual(expressionOf({ variable: { name: 'x' } }), 'x');
  assert.strictEqual(expressionOf(undefined), undefined);
  assert.strictEqual(expressionOf({ variable: { name: '  ' } }), undefined);
});
