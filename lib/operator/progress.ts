/**
 * Progress of long work (replay, rebuild, seeding) on a terminal: one line on stderr, redrawn in
 * place, erased when done. When stderr is not a terminal (piped, CI, a test) nothing is written,
 * so scripts read only the result.
 */

export interface Progress {
  /** `done` units of work finished, of `total` when it is known. */
  update(done: number, total?: number): void;
  /** Erases the line. */
  finish(): void;
}

/** The part of a stream progress needs (process.stderr fits). */
export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): boolean;
}

const BAR_WIDTH = 24;
const NONE: Progress = { update: () => undefined, finish: () => undefined };

/** `label [#########---------------]  38% 380/1000` or, without a total, `label 380`. */
export const progressLine = (label: string, done: number, total?: number): string => {
  if (total === undefined || total <= 0) return `${label} ${done}`;
  const share = Math.min(1, done / total);
  const filled = Math.round(share * BAR_WIDTH);
  const percent = String(Math.floor(share * 100)).padStart(3);
  return `${label} [${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${percent}% ${done}/${total}`;
};

/**
 * A progress line for `label` on `stream` (stderr by default), or nothing when it is no terminal.
 * Redrawn only when what it shows changes: at most once per whole percent, or per 100 units
 * without a total.
 */
export const startProgress = (label: string, stream: ProgressStream = process.stderr): Progress => {
  if (!stream.isTTY) return NONE;
  let shown = '';
  let drawn = false;
  return {
    update(done, total) {
      const step =
        total === undefined ? `${Math.floor(done / 100)}` : `${Math.floor((done / Math.max(1, total)) * 100)}`;
      if (step === shown) return;
      shown = step;
      drawn = true;
      const width = stream.columns && stream.columns > 1 ? stream.columns - 1 : 79;
      stream.write(`\r${progressLine(label, done, total).slice(0, width)}\u001b[K`);
    },
    finish() {
      if (drawn) stream.write('\r\u001b[K');
    },
  };
};

/** Runs `work` with a progress line that is always erased afterwards. */
export const withProgress = async <T>(
  label: string,
  work: (update: Progress['update']) => Promise<T>,
  stream?: ProgressStream,
): Promise<T> => {
  const progress = startProgress(label, stream);
  try {
    return await work((done, total) => progress.update(done, total));
  } finally {
    progress.finish();
  }
};
