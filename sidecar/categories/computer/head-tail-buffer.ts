/**
 * Keeps the first and the last characters of a text that arrives in pieces, so memory stays bounded
 * however much a command prints; it counts what it dropped in between. A cut never splits a
 * character: a surrogate pair (an emoji, say) is kept or dropped whole, so the text stays valid
 * UTF-16 and encodes to valid UTF-8.
 */
export class HeadTailBuffer {
  private head = '';
  private tail = '';
  private dropped = 0;
  private headFull = false;

  /** `limit` characters in all: half for the head, half for the tail. */
  constructor(private readonly limit: number) {}

  append(text: string): void {
    if (!this.headFull) {
      let headRoom = Math.ceil(this.limit / 2) - this.head.length;
      if (text.length >= headRoom) {
        // The head ends here: not between the two halves of a pair.
        if (headRoom > 0 && isHighSurrogate(text.charCodeAt(headRoom - 1))) headRoom -= 1;
        this.head += text.slice(0, Math.max(0, headRoom));
        text = text.slice(Math.max(0, headRoom));
        this.headFull = true;
      } else {
        this.head += text;
        return;
      }
    }
    if (text === '') return;
    this.tail += text;
    const tailLimit = Math.floor(this.limit / 2);
    if (this.tail.length > tailLimit) {
      let start = this.tail.length - tailLimit;
      if (isLowSurrogate(this.tail.charCodeAt(start))) start += 1;
      this.dropped += start;
      this.tail = this.tail.slice(start);
    }
  }

  /** Characters dropped from the middle so far. */
  get droppedChars(): number {
    return this.dropped;
  }

  /** Characters held (head and tail). */
  get length(): number {
    return this.head.length + this.tail.length;
  }

  /** The kept text, with a marker where characters were dropped. */
  toString(): string {
    if (this.dropped === 0) return this.head + this.tail;
    return `${this.head}\n[… ${this.dropped} characters cut …]\n${this.tail}`;
  }
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;
