import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { findJsonProblem, isForbiddenKey } from '../security/object-keys';
import { TEXT_PROBLEM_MESSAGES } from '../security/storable-text';
import { configSchema, type AppConfig } from './config-schema';

export class ConfigError extends Error {}

type Tree = { [key: string]: unknown };

/** Plain environment variables that deployments commonly set, mapped onto configuration keys. */
const WELL_KNOWN_ENV: Record<string, string> = {
  PORT: 'Api:Port',
  TEMPORAL_ADDRESS: 'Temporal:Address',
  TEMPORAL_NAMESPACE: 'Temporal:Namespace',
  DATABASE_URL: 'Database:Url',
};

/** Sets `a:b:c` in the tree; key matching is case-insensitive, as in ASP.NET configuration. */
function setPath(tree: Tree, path: string, value: unknown): void {
  const parts = path.split(':').filter(Boolean);
  const forbidden = parts.find(isForbiddenKey);
  if (forbidden) throw new ConfigError(`configuration key ${path}: "${forbidden}" is not a configuration name`);
  let node = tree;
  parts.forEach((part, index) => {
    const existing = Object.keys(node).find((key) => key.toLowerCase() === part.toLowerCase()) ?? part;
    if (index === parts.length - 1) {
      node[existing] = value;
      return;
    }
    const child = node[existing];
    if (!child || typeof child !== 'object' || Array.isArray(child)) {
      node[existing] = Array.isArray(child) ? { ...child } : {};
    }
    node = node[existing] as Tree;
  });
}

function sectionNames(): string[] {
  return Object.keys(configSchema.shape);
}

export function collectOverrides(env: NodeJS.ProcessEnv, argv: readonly string[]): Array<[string, string]> {
  const sections = sectionNames().map((s) => s.toLowerCase());
  const overrides: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (WELL_KNOWN_ENV[name]) overrides.push([WELL_KNOWN_ENV[name], value]);
    else if (name.includes('__') && sections.includes(name.split('__')[0].toLowerCase())) {
      overrides.push([name.split('__').join(':'), value]);
    }
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--') || !arg.includes(':')) continue;
    const [key, inline] = arg.slice(2).split(/=(.*)/s, 2);
    if (inline !== undefined) overrides.push([key, inline]);
    else if (i + 1 < argv.length) overrides.push([key, argv[++i]]);
    else throw new ConfigError(`flag --${key} has no value`);
  }
  return overrides;
}

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  argv?: readonly string[];
  /** Configuration given in code (tests); replaces the JSON file. */
  base?: Record<string, unknown>;
}

/** appsettings.json (path from APPSETTINGS), then `Section__Key` environment variables, then `--Section:Key value` flags. */
export function loadConfig(options: LoadOptions = {}): AppConfig {
  const env = options.env ?? process.env;
  const argv = options.argv ?? process.argv.slice(2);
  let tree: Tree = {};
  if (options.base) {
    tree = structuredClone(options.base);
  } else {
    const file = resolve(env.APPSETTINGS ?? 'appsettings.json');
    if (env.APPSETTINGS && !existsSync(file))
      throw new ConfigError(`APPSETTINGS points to ${file}, which does not exist`);
    if (existsSync(file)) {
      try {
        tree = JSON.parse(readFileSync(file, 'utf8')) as Tree;
      } catch (error) {
        throw new ConfigError(`${file} is not valid JSON: ${(error as Error).message}`);
      }
      const problem = findJsonProblem(tree);
      if (problem)
        throw new ConfigError(
          `${file}: ${problem.path}: ${
            problem.problem === 'forbidden-key'
              ? 'this key name is not allowed'
              : problem.problem === 'too-deep'
                ? 'nested too deep'
                : TEXT_PROBLEM_MESSAGES[problem.problem]
          }`,
        );
    }
  }
  for (const [key, value] of collectOverrides(env, argv)) setPath(tree, key, value);
  return parseConfig(tree);
}

export function parseConfig(tree: unknown): AppConfig {
  const result = configSchema.safeParse(tree);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `${issue.path.join(':') || '(root)'}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  return result.data;
}
