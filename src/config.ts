import { z } from 'zod';

/**
 * Configuration comes only from environment variables, parsed once at start-up.
 * A bad or missing value stops the process with a message naming the variable.
 * Defaults point at the local services started by scripts/services.sh.
 */
const port = z.coerce.number().int().min(0).max(65535);
const optionalString = z.string().min(1).optional();
const bool = z
  .enum(['true', 'false', '1', '0'])
  .transform((v) => v === 'true' || v === '1');

// Public (it is in this file): anyone could sign browser and identity-provider tokens with it,
// so only a development environment may run on it.
const DEVELOPMENT_GATEWAY_SECRET = 'development-secret-change-me-development-secret';

export const ConfigSchema = z.object({
  ENVIRONMENT: z.string().min(1).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PORT: port.default(8080),
  PLATFORM_PORT: port.default(8081),
  SIMULATOR_PORT: port.default(8090),
  HOST: z.string().default('127.0.0.1'),
  /**
   * The api's public address (`https://gateway.example.com`), as clients reach it: the OAuth
   * metadata's issuer and endpoints. Unset: the address the request came in on (never the
   * request's Host header, which the client chooses).
   */
  PUBLIC_BASE_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .refine((url) => !/[?#]/.test(url), 'must have no query or fragment')
    .transform((url) => url.replace(/\/+$/, ''))
    .optional(),
  DATABASE_URL: z.url().default('postgres://gateway:gateway@127.0.0.1:54329/gateway'),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(500).default(20),
  /** The longest a statement may go unanswered before it fails as an outage (ms; src/store/db.ts). */
  DATABASE_QUERY_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  TEMPORAL_ADDRESS: z.string().min(1).default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('agent-runs'),
  ELASTICSEARCH_URL: z.url().default('http://127.0.0.1:9201'),
  /** Index/alias name prefix, so tests and several deployments can share one cluster. */
  ELASTICSEARCH_INDEX_PREFIX: z.string().regex(/^[a-z0-9_-]+$/).default('kb'),
  /** JSON request body limit for ordinary routes (bytes). */
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  /** Request size limit of POST /v1/messages (bytes). */
  MESSAGES_BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(32 * 1024 * 1024),
  /** Per-key token bucket: sustained requests per second and burst size. */
  RATE_LIMIT_PER_SECOND: z.coerce.number().min(0).default(200),
  RATE_LIMIT_BURST: z.coerce.number().int().min(1).default(400),
  RATE_LIMIT_ENABLED: bool.default(true),
  /**
   * The platform API's bucket, per presented credential (or client address): every request
   * with Basic credentials costs a scrypt check, so it is far below the gateway's.
   */
  PLATFORM_RATE_LIMIT_PER_SECOND: z.coerce.number().min(0).default(10),
  PLATFORM_RATE_LIMIT_BURST: z.coerce.number().int().min(1).default(30),
  /** Secret for signing browser session tokens and encrypting site secrets (hex or any string, >= 32 chars). */
  GATEWAY_SECRET: z.string().min(32).default(DEVELOPMENT_GATEWAY_SECRET),
  /** OIDC issuer and JWKS URL for identity-provider tokens; the dev issuer is built in. */
  OIDC_ISSUER: z.string().min(1).default('agent-gateway-dev-issuer'),
  OIDC_JWKS_URL: optionalString,
  OIDC_AUDIENCE: z.string().min(1).default('agent-gateway'),
  OPENAI_API_KEY: optionalString,
  OPENAI_BASE_URL: optionalString,
  ANTHROPIC_API_KEY: optionalString,
  ANTHROPIC_BASE_URL: optionalString,
  GOOGLE_API_KEY: optionalString,
  GOOGLE_BASE_URL: optionalString,
  SIMULATOR_URL: z.url().default('http://127.0.0.1:8090'),
  /** Upstream request timeout for provider calls (ms). */
  UPSTREAM_TIMEOUT_MS: z.coerce.number().int().min(100).default(120000),
  /**
   * Whether registered sites may live on loopback, private or link-local addresses (the
   * gateway calls them for MCP abilities). Unset: only in development, where sites run locally.
   */
  SITE_ALLOW_PRIVATE_ADDRESSES: bool.optional(),
  /** Comma-separated moderation block list (case-insensitive substrings). */
  MODERATION_BLOCKLIST: z.string().default(''),
  /** Agent runs: turn cap, run timer and the time a client-tool pause may wait. */
  RUN_MAX_ITERATIONS: z.coerce.number().int().min(1).default(25),
  RUN_TIMEOUT_MS: z.coerce.number().int().min(100).default(10 * 60 * 1000),
  RUN_ABANDON_AFTER_MS: z.coerce.number().int().min(100).default(24 * 60 * 60 * 1000),
  /** Interval of the worker's reconciler that re-signals sessions with unprocessed events (ms). */
  RECONCILE_INTERVAL_MS: z.coerce.number().int().min(100).default(5000),
  /**
   * Session workflows a worker keeps in memory between their tasks (one a session; one evicted is
   * replayed from its history at its next task). Unset: the SDK's default, sized from the heap
   * (about 2,300 at a 4 GiB heap, some 1 GB of worker memory when full).
   */
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(0).optional(),
  /** Interval of keep-alive comments on the session event stream (ms). */
  EVENT_STREAM_KEEPALIVE_MS: z.coerce.number().int().min(50).default(15000),
  /** How often an open event stream checks again that its caller may still read the session. */
  EVENT_STREAM_ACCESS_RECHECK_MS: z.coerce.number().int().min(0).default(2000),
  /** Open event streams one credential may hold on one api process (more is 429). */
  EVENT_STREAM_MAX_PER_CREDENTIAL: z.coerce.number().int().min(1).default(100),
  /** OpenAI-compatible embeddings endpoint for semantic search; keyword-only when unset. */
  EMBEDDINGS_URL: optionalString,
  EMBEDDINGS_MODEL: optionalString,
  EMBEDDINGS_API_KEY: optionalString,
  /**
   * Which embedder semantic search uses: `local` (all-MiniLM-L6-v2 in-process via ONNX Runtime,
   * files installed from registry packages), `openai` (EMBEDDINGS_URL) or `none` (keyword-only).
   * Unset: `openai` when EMBEDDINGS_URL is set, otherwise `local`.
   */
  EMBEDDINGS_PROVIDER: z.enum(['local', 'openai', 'none']).optional(),
  /** Directory of the local embedding model's files; defaults to the per-user tool cache. */
  EMBEDDINGS_MODEL_DIR: optionalString,
  /** Shards and replicas of the knowledge-base index when it is first created. */
  ELASTICSEARCH_KB_SHARDS: z.coerce.number().int().min(1).max(64).default(1),
  ELASTICSEARCH_KB_REPLICAS: z.coerce.number().int().min(0).max(5).default(0),
});

export type Config = z.infer<typeof ConfigSchema>;

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const input: Record<string, string> = {};
  for (const key of Object.keys(ConfigSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const result = ConfigSchema.safeParse(input);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  if (result.data.ENVIRONMENT !== 'development' && result.data.GATEWAY_SECRET === DEVELOPMENT_GATEWAY_SECRET) {
    throw new ConfigError(`invalid configuration: GATEWAY_SECRET: the development default is public; set a long random secret when ENVIRONMENT is '${result.data.ENVIRONMENT}'`);
  }
  return result.data;
}

/**
 * What the api process needs beyond the shared configuration: outside development, its public
 * address (the OAuth metadata's issuer must be the address clients fetch it from, RFC 8414).
 */
export function checkApiConfig(config: Config): Config {
  if (config.ENVIRONMENT !== 'development' && !config.PUBLIC_BASE_URL) {
    throw new ConfigError(`invalid configuration: PUBLIC_BASE_URL: required when ENVIRONMENT is '${config.ENVIRONMENT}' (the api's public address, e.g. https://gateway.example.com)`);
  }
  return config;
}

export const isDevelopment = (config: Pick<Config, 'ENVIRONMENT'>): boolean => config.ENVIRONMENT === 'development';

export const sitePrivateAddressesAllowed = (config: Pick<Config, 'ENVIRONMENT' | 'SITE_ALLOW_PRIVATE_ADDRESSES'>): boolean =>
  config.SITE_ALLOW_PRIVATE_ADDRESSES ?? isDevelopment(config);
