// Imported as "./format.js" (the .js → .ts rule of TypeScript's bundler resolution).
export function fmt(template: string, values: Record<string, string | number>): string {
  return template.replace(/\{(\w+)\}/g, (_m, key: string) => String(values[key] ?? `{${key}}`));
}
export default fmt;
