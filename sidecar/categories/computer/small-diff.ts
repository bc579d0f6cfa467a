/**
 * A small unified-style diff of one edit: the changed lines between the common head and tail of
 * both texts, with `context` lines around, `-` for removed and `+` for added, at most `maxLines`.
 */
export function smallDiff(before: string, after: string, options: { context?: number; maxLines?: number } = {}): string {
  const context = options.context ?? 2;
  const maxLines = options.maxLines ?? 60;
  const a = before.split('\n');
  const b = after.split('\n');
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length - 1;
  let endB = b.length - 1;
  while (endA >= start && endB >= start && a[endA] === b[endB]) {
    endA--;
    endB--;
  }
  const from = Math.max(0, start - context);
  const lines: string[] = [`@@ line ${start + 1} @@`];
  for (let i = from; i < start; i++) lines.push(`  ${a[i]}`);
  for (let i = start; i <= endA; i++) lines.push(`- ${a[i]}`);
  for (let i = start; i <= endB; i++) lines.push(`+ ${b[i]}`);
  for (let i = endA + 1; i <= Math.min(a.length - 1, endA + context); i++) lines.push(`  ${a[i]}`);
  if (lines.length <= maxLines) return lines.join('\n');
  return [...lines.slice(0, maxLines), `[… ${lines.length - maxLines} more diff lines …]`].join('\n');
}
