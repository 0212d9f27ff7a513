/**
 * libp2p 3 calls `Promise.withResolvers`, which Node 20 lacks (it arrived in
 * Node 22). Every entry point imports this module first, and vitest loads it
 * as a setup file, so the rest of the program can rely on it.
 */
if (typeof (Promise as { withResolvers?: unknown }).withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers<T>() {
      let resolve!: (value: T | PromiseLike<T>) => void
      let reject!: (reason?: unknown) => void
      const promise = new Promise<T>((res, rej) => {
        resolve = res
        reject = rej
      })
      return { promise, resolve, reject }
    }
  })
}

export {}
