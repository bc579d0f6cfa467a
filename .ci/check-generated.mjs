// Fails when src/gen/ is not exactly what `buf generate` makes from proto/ (stale or hand-edited).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const root = process.cwd();
const scratch = mkdtempSync(join(tmpdir(), 'gen-check-'));

function listFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...listFiles(path));
    else out.push(path);
  }
  return out;
}

try {
  execFileSync(join(root, 'node_modules/.bin/buf'), ['generate', '-o', scratch], { stdio: 'inherit' });
  const fresh = join(scratch, 'src/gen');
  const committed = join(root, 'src/gen');
  const freshFiles = listFiles(fresh).map((f) => relative(fresh, f)).sort();
  const committedFiles = listFiles(committed).map((f) => relative(committed, f)).sort();
  const problems = [];
  for (const f of new Set([...freshFiles, ...committedFiles])) {
    if (!freshFiles.includes(f)) problems.push(`src/gen/${f} is not generated from proto/ any more`);
    else if (!committedFiles.includes(f)) problems.push(`src/gen/${f} is missing`);
    else if (!readFileSync(join(fresh, f)).equals(readFileSync(join(committed, f)))) {
      problems.push(`src/gen/${f} is stale`);
    }
  }
  if (problems.length > 0) {
    console.error(problems.join('\n'));
    console.error('Run `npm run generate` and commit src/gen/.');
    process.exit(1);
  }
  console.log(`src/gen is up to date (${freshFiles.length} file(s))`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
