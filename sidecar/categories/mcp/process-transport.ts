import { StringDecoder } from 'node:string_decoder';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { tailOf } from '../../../src/index.js';
import type { McpServerProcess } from './start-mcp-server-process.js';

/** Bytes of a server's stderr kept (the tail) to explain why it died. */
const STDERR_TAIL_CHARS = 2_000;

/**
 * The MCP stdio transport over a process started by `startMcpServerProcess` (the SDK's own stdio
 * client transport spawns by itself, which would bypass the sidecar's one start function).
 * `close()` stops the process group; the process's exit closes the transport.
 */
export class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private readonly buffer = new ReadBuffer();
  private stderr = '';
  private closed = false;

  constructor(private readonly process: McpServerProcess) {}

  /** The tail of what the server wrote on stderr. */
  get stderrTail(): string {
    return this.stderr;
  }

  async start(): Promise<void> {
    const { child } = this.process;
    child.stdout.on('data', (chunk: Buffer) => {
      this.buffer.append(chunk);
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.buffer.readMessage();
        } catch (error) {
          this.onerror?.(error as Error);
          continue;
        }
        if (message === null) break;
        this.onmessage?.(message);
      }
    });
    // One decoder for the stream: a character split across two chunks is decoded whole.
    const decoder = new StringDecoder('utf8');
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderr = tailOf(this.stderr + decoder.write(chunk), STDERR_TAIL_CHARS);
    });
    child.stdin.on('error', (error) => this.onerror?.(error));
    child.once('error', (error) => this.onerror?.(error));
    void this.process.exited.then(() => this.finish());
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error('the MCP server process has exited'));
      const { stdin } = this.process.child;
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    await this.process.stop();
    this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.buffer.clear();
    this.onclose?.();
  }
}
