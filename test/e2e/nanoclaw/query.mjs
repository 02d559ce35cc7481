// The NanoClaw agent runner, reduced to its engine: the Claude Agent SDK's
// query() with the settings sources NanoClaw uses (project + user), so the
// command hooks in $HOME/.claude/settings.json run, and ANTHROPIC_BASE_URL
// from the environment. Prints every SDK message as one JSON line.
import { pathToFileURL } from 'node:url';

const { query } = await import(pathToFileURL(process.env.SDK_ENTRY).href);
const q = query({
  prompt: process.env.E2E_PROMPT,
  options: {
    cwd: process.env.E2E_CWD,
    settingSources: ['project', 'user'],
    model: 'claude-e2e-fake',
    maxTurns: 1,
    tools: [],
    // no tools, so no permission prompts (bypassPermissions is refused as root)
    env: { ...process.env },
    stderr: (d) => process.stderr.write(d),
  },
});
const timer = setTimeout(() => { console.error('query.mjs: no result in time'); process.exit(3); }, Number(process.env.E2E_TIMEOUT_MS || 120000));
for await (const m of q) {
  console.log(JSON.stringify(m));
}
clearTimeout(timer);
