import { connect } from 'node:tls';

/**
 * Why a sidecar at `address` could not be reached, when TLS is the cause (gRPC says only "No
 * connection established"): it speaks TLS and the client did not (`ca` absent), the client's TLS
 * handshake failed (an unknown CA, a name that does not match: the verification's own words), or
 * the client spoke TLS to a plaintext sidecar. Undefined when TLS is not the cause or a probe
 * cannot tell (a unix socket, nothing listening). Probes with one TLS handshake, bounded by `timeoutMs`.
 */
export async function explainSidecarTlsFailure(address: string, options: { ca?: Buffer; timeoutMs?: number; flag?: string } = {}): Promise<string | undefined> {
  const match = /^\[?([^\]]*?)\]?:(\d+)$/.exec(address);
  if (!match || address.startsWith('unix')) return undefined;
  const [, host, port] = match;
  const flag = options.flag ?? '--ca-file';
  const probe = (verify: boolean) =>
    new Promise<{ ok: true } | { ok: false; error: NodeJS.ErrnoException }>((resolve) => {
      const socket = connect({
        host,
        port: Number(port),
        ALPNProtocols: ['h2'],
        rejectUnauthorized: verify,
        ...(verify && options.ca ? { ca: options.ca } : {}),
        // An IP address is checked against the certificate's IP names; SNI takes host names only.
        ...(/^[\d.]+$|:/.test(host!) ? {} : { servername: host }),
      });
      const timer = setTimeout(() => finish({ ok: false, error: Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' }) }), options.timeoutMs ?? 3_000);
      const finish = (result: { ok: true } | { ok: false; error: NodeJS.ErrnoException }) => {
        clearTimeout(timer);
        socket.destroy();
        resolve(result);
      };
      socket.once('secureConnect', () => finish({ ok: true }));
      socket.once('error', (error: NodeJS.ErrnoException) => finish({ ok: false, error }));
    });
  const speaksTls = await probe(false);
  if (!speaksTls.ok) {
    const code = speaksTls.error.code ?? '';
    if (code === 'ECONNREFUSED' || code === 'ETIMEDOUT' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH') return undefined;
    // A handshake refused at the protocol level: the sidecar speaks plaintext.
    return options.ca ? `the sidecar at ${address} does not speak TLS (${speaksTls.error.message}): drop ${flag}` : undefined;
  }
  if (!options.ca) return `the sidecar at ${address} speaks TLS and this client connected in plaintext: give ${flag} FILE (the PEM of its CA, or its certificate when self-signed)`;
  const verified = await probe(true);
  if (verified.ok) return undefined;
  return `the TLS handshake with the sidecar at ${address} failed: ${verified.error.message}: check ${flag} (the PEM of the CA that signed its certificate, or the certificate itself when self-signed) and that the certificate names ${host}`;
}
