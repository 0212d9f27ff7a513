/**
 * docker-compose.yml and the Dockerfile, read the way Docker reads them, so
 * the compose tests can run exactly what a `docker compose up` would start:
 * the image's ENTRYPOINT and ENV (final stage of the Dockerfile), then each
 * service's command, environment (merge keys resolved, `${VAR:-default}`
 * interpolated), replica count, volumes, secrets and healthcheck.
 */
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { isAbsolute, join, resolve } from 'node:path'
import { REPO_ROOT } from './cli-process.js'

export const COMPOSE_FILE = join(REPO_ROOT, 'docker-compose.yml')
export const DOCKERFILE = join(REPO_ROOT, 'Dockerfile')

type Yaml = Record<string, unknown>

/** Parses YAML 1.1 with merge keys (`<<: *anchor`), as docker-compose does. */
export function parseYaml(text: string): unknown {
  return parse(text, { merge: true, maxAliasCount: -1 })
}

/**
 * Compose variable interpolation: `$$` is a literal `$`; `$VAR`, `${VAR}`,
 * `${VAR:-default}` (unset or empty), `${VAR-default}` (unset),
 * `${VAR:?error}`, `${VAR?error}`. Unset variables without a default become ''.
 */
export function interpolate(value: string, env: Readonly<Record<string, string | undefined>>): string {
  return value.replace(
    /\$(\$|[A-Za-z_][A-Za-z0-9_]*|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\})/g,
    (whole, simple: string, name?: string, op?: string, arg?: string) => {
      if (simple === '$') return '$'
      if (name === undefined) return env[simple] ?? ''
      const v = env[name]
      switch (op) {
        case undefined:
          return v ?? ''
        case ':-':
          return v === undefined || v === '' ? (arg ?? '') : v
        case '-':
          return v ?? arg ?? ''
        case ':?':
        case '?':
          if (v === undefined || (op === ':?' && v === ''))
            throw new Error(`${whole}: ${arg === '' ? `${name} is required` : arg}`)
          return v
        default:
          throw new Error(`unsupported interpolation ${whole}`)
      }
    }
  )
}

function interpolateDeep(value: unknown, env: Readonly<Record<string, string | undefined>>): unknown {
  if (typeof value === 'string') return interpolate(value, env)
  if (Array.isArray(value)) return value.map(v => interpolateDeep(v, env))
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateDeep(v, env)]))
  return value
}

/** Splits a command string as compose does (shlex): whitespace, single and double quotes, backslashes. */
export function shellSplit(text: string): string[] {
  const out: string[] = []
  let cur = ''
  let inWord = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string
    if (c === "'") {
      const end = text.indexOf("'", i + 1)
      if (end < 0) throw new Error(`unterminated ' in ${text}`)
      cur += text.slice(i + 1, end)
      i = end
      inWord = true
    } else if (c === '"') {
      i++
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '\\' && i + 1 < text.length) i++
        cur += text[i]
        i++
      }
      if (i >= text.length) throw new Error(`unterminated " in ${text}`)
      inWord = true
    } else if (c === '\\' && i + 1 < text.length) {
      cur += text[++i]
      inWord = true
    } else if (/\s/.test(c)) {
      if (inWord) {
        out.push(cur)
        cur = ''
        inWord = false
      }
    } else {
      cur += c
      inWord = true
    }
  }
  if (inWord) out.push(cur)
  return out
}

export interface Mount {
  /** Named volume, bind-mounted host path, or secret file. */
  readonly kind: 'volume' | 'bind' | 'secret'
  /** The volume's name, or the host path (resolved against the compose file's dir). */
  readonly source: string
  /** Where it appears in the container. */
  readonly target: string
}

export interface ComposeService {
  readonly name: string
  readonly replicas: number
  /** The service's entrypoint override, or undefined for the image's. */
  readonly entrypoint: string[] | undefined
  readonly command: string[]
  /** Values as the container sees them ('' kept: the CLI reads an empty variable as unset). */
  readonly environment: Record<string, string>
  readonly mounts: Mount[]
  /** ['CMD', ...] or ['CMD-SHELL', cmd]; undefined when disabled or not set. */
  readonly healthcheck: string[] | undefined
  readonly healthcheckDisabled: boolean
  readonly ports: string[]
  readonly dependsOn: string[]
  readonly restart: string | undefined
  readonly raw: Yaml
}

export interface ComposeModel {
  readonly services: ComposeService[]
  readonly volumes: string[]
  readonly secrets: Record<string, string>
  readonly raw: Yaml
}

function asRecord(v: unknown, what: string): Yaml {
  if (v === undefined || v === null) return {}
  if (typeof v !== 'object' || Array.isArray(v)) throw new Error(`${what}: expected a mapping`)
  return v as Yaml
}

function stringList(v: unknown, what: string): string[] | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v === 'string') return shellSplit(v)
  if (Array.isArray(v)) return v.map(x => String(x))
  throw new Error(`${what}: expected a string or a list`)
}

function environmentOf(
  v: unknown,
  env: Readonly<Record<string, string | undefined>>,
  what: string
): Record<string, string> {
  const out: Record<string, string> = {}
  const put = (k: string, val: unknown): void => {
    // `KEY` with no value passes the variable through from the shell, if set.
    if (val === null || val === undefined) {
      if (env[k] !== undefined) out[k] = env[k] as string
    } else out[k] = typeof val === 'boolean' || typeof val === 'number' ? String(val) : String(val)
  }
  if (Array.isArray(v)) {
    for (const item of v) {
      const s = String(item)
      const eq = s.indexOf('=')
      put(eq < 0 ? s : s.slice(0, eq), eq < 0 ? null : s.slice(eq + 1))
    }
  } else {
    for (const [k, val] of Object.entries(asRecord(v, what))) put(k, val)
  }
  return out
}

/**
 * Loads the compose file with `env` as the shell environment for
 * interpolation (compose also reads a .env file beside it; pass its values in
 * `env` when a test wants them).
 */
export function loadCompose(env: Readonly<Record<string, string | undefined>>, file = COMPOSE_FILE): ComposeModel {
  const base = resolve(file, '..')
  const raw = interpolateDeep(asRecord(parseYaml(readFileSync(file, 'utf8')), file), env) as Yaml
  const secrets = Object.fromEntries(
    Object.entries(asRecord(raw.secrets, 'secrets')).map(([name, spec]) => {
      const f = asRecord(spec, `secrets.${name}`).file
      if (typeof f !== 'string') throw new Error(`secrets.${name}: only file secrets are supported here`)
      return [name, isAbsolute(f) ? f : resolve(base, f)]
    })
  )
  const services = Object.entries(asRecord(raw.services, 'services')).map(([name, specRaw]): ComposeService => {
    const spec = asRecord(specRaw, `services.${name}`)
    const deploy = asRecord(spec.deploy, `services.${name}.deploy`)
    const replicas = Number(deploy.replicas ?? spec.scale ?? 1)
    const mounts: Mount[] = []
    for (const m of (spec.volumes as unknown[] | undefined) ?? []) {
      let source: string, target: string
      if (typeof m === 'string') {
        const parts = m.split(':')
        source = parts[0] as string
        target = parts[1] ?? source
      } else {
        const r = asRecord(m, `services.${name}.volumes`)
        source = String(r.source)
        target = String(r.target)
      }
      const bind = source.startsWith('.') || source.startsWith('/') || source.startsWith('~')
      mounts.push({ kind: bind ? 'bind' : 'volume', source: bind ? resolve(base, source) : source, target })
    }
    for (const s of (spec.secrets as unknown[] | undefined) ?? []) {
      const r = typeof s === 'string' ? { source: s } : asRecord(s, `services.${name}.secrets`)
      const source = String(r.source)
      const file = secrets[source]
      if (file === undefined) throw new Error(`services.${name}.secrets: no top-level secret ${source}`)
      const target =
        r.target === undefined
          ? `/run/secrets/${source}`
          : String(r.target).startsWith('/')
            ? String(r.target)
            : `/run/secrets/${String(r.target)}`
      mounts.push({ kind: 'secret', source: file, target })
    }
    const hc = asRecord(spec.healthcheck, `services.${name}.healthcheck`)
    const disabled = hc.disable === true || (Array.isArray(hc.test) && hc.test[0] === 'NONE')
    const test =
      typeof hc.test === 'string' ? ['CMD-SHELL', hc.test] : stringList(hc.test, `services.${name}.healthcheck.test`)
    const dependsOn = Array.isArray(spec.depends_on)
      ? spec.depends_on.map(String)
      : Object.keys(asRecord(spec.depends_on, `services.${name}.depends_on`))
    return {
      name,
      replicas,
      entrypoint: stringList(spec.entrypoint, `services.${name}.entrypoint`),
      command: stringList(spec.command, `services.${name}.command`) ?? [],
      environment: environmentOf(spec.environment, env, `services.${name}.environment`),
      mounts,
      healthcheck: disabled ? undefined : test,
      healthcheckDisabled: disabled,
      ports: ((spec.ports as unknown[] | undefined) ?? []).map(String),
      dependsOn,
      restart: spec.restart === undefined ? undefined : String(spec.restart),
      raw: spec
    }
  })
  return { services, volumes: Object.keys(asRecord(raw.volumes, 'volumes')), secrets, raw }
}

export interface DockerImage {
  /** The final stage's base image. */
  readonly from: string
  readonly entrypoint: string[]
  readonly cmd: string[] | undefined
  readonly env: Record<string, string>
  readonly workdir: string
  readonly user: string | undefined
  readonly volumes: string[]
  /** HEALTHCHECK's CMD in exec form, if any. */
  readonly healthcheck: string[] | undefined
  /** Every instruction of every stage, continuations joined, comments dropped. */
  readonly instructions: Array<{ stage: number; op: string; args: string }>
}

function envPairs(args: string): Record<string, string> {
  const words = shellSplit(args)
  if (words.length >= 1 && !(words[0] as string).includes('=')) {
    // Legacy form: ENV KEY value with spaces
    return {
      [words[0] as string]: args
        .trim()
        .slice((words[0] as string).length)
        .trim()
    }
  }
  return Object.fromEntries(
    words.map(w => {
      const eq = w.indexOf('=')
      return [w.slice(0, eq), w.slice(eq + 1)]
    })
  )
}

function execForm(args: string, what: string): string[] {
  const t = args.trim()
  if (!t.startsWith('[')) throw new Error(`${what} must be in exec form (a JSON array), got ${t}`)
  const v = JSON.parse(t) as unknown
  if (!Array.isArray(v) || v.some(x => typeof x !== 'string')) throw new Error(`${what}: not a JSON array of strings`)
  return v as string[]
}

/** The final stage of the Dockerfile, as far as running its image is concerned. */
export function loadDockerfile(file = DOCKERFILE): DockerImage {
  const text = readFileSync(file, 'utf8')
  const logical: string[] = []
  let cur = ''
  for (const line of text.split('\n')) {
    if (/^\s*#/.test(line)) continue
    if (/\\\s*$/.test(line)) {
      cur += line.replace(/\\\s*$/, ' ')
      continue
    }
    cur += line
    if (cur.trim() !== '') logical.push(cur.trim())
    cur = ''
  }
  if (cur.trim() !== '') logical.push(cur.trim())
  const instructions: Array<{ stage: number; op: string; args: string }> = []
  let stage = -1
  for (const l of logical) {
    const m = /^(\w+)\s+([\s\S]*)$/.exec(l)
    if (m === null) continue
    const op = (m[1] as string).toUpperCase()
    if (op === 'FROM') stage++
    instructions.push({ stage, op, args: m[2] as string })
  }
  const last = instructions.filter(i => i.stage === stage)
  const env: Record<string, string> = {}
  let entrypoint: string[] = []
  let cmd: string[] | undefined
  let workdir = '/'
  let user: string | undefined
  let healthcheck: string[] | undefined
  const volumes: string[] = []
  for (const i of last) {
    switch (i.op) {
      case 'ENV':
        Object.assign(env, envPairs(i.args))
        break
      case 'ENTRYPOINT':
        entrypoint = execForm(i.args, 'ENTRYPOINT')
        break
      case 'CMD':
        cmd = execForm(i.args, 'CMD')
        break
      case 'WORKDIR':
        workdir = i.args.startsWith('/') ? i.args : join(workdir, i.args)
        break
      case 'USER':
        user = i.args.trim()
        break
      case 'VOLUME':
        volumes.push(...(i.args.trim().startsWith('[') ? execForm(i.args, 'VOLUME') : i.args.trim().split(/\s+/)))
        break
      case 'HEALTHCHECK': {
        const m = /\bCMD\s+([\s\S]*)$/.exec(i.args)
        healthcheck = m === null ? undefined : execForm(m[1] as string, 'HEALTHCHECK CMD')
        break
      }
    }
  }
  const from = (last.find(i => i.op === 'FROM')?.args ?? '').split(/\s+/)[0] as string
  return { from, entrypoint, cmd, env, workdir, user, volumes, healthcheck, instructions }
}

/**
 * Maps container paths to host paths: a value equal to a mount target, or
 * under one, is rewritten into the mount's host directory (the longest target
 * wins). Other values are returned unchanged.
 */
export function pathMapper(mounts: ReadonlyArray<{ target: string; host: string }>): (value: string) => string {
  const sorted = [...mounts].sort((a, b) => b.target.length - a.target.length)
  return value => {
    for (const m of sorted) {
      if (value === m.target) return m.host
      if (value.startsWith(`${m.target}/`)) return m.host + value.slice(m.target.length)
    }
    return value
  }
}
