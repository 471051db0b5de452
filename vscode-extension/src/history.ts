// A value's past as quick-pick rows: its changes (the adapter's `valueHistory`) and where it came
// from (`valueOrigin`). Each row carries the event index that `travel` takes, so picking one goes there.
// Pure: no `vscode` import, so the rows are tested without VS Code.

export interface Moment {
  index: number;
  path: string;
  line: number;
  function: string;
  thread?: number;
}

export interface Change {
  moment: Moment; // the first event that shows the new value
  old: string | null;
  new: string | null;
  invocation?: number;
  call?: number;
  statement?: Moment | null; // the statement that made it, where it ran (a callee's line, through any name)
  code?: string; // that statement's source
  note?: string;
}

export interface ChangePage {
  items: Change[];
  start: number;
  count: number;
  total: number;
  totalExact?: boolean;
}

export interface OriginStep {
  expression: string;
  value: string | null;
  moment: Moment;
  statement: string;
  kind: 'assigned' | 'argument' | 'call'; // call: set inside a function this statement called (the next step)
}

export interface Origin {
  expression: string;
  value: string | null;
  steps: OriginStep[];
  end: string;
  reason: string;
}

/** A quick-pick row that travels to `index` when picked. */
export interface MomentItem {
  label: string;
  description: string;
  detail?: string;
  index: number;
}

/** What the Variables view passes to a `debug/variables/context` command. */
export interface VariablesContext {
  variable?: { name?: string; evaluateName?: string };
}

const KIND_NOTES: Record<string, string> = {
  argument: ' (argument)',
  call: ' (set inside this call)',
  returned: ' (returned)',
  default: ' (default value)',
  operand: ' (operand: where it was set)',
};
const MAX_VALUE = 60; // a long repr is cut in a row; the Variables view shows it whole

/** The expression a Variables-view entry stands for (`self.items` for an attribute), if any. */
export function expressionOf(context: unknown): string | undefined {
  const variable = (context as VariablesContext | undefined)?.variable;
  const text = variable?.evaluateName || variable?.name;
  return text && text.trim() ? text.trim() : undefined;
}

function shown(value: string | null): string {
  if (value === null) {
    return '(not set)';
  }
  return value.length <= MAX_VALUE ? value : value.slice(0, MAX_VALUE - 1) + '…';
}

function basename(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}

function where(moment: Moment, call?: number): string {
  const ofCall = call ? ` (call ${call})` : '';
  return `${basename(moment.path)} · in ${moment.function}${ofCall} · event ${moment.index}`;
}

/** "line 12: 3 → 5", dated at the statement that made the change (in the function that ran it, a
 * callee's for an object changed through another name), with its code; picking it travels to that
 * statement (the value before it ran). */
export function historyItems(page: ChangePage): MomentItem[] {
  return page.items.map((change) => {
    const at = change.statement ?? change.moment;
    const item: MomentItem = {
      label: `line ${at.line}: ${shown(change.old)} → ${shown(change.new)}`,
      description: where(at, change.call),
      index: at.index,
    };
    const detail = [change.code ? `by ${change.code}` : '', change.note ?? ''].filter((part) => part).join(' — ');
    if (detail) {
      item.detail = detail;
    }
    return item;
  });
}

/** The quick pick's title for a history: how many changes are listed of how many. */
export function historyTitle(expression: string, page: ChangePage): string {
  const shownCount = page.items.length;
  if (!shownCount) {
    return `${expression}: no changes recorded`;
  }
  const total = page.totalExact === false ? `at least ${page.total}` : `${page.total}`;
  const of = page.total > shownCount || page.totalExact === false ? ` (${shownCount} of ${total})` : '';
  return `${expression}: ${shownCount === 1 ? '1 change' : `${shownCount} changes`}${of} — pick one to travel there`;
}

/** One row per step of the chain, newest first: the statement, what it gave, where. */
export function originItems(origin: Origin): MomentItem[] {
  return origin.steps.map((step) => ({
    label: `line ${step.moment.line}: ${step.statement}`,
    description: `${step.expression} = ${shown(step.value)}${KIND_NOTES[step.kind] ?? ''} · ${where(step.moment)}`,
    index: step.moment.index,
  }));
}

/** The quick pick's title for an origin: the value, and why the chain ends where it does. */
export function originTitle(origin: Origin): string {
  if (origin.value === null) {
    return origin.reason;
  }
  return `${origin.expression} = ${shown(origin.value)} — ${origin.end}: ${origin.reason}`;
}
