/** A FIFO of ids with an advancing head, compacted now and then (no O(n) shift per id). */
export class IdQueue {
  private items: string[] = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  push(id: string): void {
    this.items.push(id)
  }

  shift(): string | undefined {
    if (this.head >= this.items.length) return undefined
    const id = this.items[this.head++]
    if (this.head > 4096 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return id
  }

  /** The first n ids (n <= length), without removing them. */
  peek(n: number): string[] {
    return this.items.slice(this.head, this.head + n)
  }

  /** Empties the queue. */
  clear(): void {
    this.items = []
    this.head = 0
  }

  drop(n: number): void {
    for (let i = 0; i < n; i++) this.shift()
  }
}
