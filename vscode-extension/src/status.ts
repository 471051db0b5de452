// The status bar text of a running neural session, from the server's `neuralDap/status` event.

export interface StatusBody {
  world?: string;
  dialect?: string;
  model?: { model?: string; url?: string; path?: string; client?: string } | string;
  stops?: number;
  divergences?: number | null;
  statesCompared?: number | null;
  reconcile?: string | null;
}

export function statusText(body: StatusBody, fallbackModel: string): string {
  const model = typeof body.model === 'string' ? body.model : (body.model?.model ?? fallbackModel);
  const parts = [`$(beaker) ${body.world ?? 'neural'}: ${model}`];
  if (body.reconcile && body.reconcile !== 'none') {
    const n = body.divergences ?? 0;
    parts.push(`${n} divergence${n === 1 ? '' : 's'}`);
  }
  return parts.join(' · ');
}

export function statusTooltip(body: StatusBody): string {
  const lines = [`world: ${body.world ?? 'neural'}`, `dialect: ${body.dialect ?? 'nd'}`, `stops: ${body.stops ?? 0}`];
  if (body.reconcile && body.reconcile !== 'none') {
    lines.push(`checked against: ${body.reconcile}`, `states compared: ${body.statesCompared ?? 0}`, `divergences: ${body.divergences ?? 0}`);
  }
  lines.push('Click for the session summary.');
  return lines.join('\n');
}
