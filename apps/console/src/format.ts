import type { ModelRecord } from './api/types';

export function formatDate(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString() : '—';
}

export function formatNumber(value: number): string {
  if (Number.isInteger(value)) return String(value);
  const abs = Math.abs(value);
  return abs !== 0 && (abs < 1e-3 || abs >= 1e6) ? value.toExponential(3) : String(Number(value.toPrecision(4)));
}

export function modelLabel(model: Pick<ModelRecord, 'project' | 'name'>): string {
  return `${model.project}/${model.name}`;
}

export function shortId(id: string): string {
  return id.slice(0, 8);
}
