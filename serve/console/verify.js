// verify.js: the console's checks, with WebCrypto only (SHA-256, Ed25519) — no library, no network.
// RFC 8785 canonical JSON, C2SP signed notes and checkpoints, cosignature/v1, RFC 9162 proofs.
'use strict';

const bankmlVerify = (() => {
  const enc = new TextEncoder();

  async function sha256(bytes) {
    return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  }
  const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  function fromHex(s) {
    if (typeof s !== 'string' || s.length % 2 || /[^0-9a-f]/i.test(s)) throw new Error(`not hex: ${s}`);
    const out = new Uint8Array(s.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(s.substr(2 * i, 2), 16);
    return out;
  }
  function fromB64(s) {
    const bin = atob(s);
    return Uint8Array.from(bin, (c) => c.charCodeAt(0));
  }
  const b64 = (b) => btoa(String.fromCharCode(...b));
  const equal = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
  const concat = (...parts) => {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let o = 0;
    for (const p of parts) { out.set(p, o); o += p.length; }
    return out;
  };

  // RFC 8785: ECMAScript's JSON serialization of primitives, members sorted by UTF-16 code units.
  function canonical(v) {
    if (v === null || typeof v !== 'object') return JSON.stringify(v);
    if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
    return '{' + Object.keys(v).sort().filter((k) => v[k] !== undefined)
      .map((k) => JSON.stringify(k) + ':' + canonical(v[k])).join(',') + '}';
  }

  // C2SP signed-note key hash: SHA-256(name || "\n" || alg || key)[:4].
  async function keyHash(name, alg, key) {
    const h = await sha256(concat(enc.encode(name + '\n'), Uint8Array.of(alg), key));
    return hex(h.subarray(0, 4));
  }

  // parseVKey reads a signed-note verifier key (name+hash+base64(alg || key)); alg 0x01 is Ed25519, 0x04 an
  // Ed25519 cosignature/v1 key. The hash is checked.
  async function parseVKey(vkey) {
    // The name holds no '+'; the base64 key may.
    const m = /^([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/=]+)$/.exec(vkey.trim());
    if (!m) throw new Error('a verifier key is name+hash+base64');
    const [, name, hash, k] = m;
    const raw = fromB64(k);
    if (raw.length !== 33 || (raw[0] !== 0x01 && raw[0] !== 0x04)) throw new Error('not an Ed25519 verifier key');
    const key = raw.subarray(1);
    if (await keyHash(name, raw[0], key) !== hash) throw new Error(`the key hash ${hash} is not the key's`);
    return { name, id: hash, alg: raw[0], key, vkey: vkey.trim() };
  }

  async function ed25519Verify(key, sig, msg) {
    const k = await crypto.subtle.importKey('raw', key, { name: 'Ed25519' }, false, ['verify']);
    return crypto.subtle.verify({ name: 'Ed25519' }, k, sig, msg);
  }

  // verifyReceipt checks a receipt's signature (the RFC 8785 form of every member but "signature") against
  // the pinned key. Returns a reason string on failure, '' on success.
  async function verifyReceipt(receipt, key) {
    if (receipt.signed !== true) return 'the receipt is not signed';
    if (receipt.key_name !== key.name) return `signed by ${receipt.key_name}, not the pinned key ${key.name}`;
    if (receipt.key_id !== key.id) return `signed by key id ${receipt.key_id}, not the pinned ${key.id}`;
    const body = Object.assign({}, receipt);
    delete body.signature;
    let sig;
    try { sig = fromB64(receipt.signature); } catch { return 'the signature is not base64'; }
    if (sig.length !== 64) return 'the signature is not 64 bytes';
    return await ed25519Verify(key.key, sig, enc.encode(canonical(body))) ? '' : 'the Ed25519 signature does not verify';
  }

  // openCheckpoint verifies a checkpoint (C2SP tlog-checkpoint in a signed note) against the log key and,
  // when given, requires a cosignature/v1 of the witness key. Returns {origin, size, root, witnessed}.
  async function openCheckpoint(note, logKey, witness) {
    const cut = note.lastIndexOf('\n\n');
    if (cut < 0) throw new Error('the checkpoint is not a signed note');
    const text = note.slice(0, cut + 1);
    const lines = text.split('\n');
    if (lines.length < 4) throw new Error('the checkpoint has fewer than three lines');
    const [origin, sizeText, rootB64] = lines;
    if (!/^(0|[1-9][0-9]*)$/.test(sizeText)) throw new Error(`checkpoint size ${sizeText}`);
    const root = fromB64(rootB64);
    if (root.length !== 32) throw new Error('the checkpoint root is not 32 bytes');
    let signedByLog = false;
    let witnessed = false;
    for (const line of note.slice(cut + 2).split('\n')) {
      if (!line) continue;
      const m = /^\u2014 (\S+) (\S+)$/.exec(line);
      if (!m) throw new Error(`malformed signature line: ${line}`);
      const sig = fromB64(m[2]);
      const id = hex(sig.subarray(0, 4));
      if (m[1] === logKey.name && id === logKey.id && sig.length === 68) {
        signedByLog = signedByLog || await ed25519Verify(logKey.key, sig.subarray(4), enc.encode(text));
      } else if (witness && m[1] === witness.name && sig.length === 76 && id === await keyHash(witness.name, 0x04, witness.key)) {
        const t = new DataView(sig.buffer, sig.byteOffset + 4, 8).getBigUint64(0);
        const msg = enc.encode(`cosignature/v1\ntime ${t}\n` + text);
        witnessed = witnessed || await ed25519Verify(witness.key, sig.subarray(12), msg);
      }
    }
    if (!signedByLog) throw new Error(`no valid signature of the log key ${logKey.name} (${logKey.id})`);
    if (origin !== logKey.name) throw new Error(`checkpoint origin ${origin} is not the key's name ${logKey.name}`);
    if (witness && !witnessed) throw new Error(`no valid cosignature of the required witness ${witness.name}`);
    return { origin, size: Number(sizeText), root, witnessed };
  }

  const leafHash = async (data) => sha256(concat(Uint8Array.of(0), data));
  const nodeHash = async (l, r) => sha256(concat(Uint8Array.of(1), l, r));
  const half = (x) => Math.floor(x / 2);
  const odd = (x) => x % 2 === 1;

  // RFC 9162 §2.1.3.2: verifying an inclusion proof.
  async function verifyInclusion(leaf, index, size, path, root) {
    if (index >= size) return false;
    let fn = index;
    let sn = size - 1;
    let r = leaf;
    for (const p of path) {
      if (sn === 0) return false;
      if (odd(fn) || fn === sn) {
        r = await nodeHash(p, r);
        while (!odd(fn) && fn !== 0) { fn = half(fn); sn = half(sn); }
      } else {
        r = await nodeHash(r, p);
      }
      fn = half(fn); sn = half(sn);
    }
    return sn === 0 && equal(r, root);
  }

  // RFC 9162 §2.1.4.2: verifying a consistency proof.
  async function verifyConsistency(first, second, firstRoot, secondRoot, path) {
    if (first > second) return false;
    if (first === second) return path.length === 0 && equal(firstRoot, secondRoot);
    if (first === 0) return path.length === 0;
    if (path.length === 0) return false;
    if ((first & (first - 1)) === 0 && first < 2 ** 31) path = [firstRoot, ...path];
    let fn = first - 1;
    let sn = second - 1;
    while (odd(fn)) { fn = half(fn); sn = half(sn); }
    let fr = path[0];
    let sr = path[0];
    for (const c of path.slice(1)) {
      if (sn === 0) return false;
      if (odd(fn) || fn === sn) {
        fr = await nodeHash(c, fr);
        sr = await nodeHash(c, sr);
        while (!odd(fn) && fn !== 0) { fn = half(fn); sn = half(sn); }
      } else {
        sr = await nodeHash(sr, c);
      }
      fn = half(fn); sn = half(sn);
    }
    return sn === 0 && equal(fr, firstRoot) && equal(sr, secondRoot);
  }

  return { sha256, hex, fromHex, fromB64, b64, equal, canonical, parseVKey, verifyReceipt, openCheckpoint,
    leafHash, verifyInclusion, verifyConsistency, encode: (s) => enc.encode(s) };
})();
