import { describe, expect, it } from 'vitest'
import { oneByteText } from '../../scripts/bundle-options.js'

// V8 holds a module's source text at two bytes a character if one character is outside Latin-1:
// esbuild leaves such characters in comments (and regular expressions), so the build makes them `?`.
describe('oneByteText', () => {
  it('makes the characters of comments ASCII, one `?` per UTF-16 unit, so every column stays put', async () => {
    const text = '/** the P\u2084 penalty \u{1F600} */\nconst a = 1 // x\u22c5y\nexport { a }\n'
    const out = await oneByteText({ path: '/x/chunk.js', text })
    expect(out).toBe('/** the P? penalty ?? */\nconst a = 1 // x?y\nexport { a }\n')
    expect(out).toHaveLength(text.length)
  })

  it('leaves a file whose code has such a character as it was', async () => {
    const text = "// caf\u00e9\nexport const re = /['\u2019]s$/\n"
    expect(await oneByteText({ path: '/x/chunk.js', text })).toBe(text)
  })

  it('leaves ASCII files, and files other than JavaScript, as they are', async () => {
    expect(await oneByteText({ path: '/x/chunk.js', text: 'export const a = "\\u2019"\n' })).toBe(
      'export const a = "\\u2019"\n'
    )
    expect(await oneByteText({ path: '/x/chunk.js.map', text: '{"x":"\u2019"}' })).toBe('{"x":"\u2019"}')
  })
})
