// A stand-in for the `vscode` module: records what the extension registers and lets tests fire events.
const Module = require('node:module');

function emitter() {
  const listeners = [];
  const event = (listener) => { listeners.push(listener); return { dispose() {} }; };
  event.fire = (value) => listeners.forEach((l) => l(value));
  event.listeners = listeners;
  return event;
}

function createMock() {
  const registered = { commands: new Map(), factories: new Map(), providers: new Map() };
  const messages = { info: [], error: [] };
  const statusItems = [];
  const decorationsSet = [];
  const events = {
    start: emitter(), terminate: emitter(), custom: emitter(), editors: emitter(), configuration: emitter(), trust: emitter(),
  };
  const settings = new Map([['neuralDap.languageServer.enabled', false]]);
  class Range { constructor(a, b, c, d) { Object.assign(this, { startLine: a, startCharacter: b, endLine: c, endCharacter: d }); } }
  class MarkdownString { constructor(value) { this.value = value; } }
  class ThemeColor { constructor(id) { this.id = id; } }
  class DebugAdapterServer { constructor(port, host) { this.port = port; this.host = host; } }
  class DebugAdapterExecutable { constructor(command, args, options) { Object.assign(this, { command, args, options }); } }
  const vscode = {
    Range, MarkdownString, ThemeColor, DebugAdapterServer, DebugAdapterExecutable,
    StatusBarAlignment: { Left: 1, Right: 2 },
    OverviewRulerLane: { Right: 4 },
    window: {
      visibleTextEditors: [],
      activeTextEditor: undefined,
      createOutputChannel: (name) => ({ name, lines: [], appendLine(l) { this.lines.push(l); }, clear() { this.lines = []; }, show() {}, dispose() {} }),
      createStatusBarItem: () => { const item = { text: '', tooltip: '', visible: false, show() { this.visible = true; }, hide() { this.visible = false; }, dispose() {} }; statusItems.push(item); return item; },
      createTextEditorDecorationType: (options) => ({ options, dispose() {} }),
      showInformationMessage: (m) => { messages.info.push(m); return Promise.resolve(undefined); },
      showErrorMessage: (m) => { messages.error.push(m); return Promise.resolve(undefined); },
      pick: undefined, // a test's choice among the quick pick's items: (items) => item
      quickPicks: [], // what each quick pick showed: { items, options }
      showQuickPick(items, options) { this.quickPicks.push({ items, options }); return Promise.resolve(this.pick ? this.pick(items) : undefined); },
      input: undefined, // a test's answer to an input box: (options) => text
      inputBoxes: [], // the options of each input box shown
      showInputBox(options) { this.inputBoxes.push(options); return Promise.resolve(this.input ? this.input(options) : undefined); },
      onDidChangeVisibleTextEditors: events.editors,
    },
    commands: { registerCommand: (id, fn) => { registered.commands.set(id, fn); return { dispose() {} }; } },
    debug: {
      activeDebugSession: undefined,
      activeStackItem: undefined, // the frame focused in the Call Stack view: { session, threadId, frameId }
      registerDebugConfigurationProvider: (type, p) => { registered.providers.set(type, p); return { dispose() {} }; },
      registerDebugAdapterDescriptorFactory: (type, f) => { registered.factories.set(type, f); return { dispose() {} }; },
      onDidStartDebugSession: events.start,
      onDidTerminateDebugSession: events.terminate,
      onDidReceiveDebugSessionCustomEvent: events.custom,
    },
    extensions: { getExtension: () => undefined },
    workspace: {
      getConfiguration: (section) => ({
        get: (key, fallback) => (settings.has(`${section}.${key}`) ? settings.get(`${section}.${key}`) : fallback),
      }),
      onDidChangeConfiguration: events.configuration,
      isTrusted: false,
      onDidGrantWorkspaceTrust: events.trust,
    },
    env: { clipboard: { writeText: async () => {} } },
  };
  function editor(path) {
    return { document: { uri: { fsPath: path }, languageId: 'python' }, setDecorations(type, ranges) { decorationsSet.push({ path, ranges }); } };
  }
  return { vscode, registered, messages, statusItems, decorationsSet, events, editor, settings };
}

function install(mock) {
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (request, ...rest) {
    if (request === 'vscode') return 'vscode';
    return resolve.call(this, request, ...rest);
  };
  require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports: mock.vscode };
}

module.exports = { createMock, install };
