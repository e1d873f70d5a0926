import type { Pool } from 'pg';
import type { Config } from '../config';
import { KB_COMMANDS } from './admin-kb-commands';
import { SITE_AND_PLATFORM_COMMANDS } from './admin-site-commands';

/** Admin commands contributed by other modules (platform users, sites, ...). */
export interface AdminExtension {
  command: string;
  usage: string;
  run(db: Pool, flags: Record<string, string | undefined>, config: Config): Promise<unknown>;
}

export const ADMIN_EXTENSIONS: AdminExtension[] = [...SITE_AND_PLATFORM_COMMANDS, ...KB_COMMANDS];
