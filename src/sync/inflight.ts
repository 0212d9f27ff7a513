/**
 * Which session has asked for which id, shared by the sessions of one node,
 * so that a late joiner syncing with many peers at once pulls each event from
 * one of them: an id another session already asked for is deferred, and
 * asked for again only if it is still missing once that session settles it.
 */
export class InflightIds {
  private readonly owners = new Map<string, object>()
  private readonly listeners = new Set<() => void>()

  owner(id: string): object | undefined {
    return this.owners.get(id)
  }

  claim(id: string, owner: object): void {
    if (!this.owners.has(id)) this.owners.set(id, owner)
  }

  /** Releases the ids this owner holds; tells every listener once if any was released. */
  release(ids: Iterable<string>, owner: object): void {
    let any = false
    for (const id of ids) {
      if (this.owners.get(id) === owner) {
        this.owners.delete(id)
        any = true
      }
    }
    if (any) for (const listener of [...this.listeners]) listener()
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }

  get size(): number {
    return this.owners.size
  }
}
