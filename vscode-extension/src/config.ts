// How a neural-python debug session is started: which Python, which adapter, what to tell the user.
// No `vscode` import here, so the logic is unit-tested without VS Code.

export interface LaunchConfig {
  type?: string;
  request?: string;
  name?: string;
  program?: string;
  python?: string;
  port?: number;
  world?: string;
  model?: unknown;
  reconcile?: string;
  trust?: string;
  [key: string]: unknown;
}

export type AdapterChoice =
  | { kind: 'server'; host: string; port: number }
  | { kind: 'executable'; command: string; args: string[] };

export const ADAPTER_ARGS = ['-m', 'neural_dap', 'adapter'];

/** The configured interpreter, else the Python extension's active one, else python3. */
export async function pickInterpreter(config: LaunchConfig, fromPythonExtension: () => Promise<string | undefined>): Promise<string> {
  if (typeof config.python === 'string' && config.python.trim()) {
    return config.python.trim();
  }
  try {
    const active = await fromPythonExtension();
    if (active && active.trim()) {
      return active.trim();
    }
  } catch {
    // the Python extension is absent or not ready: fall through
  }
  return 'python3';
}

/** A running server when the configuration names a port, else `python -m neural_dap adapter`. */
export function chooseAdapter(config: LaunchConfig, interpreter: string): AdapterChoice {
  if (typeof config.port === 'number' && Number.isInteger(config.port) && config.port > 0) {
    return { kind: 'server', host: '127.0.0.1', port: config.port };
  }
  return { kind: 'executable', command: interpreter, args: [...ADAPTER_ARGS] };
}

export function installHint(interpreter: string): string {
  return `neural-dap is not installed in ${interpreter}. Set it up from a clone of neural-dap (bash scripts/setup.sh) or install its wheel (${interpreter} -m pip install neural_dap-*.whl), then set "python" in launch.json, or the setting neuralDap.python, to that interpreter (in a clone: .venv/bin/python).`;
}

/** A short name for the model of a configuration (status bar, summaries). */
export function modelLabel(model: unknown): string {
  if (model === undefined || model === null || model === 'embedded') {
    return 'embedded';
  }
  if (typeof model === 'string') {
    return shorten(model);
  }
  if (typeof model === 'object') {
    const m = model as { url?: unknown; name?: unknown };
    if (typeof m.name === 'string' && m.name) {
      return shorten(m.name);
    }
    if (typeof m.url === 'string' && m.url) {
      return shorten(m.url);
    }
  }
  return 'model';
}

function shorten(text: string): string {
  const stripped = text.replace(/^https?:\/\//, '').replace(/\/v1\/?$/, '');
  return stripped.length > 32 ? stripped.slice(0, 31) + '…' : stripped;
}

/** Fill what an empty or partial configuration (F5 without launch.json) leaves out. */
export function withDefaults(config: LaunchConfig, activeFile: string | undefined): LaunchConfig | undefined {
  const out: LaunchConfig = { ...config };
  if (!out.type && !out.request && !out.name) {
    if (!activeFile || !activeFile.endsWith('.py')) {
      return undefined;
    }
    out.type = 'neural-python';
    out.request = 'launch';
    out.name = 'neural-dap: time travel';
    out.program = activeFile;
    out.stopOnEntry = true;
  }
  if (!out.program && !out.module && activeFile) {
    out.program = activeFile; // not for `python -m MODULE`: the adapter takes one or the other
  }
  return out;
}
