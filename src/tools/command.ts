/**
 * Finding a stdio server's program before spawning it, as a shell would:
 * a command with a slash is a path (relative to the server's cwd), a bare
 * name is looked up on PATH. Checking first turns a spawn's bare ENOENT
 * into a message that says which command and what to do.
 */
import { accessSync, constants, statSync } from 'node:fs'
import { delimiter, join, resolve } from 'node:path'

/** Whether `path` is a file this process may execute. */
function executable(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/**
 * The absolute path of `command`, or an Error saying why there is none.
 * `cwd` is where the server runs (null: here); `pathVar` the PATH it gets.
 */
export function findCommand(command: string, cwd: string | null, pathVar: string | undefined): string | Error {
  const base = cwd ?? process.cwd()
  const exts = process.platform === 'win32' ? ['', ...(process.env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';')] : ['']
  if (command.includes('/') || (process.platform === 'win32' && command.includes('\\'))) {
    const path = resolve(base, command)
    for (const ext of exts) if (executable(path + ext)) return path + ext
    let exists = false
    try {
      exists = statSync(path).isFile()
    } catch {
      exists = false
    }
    return new Error(
      exists
        ? `command ${JSON.stringify(command)} (${path}) is not executable: make it executable (chmod +x) or run it ` +
            'through its interpreter (e.g. "command": "node", "args": ["server.js"])'
        : `command ${JSON.stringify(command)} was not found (no file ${path}): give its full path, or install it`
    )
  }
  const dirs = (pathVar ?? '').split(delimiter).map(d => resolve(base, d === '' ? '.' : d))
  for (const dir of dirs)
    for (const ext of exts) if (executable(join(dir, command + ext))) return join(dir, command + ext)
  return new Error(
    `command ${JSON.stringify(command)} was not found on PATH: give its full path in "command", or install it`
  )
}
