// The language server's side in VS Code: which command starts `neural-dap lsp`, which documents it
// serves and which settings it gets. No `vscode` import, so it is unit-tested without VS Code.

export const LSP_ARGS = ['-m', 'neural_dap', 'lsp'];
export const SETTINGS_SECTION = 'neuralDap';

export interface ServerCommand {
  command: string;
  args: string[];
}

/** `python -m neural_dap lsp` with the interpreter that has neural-dap. */
export function serverCommand(interpreter: string): ServerCommand {
  return { command: interpreter, args: [...LSP_ARGS] };
}

/** Python files on disk and unsaved ones. */
export const DOCUMENT_SELECTOR = [
  { scheme: 'file', language: 'python' },
  { scheme: 'untitled', language: 'python' },
];

const SERVER_KEYS = ['world', 'model', 'limits', 'autoRun', 'maxSteps', 'maxPredictions', 'debounceMs'] as const;

/** The settings the server reads (initializationOptions), from the `neuralDap` section. */
export function serverSettings(section: { get<T>(key: string): T | undefined }): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of SERVER_KEYS) {
    const value = section.get<unknown>(key);
    if (value !== undefined && value !== null) {
      out[key] = value;
    }
  }
  return out;
}

/** What the server starts with: the settings, and whether VS Code's Workspace Trust trusts the
 * workspace. The server runs a file's code on its own (recorded runs on open) only in a trusted one;
 * it reads this from initializationOptions only, so a repository's settings cannot claim it. */
export function initializationOptions(section: { get<T>(key: string): T | undefined }, trusted: boolean): Record<string, unknown> {
  return { ...serverSettings(section), trustedWorkspace: trusted };
}

/** Whether a configuration change needs the server restarted (not just told the new settings). */
export function needsRestart(affects: (section: string) => boolean): boolean {
  return affects(`${SETTINGS_SECTION}.languageServer.enabled`) || affects(`${SETTINGS_SECTION}.python`);
}
