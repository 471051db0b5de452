// Starts and stops the neural-dap language server with vscode-languageclient, following the
// `neuralDap.languageServer.enabled` setting and Workspace Trust: the server is told whether the
// workspace is trusted when it starts, and restarted when the user grants trust (VS Code has no
// revoking event: trust taken back reloads the window).

import * as vscode from 'vscode';
import { DOCUMENT_SELECTOR, initializationOptions, needsRestart, serverCommand, SETTINGS_SECTION } from './language';

export interface Startable {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export type ClientFactory = (command: string, args: string[], settings: Record<string, unknown>, output: vscode.OutputChannel) => Startable;

/** The real client: vscode-languageclient over the server's stdio, loaded only when used. */
export const languageClientFactory: ClientFactory = (command, args, settings, output) => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const lc = require('vscode-languageclient/node') as typeof import('vscode-languageclient/node');
  return new lc.LanguageClient(
    'neuralDap',
    'neural-dap language server',
    { command, args, transport: lc.TransportKind.stdio },
    {
      documentSelector: DOCUMENT_SELECTOR,
      synchronize: { configurationSection: SETTINGS_SECTION },
      initializationOptions: settings,
      outputChannel: output,
    },
  );
};

export class LanguageServerHost implements vscode.Disposable {
  private client: Startable | undefined;

  constructor(
    private readonly interpreter: () => Promise<string>,
    private readonly output: vscode.OutputChannel,
    private readonly factory: ClientFactory = languageClientFactory,
  ) {}

  get running(): boolean {
    return this.client !== undefined;
  }

  async sync(): Promise<void> {
    const section = vscode.workspace.getConfiguration(SETTINGS_SECTION);
    const enabled = section.get<boolean>('languageServer.enabled', true);
    if (!enabled) {
      await this.stop();
      return;
    }
    if (this.client) {
      return;
    }
    const { command, args } = serverCommand(await this.interpreter());
    try {
      const client = this.factory(command, args, initializationOptions(section, vscode.workspace.isTrusted), this.output);
      this.client = client;
      await client.start();
    } catch (error) {
      this.client = undefined;
      const message = `neural-dap: the language server did not start (${command} ${args.join(' ')}): ${String((error as Error).message ?? error)}`;
      this.output.appendLine(message);
      void vscode.window.showErrorMessage(message);
    }
  }

  async onConfigurationChanged(event: vscode.ConfigurationChangeEvent): Promise<void> {
    if (needsRestart((section) => event.affectsConfiguration(section))) {
      await this.stop();
      await this.sync();
    }
  }

  /** The user trusted the workspace: a server started untrusted starts again, trusted. */
  async onTrustGranted(): Promise<void> {
    if (this.client) {
      await this.stop();
      await this.sync();
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      await client.stop();
    }
  }

  dispose(): void {
    void this.stop();
  }
}
