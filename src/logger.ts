/** Structured logging: one JSON object a line. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/**
 * A logger that writes JSON lines (`{"time","level","msg",...fields}`) to a stream, stderr by
 * default, dropping levels below `level`.
 */
export function createJsonLogger(options: {
  level?: LogLevel;
  stream?: NodeJS.WritableStream;
  fields?: Record<string, unknown>;
} = {}): Logger {
  const minimum = order[options.level ?? 'info'];
  const stream = options.stream ?? process.stderr;
  const base = options.fields ?? {};
  const write = (level: LogLevel, message: string, fields?: Record<string, unknown>) => {
    if (order[level] < minimum) return;
    stream.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...base, ...fields })}\n`);
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  };
}

/** A logger that drops everything (tests, embedding). */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
