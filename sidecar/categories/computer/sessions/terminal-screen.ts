import type * as XtermHeadless from '@xterm/headless';
import { ToolRuntimeError } from '../../../../src/index.js';
import { loadOnFirstUse } from '../../../../src/load-on-first-use.js';

// Loaded with the first terminal session: a sidecar that never starts one never reads it.
const loadXterm = loadOnFirstUse<typeof XtermHeadless>('@xterm/headless');

/**
 * A headless terminal emulator (xterm.js without a browser) fed everything a PTY session prints,
 * so a full-screen program (an editor, `top`, a TUI installer) can be read as the text on its
 * screen rather than as escape sequences. No scrollback: only the visible screen is kept, so its
 * memory is one screen's cells whatever the program prints.
 */
export class TerminalScreen {
  private constructor(private terminal: XtermHeadless.Terminal | undefined) {}

  /** @throws ToolRuntimeError `tool_failed` when the emulator does not load. */
  static async create(options: { cols: number; rows: number }): Promise<TerminalScreen> {
    let xterm: typeof XtermHeadless;
    try {
      xterm = loadXterm();
    } catch (error) {
      throw new ToolRuntimeError('tool_failed', `the terminal emulator @xterm/headless did not load: ${String(error)}`, { cause: error });
    }
    return new TerminalScreen(new xterm.Terminal({ cols: options.cols, rows: options.rows, scrollback: 0, allowProposedApi: true }));
  }

  /** Feeds output; parsed asynchronously, in order. */
  write(text: string): void {
    this.terminal?.write(text);
  }

  /**
   * The screen once everything written so far is parsed: one line per row, trailing spaces and
   * trailing empty rows removed, and where the cursor is.
   */
  async render(): Promise<string> {
    const terminal = this.terminal;
    if (!terminal) return '';
    await new Promise<void>((resolve) => terminal.write('', resolve));
    const buffer = terminal.buffer.active;
    const lines: string[] = [];
    for (let row = 0; row < terminal.rows; row++) lines.push(buffer.getLine(buffer.viewportY + row)?.translateToString(true) ?? '');
    while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    return `${lines.join('\n')}\n[screen ${terminal.cols}×${terminal.rows}, cursor at row ${buffer.cursorY + 1}, column ${buffer.cursorX + 1}]`;
  }

  /** Resizes the emulated screen (the PTY is resized by its owner); lines reflow as xterm.js does. */
  resize(cols: number, rows: number): void {
    this.terminal?.resize(cols, rows);
  }

  dispose(): void {
    this.terminal?.dispose();
    this.terminal = undefined;
  }
}
