import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config';
import { createPool } from '../store/db';
import { migrate } from '../store/migrate';
import { createAccount, createProject } from '../store/accounts';
import { listApiKeys, revokeApiKey } from '../store/api-keys';
import { issueApiKey, issueServiceToken } from '../auth/provisioning';
import { parseScopeList, PRESETS, type Preset } from '../auth/scopes';
import { signDevIdpToken } from '../auth/tokens';
import { getBalanceNano, grantCredits, NANO_PER_CREDIT } from '../billing/credits';
import { ADMIN_EXTENSIONS } from './admin-extensions';

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
  idp-token create --subject S --account ID
  dev-credentials            (creates or prints .data/dev-credentials.json)
${ADMIN_EXTENSIONS.map((e) => `  ${e.usage}`).join('\n')}`;

type Flags = Record<string, string | undefined>;

function need(flags: Flags, name: string): string {
  const value = flags[name];
  if (!value) throw new Error(`--${name} is required`);
  return value;
}

const json = (value: unknown) =>
  JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2);

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    strict: false,
    options: Object.fromEntries(
      ['name', 'account', 'project', 'preset', 'scopes', 'type', 'owner-subject', 'id', 'credits', 'client-id', 'subject', 'password', 'username', 'enabled'].map(
        (name) => [name, { type: 'string' as const }],
      ),
    ),
  });
  const flags = values as Flags;
  if (positionals.length === 0 || positionals[0] === 'help' || flags.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const command = positionals.slice(0, 2).join(' ');
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
      return { data: await listApiKeys(db, need(flags, 'project')) };
    case 'credits grant': {
      const credits = need(flags, 'credits');
      if (!/^\d+(\.\d{1,9})?$/.test(credits)) throw new Error('--credits must be a positive number');
      const [whole, fraction = ''] = credits.split('.');
      const nano = BigInt(whole!) * NANO_PER_CREDIT + BigInt(fraction.padEnd(9, '0'));
      const balance = await grantCredits(db, need(flags, 'project'), nano, 'admin grant');
      return { project_id: flags.project, balance_nano: balance };
    }
    case 'credits show':
      return { project_id: flags.project, balance_nano: await getBalanceNano(db, need(flags, 'project')) };
    case 'service-token create':
      return issueServiceToken(db, need(flags, 'account'), need(flags, 'client-id'));
    case 'idp-token create':
      return { token: await signDevIdpToken(config, { subject: need(flags, 'subject'), accountIds: [need(flags, 'account')] }) };
    default:
      if (positionals[0] === 'dev-credentials') return devCredentials(db);
      for (const extension of ADMIN_EXTENSIONS) {
        if (extension.command === command) return extension.run(db, flags, config);
      }
      throw new Error(`unknown command '${positionals.join(' ')}'\n${USAGE}`);
  }
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
  // A foreign key the database refuses names the missing record (e.g. an unknown account id).
  const message = error.code === '23503' && error.detail ? `no such record: ${error.detail}` : error.message;
  process.stderr.write(`admin: ${message}\n`);
  process.exit(1);
});
