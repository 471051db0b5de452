// The VS Code side of neural-dap: starts the adapter, adds time-travel commands, shows how a neural
// session is doing (status bar) and where its predictions diverged from reality (line decorations),
// and a value's history and origin as quick picks that travel to the moment picked.

import { execFile } from 'child_process';
import * as vscode from 'vscode';
import { chooseAdapter, installHint, LaunchConfig, modelLabel, pickInterpreter, withDefaults } from './config';
import { DivergenceEvent, DivergenceMarks } from './decorations';
import { ChangePage, expressionOf, historyItems, historyTitle, MomentItem, Origin, originItems, originTitle } from './history';
import { LanguageServerHost } from './languageClient';
import { StatusBody, statusText, statusTooltip } from './status';

export const DEBUG_TYPE = 'neural-python';

export function activate(context: vscode.ExtensionContext): LanguageServerHost {
  const output = vscode.window.createOutputChannel('neural-dap');
  const language = new LanguageServerHost(
    () => pickInterpreter({ python: settingPython() }, () => pythonExtensionInterpreter(undefined)),
    output,
  );
  const status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  status.command = 'neuralDap.showSessionSummary';
  const marks = new DivergenceMarks();
  const decoration = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('diffEditor.removedLineBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorWarning.foreground'),
    overviewRulerLane: vscode.OverviewRulerLane.Right,
  });

  const redraw = (): void => {
    for (const editor of vscode.window.visibleTextEditors) {
      const ranges = marks.marks(editor.document.uri.fsPath).map((m) => ({
        range: new vscode.Range(m.line, 0, m.line, Number.MAX_SAFE_INTEGER),
        hoverMessage: new vscode.MarkdownString('**neural-dap: prediction ≠ reality**\n\n' + m.hover),
      }));
      editor.setDecorations(decoration, ranges);
    }
  };

  context.subscriptions.push(
    output,
    status,
    decoration,
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, new ConfigurationProvider()),
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, new AdapterFactory()),
    vscode.commands.registerCommand('neuralDap.stepBackInto', () => customRequest('stepBackInto')),
    vscode.commands.registerCommand('neuralDap.stepBackOut', () => customRequest('stepBackOut')),
    vscode.commands.registerCommand('neuralDap.showSessionSummary', async () => {
      const session = activeNeuralSession();
      if (!session) {
        void vscode.window.showInformationMessage('No neural-dap session is running.');
        return;
      }
      const summary = await session.customRequest('sessionSummary');
      output.clear();
      output.appendLine(`neural-dap session summary (${session.name})`);
      output.appendLine(JSON.stringify(summary, null, 2));
      output.show(true);
    }),
    vscode.commands.registerCommand('neuralDap.switchBranch', () => switchBranch()),
    vscode.commands.registerCommand('neuralDap.showValueHistory', (context?: unknown) => showValueHistory(context)),
    vscode.commands.registerCommand('neuralDap.showValueOrigin', (context?: unknown) => showValueOrigin(context)),
    vscode.debug.onDidStartDebugSession((session) => {
      if (session.type === DEBUG_TYPE && (session.configuration as LaunchConfig).world === 'neural') {
        marks.clear();
        redraw();
        status.text = statusText({ world: 'neural', reconcile: (session.configuration as LaunchConfig).reconcile }, modelLabel((session.configuration as LaunchConfig).model));
        status.tooltip = 'neural-dap: starting';
        status.show();
      }
    }),
    vscode.debug.onDidReceiveDebugSessionCustomEvent((event) => {
      if (event.session.type !== DEBUG_TYPE) {
        return;
      }
      if (event.event === 'neuralDap/status') {
        const body = event.body as StatusBody;
        status.text = statusText(body, modelLabel((event.session.configuration as LaunchConfig).model));
        status.tooltip = statusTooltip(body);
        status.show();
      } else if (event.event === 'neuralDap/divergence') {
        marks.add(event.body as DivergenceEvent);
        redraw();
      }
    }),
    vscode.debug.onDidTerminateDebugSession((session) => {
      if (session.type === DEBUG_TYPE) {
        status.hide();
      }
    }),
    vscode.window.onDidChangeVisibleTextEditors(() => redraw()),
    language,
    vscode.workspace.onDidChangeConfiguration((event) => language.onConfigurationChanged(event)),
    vscode.workspace.onDidGrantWorkspaceTrust(() => language.onTrustGranted()),
  );
  void language.sync();
  return language;
}

export function deactivate(): void {
  // everything registered is disposed through the context's subscriptions
}

function activeNeuralSession(): vscode.DebugSession | undefined {
  const session = vscode.debug.activeDebugSession;
  return session && session.type === DEBUG_TYPE ? session : undefined;
}

async function customRequest(command: string): Promise<void> {
  const session = activeNeuralSession();
  if (!session) {
    void vscode.window.showInformationMessage('No neural-dap session is running.');
    return;
  }
  try {
    await session.customRequest(command, { threadId: 1 });
  } catch (error) {
    void vscode.window.showErrorMessage(`neural-dap: ${command} failed: ${String((error as Error).message ?? error)}`);
  }
}

interface BranchInfo {
  id: number;
  current: boolean;
  description: string;
}

/** What-if branches (setVariable in the past runs the program again): pick one to stand on. */
async function switchBranch(): Promise<void> {
  const session = activeNeuralSession();
  if (!session) {
    void vscode.window.showInformationMessage('No neural-dap session is running.');
    return;
  }
  try {
    const answer = (await session.customRequest('branches')) as { branches: BranchInfo[] };
    const items = answer.branches.map((b) => ({ label: `${b.current ? '$(check) ' : ''}branch ${b.id}`, description: b.description, id: b.id, current: b.current }));
    const picked = await vscode.window.showQuickPick(items, { placeHolder: 'What-if branch to stand on (set a value with Set Value in Variables)' });
    if (picked && !picked.current) {
      await session.customRequest('branches', { switch: picked.id });
    }
  } catch (error) {
    void vscode.window.showErrorMessage(`neural-dap: branches failed: ${String((error as Error).message ?? error)}`);
  }
}

const HISTORY_ROWS = 200; // changes listed at once; the title says how many there are in all

/** Every change of a value over the recorded run (`valueHistory`); the row picked is travelled to. */
async function showValueHistory(context: unknown): Promise<void> {
  const session = activeNeuralSession();
  if (!session) {
    void vscode.window.showInformationMessage('No neural-dap session is running.');
    return;
  }
  const expression = await askExpression(context, 'Value history');
  if (!expression) {
    return;
  }
  try {
    const args = { expression, frameId: focusedFrameId(session), count: HISTORY_ROWS };
    const page = (await session.customRequest('valueHistory', args)) as ChangePage;
    const title = historyTitle(expression, page);
    if (!page.items.length) {
      void vscode.window.showInformationMessage(`neural-dap: ${title}`);
      return;
    }
    await pickAndTravel(session, historyItems(page), title);
  } catch (error) {
    void vscode.window.showErrorMessage(`neural-dap: value history failed: ${String((error as Error).message ?? error)}`);
  }
}

/** Where a value came from (`valueOrigin`): the chain back to where it was computed; a step picked is travelled to. */
async function showValueOrigin(context: unknown): Promise<void> {
  const session = activeNeuralSession();
  if (!session) {
    void vscode.window.showInformationMessage('No neural-dap session is running.');
    return;
  }
  const expression = await askExpression(context, 'Value origin');
  if (!expression) {
    return;
  }
  try {
    const origin = (await session.customRequest('valueOrigin', { expression, frameId: focusedFrameId(session) })) as Origin;
    const title = originTitle(origin);
    if (!origin.steps.length) {
      void vscode.window.showInformationMessage(`neural-dap: ${title}`);
      return;
    }
    await pickAndTravel(session, originItems(origin), title);
  } catch (error) {
    void vscode.window.showErrorMessage(`neural-dap: value origin failed: ${String((error as Error).message ?? error)}`);
  }
}

/** The Variables-view entry the command was run on, else an expression typed in (the editor's selection offered). */
async function askExpression(context: unknown, what: string): Promise<string | undefined> {
  const chosen = expressionOf(context);
  if (chosen) {
    return chosen;
  }
  const editor = vscode.window.activeTextEditor;
  const selected = editor && !editor.selection.isEmpty ? editor.document.getText(editor.selection).trim() : '';
  const typed = await vscode.window.showInputBox({
    title: `neural-dap: ${what}`,
    prompt: 'A variable, an attribute path or an item: x, self.items, d["k"], xs[3]',
    value: selected.includes('\n') ? '' : selected,
  });
  return typed && typed.trim() ? typed.trim() : undefined;
}

/** The frame focused in the Call Stack view, when it is this session's (else the adapter takes the top frame). */
function focusedFrameId(session: vscode.DebugSession): number | undefined {
  const item = vscode.debug.activeStackItem as { session?: vscode.DebugSession; frameId?: number } | undefined;
  if (!item || typeof item.frameId !== 'number') {
    return undefined;
  }
  return item.session === session || (item.session?.id !== undefined && item.session.id === session.id) ? item.frameId : undefined;
}

async function pickAndTravel(session: vscode.DebugSession, items: MomentItem[], title: string): Promise<void> {
  const picked = await vscode.window.showQuickPick(items, { title, placeHolder: title, matchOnDescription: true });
  if (picked) {
    await session.customRequest('travel', { index: picked.index });
  }
}

class ConfigurationProvider implements vscode.DebugConfigurationProvider {
  resolveDebugConfiguration(_folder: vscode.WorkspaceFolder | undefined, config: vscode.DebugConfiguration): vscode.DebugConfiguration | undefined {
    const active = vscode.window.activeTextEditor?.document;
    const resolved = withDefaults(config as LaunchConfig, active?.languageId === 'python' ? active.uri.fsPath : undefined);
    if (!resolved) {
      void vscode.window.showErrorMessage('neural-dap: open a Python file, or add a launch configuration with "program".');
      return undefined;
    }
    return resolved as vscode.DebugConfiguration;
  }

  /** Checked here, not in the adapter factory: returning undefined ends the launch quietly, so the
   * user sees one message (a factory that throws adds VS Code's own modal to ours). */
  async resolveDebugConfigurationWithSubstitutedVariables(
    folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): Promise<vscode.DebugConfiguration | undefined> {
    const launch = config as LaunchConfig;
    if (chooseAdapter(launch, 'python3').kind === 'server') {
      return config;
    }
    const interpreter = await pickInterpreter(withSettingPython(launch), () => pythonExtensionInterpreter(folder?.uri));
    if (!(await isInstalled(interpreter))) {
      void vscode.window.showErrorMessage(installHint(interpreter), 'Open Settings').then((picked) => {
        if (picked) {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'neuralDap.python');
        }
      });
      return undefined;
    }
    return { ...config, python: interpreter };
  }
}

class AdapterFactory implements vscode.DebugAdapterDescriptorFactory {
  async createDebugAdapterDescriptor(session: vscode.DebugSession): Promise<vscode.DebugAdapterDescriptor> {
    const config = session.configuration as LaunchConfig;
    // a child session (the adapter's startDebugging, "subProcess") has no folder of its own: its parent's
    const folder = session.workspaceFolder ?? session.parentSession?.workspaceFolder;
    const interpreter = await pickInterpreter(withSettingPython(config), () => pythonExtensionInterpreter(folder?.uri));
    const choice = chooseAdapter(config, interpreter);
    if (choice.kind === 'server') {
      return new vscode.DebugAdapterServer(choice.port, choice.host);
    }
    return new vscode.DebugAdapterExecutable(choice.command, choice.args, { cwd: folder?.uri.fsPath });
  }
}

/** The setting neuralDap.python, when set: the interpreter that has neural-dap. */
function settingPython(): string | undefined {
  const value = vscode.workspace.getConfiguration('neuralDap').get<string>('python');
  return value && value.trim() ? value.trim() : undefined;
}

/** A launch's own "python" first, then the setting. */
function withSettingPython(config: LaunchConfig): LaunchConfig {
  return typeof config.python === 'string' && config.python.trim() ? config : { ...config, python: settingPython() };
}

async function pythonExtensionInterpreter(resource: vscode.Uri | undefined): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension('ms-python.python');
  if (!extension) {
    return undefined;
  }
  const api = (extension.isActive ? extension.exports : await extension.activate()) as {
    environments?: { getActiveEnvironmentPath?: (r?: vscode.Uri) => { path?: string } };
    settings?: { getExecutionDetails?: (r?: vscode.Uri) => { execCommand?: string[] } };
  };
  const fromEnvironments = api?.environments?.getActiveEnvironmentPath?.(resource)?.path;
  if (fromEnvironments) {
    return fromEnvironments;
  }
  return api?.settings?.getExecutionDetails?.(resource)?.execCommand?.[0];
}

function isInstalled(interpreter: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(interpreter, ['-c', 'import neural_dap'], { timeout: 20000 }, (error) => resolve(!error));
  });
}
