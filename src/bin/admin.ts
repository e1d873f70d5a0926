import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config';
import { createPool } from '../store/db';
import { migrate } from '../store/migrate';
import { accountExists, createAccount, createProject, findProject } from '../store/accounts';
import { listApiKeys, revokeApiKey } from '../store/api-keys';
import { issueApiKey, issueServiceToken } from '../auth/provisioning';
import { parseScopeList, PRESETS, type Preset } from '../auth/scopes';
import { signDevIdpToken } from '../auth/tokens';
import { getBalanceNano, grantCredits, NANO_PER_CREDIT } from '../billing/credits';
import { ADMIN_EXTENSIONS } from './admin-extensions';
import { need, type Flags } from './admin-flags';
import { revokeServiceToken } from '../store/service-tokens';

/**
 * The console, as a CLI: `npm run -s admin -- <command> [--flags]`.
 * Prints JSON on stdout; on error a message on stderr and exit code 1.
 */
const USAGE = `commands:
  account create --name N
  project create --account ID --name N
  key create --project ID --preset all|read_only|restricted [--scopes chat=write,agents=read] [--type personal|project --owner-subject S]
  key revoke --id KEY_ID
  key list --project ID
  credits grant --project ID --credits N
  credits show --project ID
  service-token create --account ID --client-id C
  service-token revoke --id TOKEN_ID   (browser tokens it minted stop working too)
  idp-token create --subject S --account ID[,ID...]   (valid for 1 hour)
  dev-credentials            (creates or prints .data/dev-credentials.json)
${ADMIN_EXTENSIONS.map((e) => `  ${e.usage}`).join('\n')}`;


const json = (value: unknown) =>
  JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2);

async function main(): Promise<void> {
  // Strict: a misspelt flag (`--scope`) or one without its value is an error, never ignored or
  // read as "true"; so is a flag the command does not take, a repeated one or a stray word.
  const { positionals, values, tokens } = parseArgs({
    tokens: true,
    allowPositionals: true,
    strict: true,
    options: {
      ...Object.fromEntries(
        ['name', 'account', 'project', 'preset', 'scopes', 'type', 'owner-subject', 'id', 'credits', 'client-id', 'subject', 'password', 'username', 'enabled'].map(
          (name) => [name, { type: 'string' as const }],
        ),
      ),
      restart: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const flags = Object.fromEntries(Object.entries(values).map(([name, value]) => [name, value === true ? 'true' : value === false ? undefined : value])) as Flags;
  if (positionals.length === 0 || positionals[0] === 'help' || flags.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const command = positionals.slice(0, 2).join(' ');
  checkFlags(positionals, tokens);
  const config = loadConfig();
  const db = createPool(config.DATABASE_URL, 2);
  try {
    await migrate(db);
    const result = await run(command, positionals, flags, db, config);
    process.stdout.write(`${json(result)}\n`);
  } finally {
    await db.end();
  }
}

/** The flags each command takes: those its usage line names. */
const FLAGS_OF = new Map(
  USAGE.split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .map((words) => [commandWords(words).join(' '), new Set(words.flatMap((word) => /^\[?--([a-z-]+)/.exec(word)?.[1] ?? []))] as const),
);

/** A usage line's command: its leading plain words (`site async-execution`, `dev-credentials`). */
function commandWords(words: string[]): string[] {
  const end = words.findIndex((word) => !/^[a-z][a-z-]*$/.test(word));
  return end < 0 ? words : words.slice(0, end);
}

function checkFlags(positionals: string[], tokens: Array<{ kind: string; name?: string }>): void {
  const words = FLAGS_OF.has(positionals[0]!) ? 1 : 2;
  const takes = FLAGS_OF.get(positionals.slice(0, words).join(' '));
  if (!takes) throw new Error(`unknown command '${positionals.join(' ')}'\n${USAGE}`);
  if (positionals.length > words) throw new Error(`unexpected '${positionals.slice(words).join(' ')}' after '${positionals.slice(0, words).join(' ')}'`);
  const seen = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    if (!takes.has(token.name!)) throw new Error(`--${token.name} does not apply to '${positionals.slice(0, words).join(' ')}'`);
    if (seen.has(token.name!)) throw new Error(`--${token.name} is given twice`);
    seen.add(token.name!);
  }
}

async function run(command: string, positionals: string[], flags: Flags, db: ReturnType<typeof createPool>, config: ReturnType<typeof loadConfig>): Promise<unknown> {
  switch (command) {
    case 'account create':
      return createAccount(db, need(flags, 'name'));
    case 'project create':
      return createProject(db, need(flags, 'account'), need(flags, 'name'));
    case 'key create': {
      const preset = need(flags, 'preset') as Preset;
      if (!PRESETS.includes(preset)) throw new Error(`--preset must be one of ${PRESETS.join(', ')}`);
      const type = flags.type as 'personal' | 'project' | undefined;
      if (type && type !== 'personal' && type !== 'project') throw new Error('--type must be personal or project');
      // Presets other than restricted fix every scope: the list would be ignored.
      if (flags.scopes && preset !== 'restricted') throw new Error('--scopes needs --preset restricted');
      // Only a personal key has an owner: without --type the subject would be dropped silently.
      if (flags['owner-subject'] && type !== 'personal') throw new Error('--owner-subject needs --type personal');
      return issueApiKey(db, {
        projectId: need(flags, 'project'),
        preset,
        scopes: flags.scopes ? parseScopeList(flags.scopes) : undefined,
        type,
        ownerSubject: flags['owner-subject'],
      });
    }
    case 'key revoke': {
      const id = need(flags, 'id');
      if (!(await revokeApiKey(db, id))) throw new Error(`no key with id ${id}`);
      return { id, revoked: true };
    }
    case 'key list':
      return { data: await listApiKeys(db, await existingProject(db, need(flags, 'project'))) };
    case 'credits grant': {
      const credits = need(flags, 'credits');
      if (!/^\d+(\.\d{1,9})?$/.test(credits)) throw new Error('--credits must be a positive decimal number with at most 9 decimals (e.g. 100 or 0.5)');
      const [whole, fraction = ''] = credits.split('.');
      const nano = BigInt(whole!) * NANO_PER_CREDIT + BigInt(fraction.padEnd(9, '0'));
      if (nano > MAX_GRANT_NANO) throw new Error(`--credits must be at most ${MAX_GRANT_NANO / NANO_PER_CREDIT}`);
      const balance = await grantCredits(db, need(flags, 'project'), nano, 'admin grant');
      return { project_id: flags.project, balance_nano: balance };
    }
    case 'credits show':
      return { project_id: flags.project, balance_nano: await getBalanceNano(db, await existingProject(db, need(flags, 'project'))) };
    case 'service-token create':
      return issueServiceToken(db, need(flags, 'account'), need(flags, 'client-id'));
    case 'service-token revoke': {
      const id = need(flags, 'id');
      if (!(await revokeServiceToken(db, id))) throw new Error(`no service token with id ${id}`);
      return { id, revoked: true };
    }
    case 'idp-token create': {
      // A user of several accounts: --account A,B (its account_ids claim lists them all).
      const accountIds = need(flags, 'account').split(',').map((id) => id.trim()).filter(Boolean);
      for (const accountId of accountIds) if (!(await accountExists(db, accountId))) throw new Error(`no account with id ${accountId}`);
      return { token: await signDevIdpToken(config, { subject: need(flags, 'subject'), accountIds }) };
    }
    default:
      if (positionals[0] === 'dev-credentials') return devCredentials(db);
      for (const extension of ADMIN_EXTENSIONS) {
        if (extension.command === command) return extension.run(db, flags, config);
      }
      throw new Error(`unknown command '${positionals.join(' ')}'\n${USAGE}`);
  }
}

// Balances are bigint nano-credits: one grant stays far below their limit (2^63 - 1).
const MAX_GRANT_NANO = 1_000_000_000n * NANO_PER_CREDIT;

async function existingProject(db: ReturnType<typeof createPool>, projectId: string): Promise<string> {
  if (!(await findProject(db, projectId))) throw new Error(`no project with id ${projectId}`);
  return projectId;
}

/** First start: a development account, project with credits and an `all` key, kept in .data/. */
async function devCredentials(db: ReturnType<typeof createPool>) {
  const file = path.join(__dirname, '../../.data/dev-credentials.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8'));
  const account = await createAccount(db, 'Development');
  const project = await createProject(db, account.id, 'Development');
  await grantCredits(db, project.id, 1000n * NANO_PER_CREDIT, 'development grant');
  const key = await issueApiKey(db, { projectId: project.id, preset: 'all' });
  const credentials = { account_id: account.id, project_id: project.id, key: key.key };
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  return credentials;
}

main().catch((error: Error & { code?: string; detail?: string }) => {
  const message = error.code === '23503' && error.detail ? missingRecord(error.detail) : error.message;
  process.stderr.write(`admin: ${message}\n`);
  process.exit(1);
});

/**
 * A foreign key the database refused, as the record that is missing: `Key (project_id)=(proj_x)
 * is not present in table "projects".` becomes `no project with id proj_x`.
 */
function missingRecord(detail: string): string {
  const match = /^Key \(\w+\)=\((.*)\) is not present in table "(\w+)"/.exec(detail);
  if (!match) return `no such record: ${detail}`;
  return `no ${match[2]!.replace(/_/g, ' ').replace(/s$/, '')} with id ${match[1]}`;
}
