/**
 * Keeps the first and the last characters of a text that arrives in pieces, so memory stays bounded
 * however much a command prints; it counts what it dropped in between.
 */
export class HeadTailBuffer {
  private head = '';
  private tail = '';
  private dropped = 0;

  /** `limit` characters in all: half for the head, half for the tail. */
  constructor(private readonly limit: number) {}

  append(text: string): void {
    const headRoom = Math.ceil(this.limit / 2) - this.head.length;
    if (headRoom > 0) {
      this.head += text.slice(0, headRoom);
      text = text.slice(headRoom);
    }
    if (text === '') return;
    this.tail += text;
    const tailLimit = Math.floor(this.limit / 2);
    if (this.tail.length > tailLimit) {
      this.dropped += this.tail.length - tailLimit;
      this.tail = this.tail.slice(this.tail.length - tailLimit);
    }
  }

  /** Characters dropped from the middle so far. */
  get droppedChars(): number {
    return this.dropped;
  }

  /** The kept text, with a marker where characters were dropped. */
  toString(): string {
    if (this.dropped === 0) return this.head + this.tail;
    return `${this.head}\n[… ${this.dropped} characters cut …]\n${this.tail}`;
  }
}
