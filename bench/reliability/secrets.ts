/**
 * Secret hygiene: every plaintext key a suite creates and every Authorization value it sends is
 * tracked here, then searched for in the raw table dumps and the captured logs.
 */

/** Header values shorter than this are ordinary words ("Bearer", "Basic x"), not secrets. */
export const MIN_SECRET_LENGTH = 16;

export interface SecretFinding {
  what: 'key' | 'authorization';
  /** The first characters only: the report must not print the secret either. */
  preview: string;
}

export class SecretTracker {
  private readonly keys = new Set<string>();
  private readonly authorizations = new Set<string>();

  key(value: string): string {
    this.keys.add(value);
    return value;
  }

  authorization(value: string | undefined): string | undefined {
    if (value !== undefined && value.trim().length >= MIN_SECRET_LENGTH) this.authorizations.add(value);
    return value;
  }

  get counts() {
    return { keys: this.keys.size, authorizations: this.authorizations.size };
  }

  /**
   * Every tracked secret found in `haystack`: a key as is, or without its `wsk_` prefix; a header
   * value as sent, trimmed, or JSON-escaped (as a log line would carry it).
   */
  findIn(haystack: string): SecretFinding[] {
    const findings: SecretFinding[] = [];
    const preview = (value: string) => JSON.stringify(value.slice(0, 10));
    for (const key of this.keys) {
      if (haystack.includes(key) || haystack.includes(key.slice(4)))
        findings.push({ what: 'key', preview: preview(key) });
    }
    for (const value of this.authorizations) {
      const forms = new Set([
        value,
        value.trim(),
        JSON.stringify(value).slice(1, -1),
        JSON.stringify(value.trim()).slice(1, -1),
      ]);
      if ([...forms].some((form) => form.length >= MIN_SECRET_LENGTH && haystack.includes(form))) {
        findings.push({ what: 'authorization', preview: preview(value) });
      }
    }
    return findings;
  }
}
