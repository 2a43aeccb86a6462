/**
 * Progress of long work (replay, rebuild, seeding) on a terminal: one line on stderr, redrawn in
 * place, erased when done. When stderr is not a terminal (piped, CI, a test) nothing is written,
 * so scripts read only the result.
 */

/** The part of a stream progress needs (process.stderr fits). */
export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): boolean;
}

const BAR_WIDTH = 24;

/** `label [#########---------------]  38% 380/1000` or, without a total, `label 380`. */
export const progressLine = (label: string, done: number, total?: number): string => {
  if (total === undefined || total <= 0) return `${label} ${done}`;
  const share = Math.min(1, done / total);
  const filled = Math.round(share * BAR_WIDTH);
  const percent = String(Math.floor(share * 100)).padStart(3);
  return `${label} [${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${percent}% ${done}/${total}`;
};

/**
 * Runs `work` with a progress line for `label` on `stream` (stderr by default), always erased
 * afterwards; nothing when it is no terminal. `update` redraws it only when what it shows changes:
 * at most once per whole percent, or per 100 units without a total.
 */
export const withProgress = async <T>(
  label: string,
  work: (update: (done: number, total?: number) => void) => Promise<T>,
  stream: ProgressStream = process.stderr,
): Promise<T> => {
  if (!stream.isTTY) return work(() => undefined);
  let shown = '';
  try {
    return await work((done, total) => {
      const step =
        total === undefined ? `${Math.floor(done / 100)}` : `${Math.floor((done / Math.max(1, total)) * 100)}`;
      if (step === shown) return;
      shown = step;
      const width = stream.columns && stream.columns > 1 ? stream.columns - 1 : 79;
      stream.write(`\r${progressLine(label, done, total).slice(0, width)}\u001b[K`);
    });
  } finally {
    if (shown) stream.write('\r\u001b[K');
  }
};
