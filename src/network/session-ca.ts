import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { isIP } from "node:net";
import { rootCertificates } from "node:tls";
import forge from "node-forge";

/**
 * The session's certificate authority, for the hosts credentials are bound to: the proxy
 * terminates TLS for those hosts only, showing a leaf certificate this CA signs on demand (one per
 * host, cached). The private keys live in this process's memory only; the sandbox gets the CA's
 * certificate, the public part, and nothing else. A new session (a new harness process) makes a
 * new CA, so a certificate seen in one session is worth nothing in the next.
 */

/** Where harness's host looks for the system's CA bundle (Debian, Ubuntu, Alpine, Arch...). */
export const SYSTEM_CA_BUNDLES: readonly string[] = [
  "/etc/ssl/certs/ca-certificates.crt",
  "/etc/pki/tls/certs/ca-bundle.crt",
  "/etc/ssl/cert.pem",
];

export interface LeafCertificate {
  /** PEM private key (the session's one leaf key). */
  key: string;
  /** PEM certificate chain: the leaf, then the CA. */
  cert: string;
}

export class SessionAuthority {
  /** The CA certificate (PEM): what the sandbox trusts. */
  readonly certificate: string;
  readonly #caKey: forge.pki.rsa.PrivateKey;
  readonly #caCert: forge.pki.Certificate;
  readonly #leafKey: { pem: string; publicKey: forge.pki.rsa.PublicKey };
  readonly #leaves = new Map<string, LeafCertificate>();

  private constructor() {
    const ca = rsaKeyPair();
    this.#caKey = ca.privateKey;
    const cert = forge.pki.createCertificate();
    cert.publicKey = ca.publicKey;
    cert.serialNumber = serialNumber();
    const { notBefore, notAfter } = validity(30);
    cert.validity.notBefore = notBefore;
    cert.validity.notAfter = notAfter;
    const name = [
      { name: "commonName", value: `harness session CA ${randomBytes(4).toString("hex")}` },
      { name: "organizationName", value: "harness" },
    ];
    cert.setSubject(name);
    cert.setIssuer(name);
    cert.setExtensions([
      { name: "basicConstraints", cA: true, pathLenConstraint: 0, critical: true },
      { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
      { name: "subjectKeyIdentifier" },
    ]);
    cert.sign(ca.privateKey, forge.md.sha256.create());
    this.#caCert = cert;
    this.certificate = forge.pki.certificateToPem(cert);
    const leaf = rsaKeyPair();
    this.#leafKey = { pem: forge.pki.privateKeyToPem(leaf.privateKey), publicKey: leaf.publicKey };
  }

  /** A new authority (two RSA keys: about 100 ms). */
  static create(): SessionAuthority {
    return new SessionAuthority();
  }

  /** The leaf certificate for `host` (a name or an IP address), signed once and kept. */
  leafFor(host: string): LeafCertificate {
    const kept = this.#leaves.get(host);
    if (kept !== undefined) return kept;
    const cert = forge.pki.createCertificate();
    cert.publicKey = this.#leafKey.publicKey;
    cert.serialNumber = serialNumber();
    const { notBefore, notAfter } = validity(7);
    cert.validity.notBefore = notBefore;
    cert.validity.notAfter = notAfter;
    cert.setSubject([{ name: "commonName", value: host.slice(0, 64) }]);
    cert.setIssuer(this.#caCert.subject.attributes);
    const altName = isIP(host) !== 0 ? { type: 7, ip: host } : { type: 2, value: host };
    cert.setExtensions([
      { name: "basicConstraints", cA: false, critical: true },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
      { name: "extKeyUsage", serverAuth: true },
      { name: "subjectAltName", altNames: [altName] },
      {
        name: "authorityKeyIdentifier",
        keyIdentifier: this.#caCert.generateSubjectKeyIdentifier().getBytes(),
      },
    ]);
    cert.sign(this.#caKey, forge.md.sha256.create());
    const leaf = { key: this.#leafKey.pem, cert: `${forge.pki.certificateToPem(cert)}${this.certificate}` };
    this.#leaves.set(host, leaf);
    return leaf;
  }
}

function rsaKeyPair(): { privateKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey } {
  // node:crypto makes the key (native, fast); forge only signs with it.
  const { privateKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs1", format: "pem" },
    publicKeyEncoding: { type: "pkcs1", format: "pem" },
  });
  const key = forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey;
  return { privateKey: key, publicKey: forge.pki.setRsaPublicKey(key.n, key.e) };
}

/** A positive random serial (the high bit clear), as forge wants it: hex. */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x01;
  return bytes.toString("hex");
}

/** From an hour ago (clocks differ a little) to `days` from now. */
function validity(days: number): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  return { notBefore: new Date(now - 3_600_000), notAfter: new Date(now + days * 86_400_000) };
}

/** The system's CA bundle (PEM text), or undefined when none of the usual files is there. */
export function systemBundle(): string | undefined {
  for (const file of SYSTEM_CA_BUNDLES) {
    if (!existsSync(file)) continue;
    try {
      return readFileSync(file, "utf8");
    } catch {
      // The next candidate.
    }
  }
  return undefined;
}

/**
 * What the proxy trusts for the real upstreams of bound hosts: node's root store, the system's
 * bundle, and the file `NODE_EXTRA_CA_CERTS` names in harness's own environment (a company CA, a
 * test's CA). Unreadable files are left out: a host they would have vouched for then fails to
 * verify, which fails closed.
 */
export function upstreamTrust(environment: Readonly<Record<string, string | undefined>>): string[] {
  const trust = [...rootCertificates];
  const system = systemBundle();
  if (system !== undefined) trust.push(system);
  const extra = environment.NODE_EXTRA_CA_CERTS;
  if (extra !== undefined && extra !== "") {
    try {
      trust.push(readFileSync(extra, "utf8"));
    } catch {
      // Fails closed: see above.
    }
  }
  return trust;
}

/**
 * The bundle a sandboxed process trusts: the system's bundle (or node's roots where the system
 * has none), then the session's CA. Clients such as OpenSSL's take SSL_CERT_FILE in place of the
 * system bundle, so both must be in it: public hosts still verify, and bound hosts verify against
 * the session CA.
 */
export function sandboxBundle(authority: SessionAuthority): string {
  const base = systemBundle() ?? rootCertificates.join("\n");
  return `${base.trimEnd()}\n${authority.certificate}`;
}
