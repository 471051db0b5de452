// Lines whose predicted state diverged from reality, per file, from `neuralDap/divergence` events.

export interface DivergenceEvent {
  path: string;
  line: number;
  text: string;
}

export class DivergenceMarks {
  private readonly byPath = new Map<string, Map<number, string[]>>();

  add(event: DivergenceEvent): void {
    if (!event.path || !Number.isInteger(event.line) || event.line < 1) {
      return;
    }
    const lines = this.byPath.get(event.path) ?? new Map<number, string[]>();
    const texts = lines.get(event.line) ?? [];
    if (!texts.includes(event.text)) {
      texts.push(event.text);
    }
    lines.set(event.line, texts);
    this.byPath.set(event.path, lines);
  }

  /** (0-based line, hover text) for a file, in line order. */
  marks(path: string): Array<{ line: number; hover: string }> {
    const lines = this.byPath.get(path);
    if (!lines) {
      return [];
    }
    return [...lines.entries()].sort((a, b) => a[0] - b[0]).map(([line, texts]) => ({ line: line - 1, hover: texts.join('\n\n') }));
  }

  paths(): string[] {
    return [...this.byPath.keys()];
  }

  clear(): void {
    this.byPath.clear();
  }

  get count(): number {
    let n = 0;
    for (const lines of this.byPath.values()) {
      n += lines.size;
    }
    return n;
  }
}
