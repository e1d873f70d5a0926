/** The admin CLI's flags, after strict parsing: a string per given flag. */
export type Flags = Record<string, string | undefined>;

/** A flag the command cannot do without: missing or blank is an error naming it. */
export function need(flags: Flags, name: string): string {
  const value = flags[name];
  if (!value) throw new Error(`--${name} is required`);
  if (value.trim() === '') throw new Error(`--${name} must not be blank`);
  return value;
}
