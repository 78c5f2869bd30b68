// console.js: chat with the model (streamed) and check every answer's proof in this browser (verify.js).
// State kept here: the pinned keys and the last verified checkpoint in localStorage, the API key in
// sessionStorage, the conversation in memory only (Export proofs downloads it as a file).
// On the store server (`bankml serve` without a model: GET /props says role "router") the user picks a model
// from GET /v1/models, and every call names it: ?model= on a GET, "model" in a POST's body.
'use strict';

(() => {
  const V = bankmlVerify;
  const $ = (id) => document.getElementById(id);
  const store = {
    get: (k) => localStorage.getItem('bankml.console.' + k),
    set: (k, v) => (v === null || v === '' ? localStorage.removeItem('bankml.console.' + k) : localStorage.setItem('bankml.console.' + k, v)),
  };
  const messages = []; // the conversation sent to the model: {role, content}
  const proofs = []; // what Export proofs writes: per answer, the request, answer, receipt, proof, checks
  let modelName = ''; // the model every request names
  let router = false; // the server is the store server: a model is picked here and named in every call
  let props = null; // the model's /props
  let sending = false; // a request is under way

  function headers() {
    const h = { 'Content-Type': 'application/json' };
    const k = sessionStorage.getItem('bankml.console.api-key');
    if (k) h.Authorization = 'Bearer ' + k;
    return h;
  }
  // withModel names the picked model in a GET's query on the store server, which routes a GET by it.
  function withModel(path) {
    if (!router || !modelName) return path;
    return path + (path.includes('?') ? '&' : '?') + 'model=' + encodeURIComponent(modelName);
  }
  async function getJSON(path, own) {
    const r = await fetch(own ? path : withModel(path), { headers: headers(), cache: 'no-store' });
    const body = await r.text();
    if (!r.ok) {
      const err = new Error(`${path}: ${r.status} ${body.slice(0, 200)}`);
      err.status = r.status;
      throw err;
    }
    return JSON.parse(body);
  }
  const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
  const short = (h) => (h && h.length > 16 ? h.slice(0, 16) + '…' : h || '');
  // unsignedWhy says how to get signed receipts: --key, which the store server does not take yet.
  const unsignedWhy = () => (router ? 'the store server takes no --key yet: bankml serve NAME --key FILE signs them' : 'start it with --key');
  function setText(id, text, ok) {
    const el = $(id);
    el.textContent = text;
    if (ok !== undefined) el.dataset.ok = String(ok);
  }

  // The operator key: pinned in localStorage (trust on first use, or pasted in Settings).
  async function operatorKey() {
    const pinned = store.get('key');
    let served = null;
    try { served = await getJSON('/bankml/ledger/key'); } catch (e) { if (e.status !== 404) throw e; }
    if (!pinned && !served) {
      setText('key-name', 'none: this server signs nothing', false);
      setText('key-id', '');
      setText('key-trust', 'receipts are unsigned (' + unsignedWhy() + ')', false);
      setText('log-origin', 'none: a server without --key keeps no transparency log');
      return null;
    }
    if (!pinned && served) {
      store.set('key', served.vkey);
      store.set('key-source', 'first seen from this server');
    }
    const key = await V.parseVKey(store.get('key'));
    setText('key-name', key.name);
    setText('key-id', key.id);
    if (served && served.vkey !== key.vkey) {
      setText('key-trust', `WARNING: the server now uses ${served.key_name} ${served.key_id}, not the pinned key`, false);
    } else {
      setText('key-trust', 'pinned (' + (store.get('key-source') || 'set in Settings') + ')', true);
    }
    return key;
  }

  async function witnessKey() {
    const w = store.get('witness');
    if (!w) {
      setText('log-witness', 'none required');
      return null;
    }
    const k = await V.parseVKey(w);
    setText('log-witness', `${k.name} required`);
    return k;
  }

  // refreshLog fetches and verifies the latest checkpoint, checks it is consistent with the last one this
  // browser verified, and shows the log's size and root. Returns the checkpoint or throws.
  async function refreshLog(key, witness) {
    const r = await fetch(withModel('/bankml/ledger/checkpoint'), { headers: headers(), cache: 'no-store' });
    if (r.status === 404) {
      setText('log-origin', 'no transparency log on this server');
      return null;
    }
    if (!r.ok) throw new Error(`checkpoint: ${r.status}`);
    const note = await r.text();
    const cp = await V.openCheckpoint(note, key, witness);
    await checkConsistency(cp);
    setText('log-origin', cp.origin);
    setText('log-size', String(cp.size));
    setText('log-root', V.hex(cp.root));
    setText('log-checkpoint', 'signature verified' + (cp.witnessed ? ', cosigned' : ''), true);
    return cp;
  }

  // checkConsistency proves that cp extends the last checkpoint this browser verified (kept in
  // localStorage), then remembers cp. Throws when the log is not append-only.
  async function checkConsistency(cp) {
    const last = store.get('checkpoint');
    if (last) {
      const prev = JSON.parse(last);
      if (prev.origin === cp.origin && prev.size <= cp.size) {
        const prevRoot = V.fromHex(prev.root);
        let ok;
        if (prev.size === cp.size) {
          ok = V.equal(prevRoot, cp.root);
        } else {
          const p = await getJSON(`/bankml/ledger/consistency?from=${prev.size}&to=${cp.size}`);
          ok = await V.verifyConsistency(prev.size, cp.size, prevRoot, cp.root, p.path.map(V.fromHex));
        }
        if (!ok) throw new Error(`the log is not consistent with the checkpoint of ${prev.size} entries seen before: it was rewritten`);
      } else if (prev.origin === cp.origin) {
        throw new Error(`the log shrank: ${cp.size} entries, ${prev.size} seen before`);
      }
    }
    store.set('checkpoint', JSON.stringify({ origin: cp.origin, size: cp.size, root: V.hex(cp.root) }));
  }

  // loadModels lists the store server's models in the picker and picks one: the one picked before, else
  // the page's ?model=, else the first loaded, else the first. Returns false when the store has none.
  async function loadModels() {
    const list = (await getJSON('/v1/models', true)).data || [];
    const sel = $('model-select');
    sel.replaceChildren(...list.map((m) => {
      const o = document.createElement('option');
      o.value = m.id;
      o.textContent = m.id + (m.status && m.status.value === 'loaded' ? ' (loaded)' : '');
      return o;
    }));
    $('model-pick').hidden = false;
    const ids = list.map((m) => m.id);
    const find = (name) => (name ? ids.find((id) => id.toLowerCase() === name.toLowerCase()) : undefined);
    const loaded = list.find((m) => m.status && m.status.value === 'loaded');
    modelName = find(modelName) || find(new URLSearchParams(location.search).get('model')) || (loaded && loaded.id) || ids[0] || '';
    sel.value = modelName;
    return modelName !== '';
  }

  async function loadStatus() {
    try {
      const own = await getJSON('/props', true);
      router = own.role === 'router';
      if (router && !(await loadModels())) {
        props = null;
        modelName = '';
        $('send').disabled = true;
        setText('model-name', 'none: the store holds no model (bankml pull NAME)', false);
        return;
      }
      props = router ? await getJSON('/props') : own;
      if (!router) modelName = props.model_alias || '';
      $('send').disabled = sending;
      const b = props.bankml || {};
      setText('model-name', modelName);
      setText('model-sha', b.model_sha256 || '');
      setText('model-pin', b.pinned ? 'pinned to its provenance manifest' : 'UNPINNED (--unpinned)', !!b.pinned);
      setText('model-guard', b.guard || '', b.guard === 'play');
    } catch (e) {
      setText('model-name', String(e.message || e), false);
    }
    try {
      const key = await operatorKey();
      const witness = await witnessKey();
      if (key) await refreshLog(key, witness);
    } catch (e) {
      setText('log-checkpoint', 'FAILED: ' + (e.message || e), false);
    }
    $('pin-key').value = store.get('key') || '';
    $('pin-witness').value = store.get('witness') || '';
    $('api-key').value = sessionStorage.getItem('bankml.console.api-key') || '';
  }

  // stream posts the chat request and yields the text as it arrives; it returns {text, receipt}.
  async function stream(body, onText) {
    const r = await fetch('/v1/chat/completions', { method: 'POST', headers: headers(), body, cache: 'no-store' });
    if (!r.ok) {
      const t = await r.text();
      let e = null;
      try { e = JSON.parse(t).error; } catch { /* not JSON: the text itself */ }
      throw new Error(e && e.message ? `the server answered ${r.status} ${e.type || ''}: ${e.message}` : `the server answered ${r.status}: ${t.slice(0, 300)}`);
    }
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    let text = '';
    let receipt = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (value) buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).replace(/\r$/, '');
        buf = buf.slice(i + 1);
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        const ev = JSON.parse(line.slice(6));
        if (ev.error) throw new Error(ev.error.message || JSON.stringify(ev.error));
        for (const c of ev.choices || []) {
          if (c.delta && typeof c.delta.content === 'string') {
            text += c.delta.content;
            onText(text);
          }
        }
        if (ev.bankml_receipt) receipt = ev.bankml_receipt;
      }
      if (done) break;
    }
    return { text, receipt };
  }

  function mark(card, check, ok, detail) {
    const li = card.querySelector(`[data-check="${check}"]`);
    li.dataset.ok = ok === null ? 'skipped' : String(ok);
    if (detail) li.title = detail;
    if (detail) li.dataset.detail = detail;
    li.querySelector('.detail')?.remove();
    if (detail) {
      const s = document.createElement('span');
      s.className = 'detail';
      s.textContent = ' — ' + detail;
      li.appendChild(s);
    }
  }

  // verifyAnswer runs every check of one answer and sets the card's verdict: "verified" when all that
  // apply pass, "failed" naming the first that does not.
  async function verifyAnswer(card, requestBody, text, receipt) {
    const record = { request: requestBody, answer: text, receipt, checks: {} };
    proofs.push(record);
    card.querySelector('.receipt pre').textContent = JSON.stringify(receipt, null, 2);
    const failures = [];
    const check = (name, ok, detail) => {
      mark(card, name, ok, detail);
      record.checks[name] = { ok, detail: detail || '' };
      if (ok === false) failures.push(`${name}: ${detail}`);
    };
    if (!receipt) {
      check('answer', false, 'no bankml_receipt came with the answer');
    } else {
      const got = V.hex(await V.sha256(V.encode(text)));
      check('answer', got === receipt.response_sha256, got === receipt.response_sha256 ? got : `received text hashes to ${short(got)}, the receipt says ${short(receipt.response_sha256)}`);
      const req = V.hex(await V.sha256(V.encode(requestBody)));
      check('request', req === receipt.request_sha256, req === receipt.request_sha256 ? req : `sent ${short(req)}, the receipt says ${short(receipt.request_sha256)}`);
      const b = (props && props.bankml) || {};
      const sameModel = !b.model_sha256 || b.model_sha256 === receipt.model_sha256;
      // An unpinned model (served with --unpinned) is shown as a warning: the answer is still proved to come
      // from the file whose sha256 the receipt names, but no publisher's manifest vouches for that file.
      const modelOK = !sameModel || receipt.guard !== 'play' ? false : (receipt.pinned === true ? true : 'warn');
      check('model', modelOK, `sha256 ${short(receipt.model_sha256)}${sameModel ? '' : ' (not the model /props names)'}, ${receipt.pinned ? 'pinned' : 'UNPINNED'}, guard ${receipt.guard}`);
      let key = null;
      try { key = store.get('key') ? await V.parseVKey(store.get('key')) : null; } catch (e) { check('signature', false, e.message); }
      // An unsigned receipt is not a failed check: nothing was signed to check (as with no transparency log).
      if (!receipt.signed) {
        check('signature', null, 'the server signs no receipts (' + unsignedWhy() + ')');
      } else if (!key) {
        check('signature', false, 'no operator key pinned');
      } else {
        try {
          const why = await V.verifyReceipt(receipt, key);
          check('signature', why === '', why || `Ed25519 by ${key.name} ${key.id}`);
        } catch (e) {
          check('signature', false, `${e.message || e} (this browser may lack WebCrypto Ed25519)`);
        }
      }
      if (receipt.entry_sha256 && key) {
        await verifyInclusion(receipt, key, check, record);
      } else {
        check('checkpoint', null, 'no transparency log');
        check('inclusion', null, 'no transparency log');
        check('consistency', null, 'no transparency log');
      }
    }
    // An unsigned receipt, all else passing: "unsigned", not "verified" — the hashes match the receipt, but
    // nothing proves who wrote it (a proxy could change both).
    const unsigned = record.checks.signature && record.checks.signature.ok === null;
    card.dataset.verdict = failures.length ? 'failed' : unsigned ? 'unsigned' : 'verified';
    card.querySelector('.verdict').textContent = failures.length ? 'FAILED — ' + failures[0]
      : unsigned ? `not checked — the server signs no receipts (${unsignedWhy()}): the hashes match the receipt, but nothing proves who wrote it`
        : 'verified';
    record.verdict = card.dataset.verdict;
  }

  // verifyInclusion waits until a checkpoint covers the receipt's leaf, then checks the checkpoint's
  // signature, the inclusion proof against its root, and consistency with the last checkpoint seen.
  async function verifyInclusion(receipt, key, check, record) {
    let witness = null;
    try { witness = await witnessKey(); } catch (e) { check('checkpoint', false, 'witness key: ' + e.message); return; }
    const deadline = Date.now() + 30000;
    let p = null;
    for (;;) {
      try {
        p = await getJSON(`/bankml/ledger/proof?index=${receipt.ledger_index}`);
        break;
      } catch (e) {
        if (e.status !== 404 || Date.now() > deadline) { check('inclusion', false, e.message); return; }
        await sleep(250);
      }
    }
    record.proof = p;
    let cp;
    try {
      cp = await V.openCheckpoint(p.checkpoint, key, witness);
      if (cp.origin !== receipt.log_origin) throw new Error(`checkpoint of ${cp.origin}, the receipt names ${receipt.log_origin}`);
      check('checkpoint', true, `${cp.size} entries, signed by ${key.name}` + (cp.witnessed ? `, cosigned by ${witness.name}` : ''));
    } catch (e) {
      check('checkpoint', false, e.message);
      return;
    }
    const leaf = V.fromHex(receipt.entry_sha256);
    const ok = p.index === receipt.ledger_index && p.size === cp.size &&
      await V.verifyInclusion(await V.leafHash(leaf), receipt.ledger_index, cp.size, p.path.map(V.fromHex), cp.root);
    check('inclusion', ok, ok ? `leaf ${receipt.ledger_index} of ${cp.size}, root ${short(V.hex(cp.root))}` : 'the inclusion proof does not lead to the signed root');
    try {
      await checkConsistency(cp);
      check('consistency', true, 'append-only since the last checkpoint this browser saw');
      setText('log-size', String(cp.size));
      setText('log-root', V.hex(cp.root));
      setText('log-checkpoint', 'signature verified' + (cp.witnessed ? ', cosigned' : ''), true);
    } catch (e) {
      check('consistency', false, e.message);
    }
  }

  // busy disables what would change the conversation while a request runs.
  function busy(on) {
    sending = on;
    for (const id of ['send', 'new-chat', 'model-select']) $(id).disabled = on;
  }

  // send posts the conversation with the new message and checks the answer. A request that fails (the
  // server refuses it, or the stream breaks) takes the message back out of the conversation — so that the
  // next request is not refused again and never holds two user turns in a row — and puts its text back in
  // the box to edit; the card shows the error.
  async function send(ev) {
    ev.preventDefault();
    const prompt = $('prompt').value;
    if (!prompt.trim()) return;
    busy(true);
    const card = $('answer-template').content.firstElementChild.cloneNode(true);
    card.querySelector('.prompt-text').textContent = prompt;
    $('chat').appendChild(card);
    const turn = { role: 'user', content: prompt };
    messages.push(turn);
    const body = JSON.stringify({
      model: modelName, messages, stream: true,
      max_tokens: Math.max(1, parseInt($('max-tokens').value, 10) || 256),
    });
    $('prompt').value = '';
    const out = card.querySelector('.answer-text');
    let answer;
    try {
      answer = await stream(body, (t) => { out.textContent = t; });
    } catch (e) {
      const i = messages.indexOf(turn);
      if (i >= 0) messages.splice(i, 1);
      const typed = $('prompt').value;
      $('prompt').value = typed.trim() ? prompt + '\n' + typed : prompt;
      card.dataset.verdict = 'error';
      card.querySelector('.verdict').textContent = 'NOT ANSWERED — ' + (e.message || e) +
        ' (the message is left out of the conversation and back in the box to edit)';
      card.querySelector('.checks').remove();
      card.querySelector('.receipt').remove();
      busy(false);
      return;
    }
    out.textContent = answer.text;
    messages.push({ role: 'assistant', content: answer.text });
    try {
      await verifyAnswer(card, body, answer.text, answer.receipt);
    } catch (e) {
      card.dataset.verdict = 'failed';
      card.querySelector('.verdict').textContent = 'FAILED — ' + (e.message || e);
    } finally {
      busy(false);
    }
  }

  // newChat clears the conversation; the proofs of its answers stay for Export proofs.
  function newChat() {
    messages.length = 0;
    $('chat').replaceChildren();
  }

  // pickModel starts a new chat with the model picked (store server).
  function pickModel() {
    modelName = $('model-select').value;
    const u = new URL(location.href);
    u.searchParams.set('model', modelName);
    history.replaceState(null, '', u);
    newChat();
    loadStatus();
  }

  function exportProofs() {
    const blob = new Blob([JSON.stringify({ exported: new Date().toISOString(), model: props && props.bankml, answers: proofs }, null, 2)], { type: 'application/json' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = 'bankml-proofs.json';
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  }

  async function saveSettings() {
    const note = $('settings-note');
    try {
      const k = $('pin-key').value.trim();
      const w = $('pin-witness').value.trim();
      if (k) await V.parseVKey(k);
      if (w) await V.parseVKey(w);
      if (k !== (store.get('key') || '')) { store.set('key', k); store.set('key-source', 'set in Settings'); }
      store.set('witness', w);
      sessionStorage.setItem('bankml.console.api-key', $('api-key').value);
      note.textContent = 'saved';
      await loadStatus();
    } catch (e) {
      note.textContent = 'not saved: ' + (e.message || e);
    }
  }

  function forget() {
    for (const k of ['key', 'key-source', 'witness', 'checkpoint']) store.set(k, null);
    $('settings-note').textContent = 'forgotten';
    loadStatus();
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('composer').addEventListener('submit', send);
    $('export').addEventListener('click', exportProofs);
    $('new-chat').addEventListener('click', newChat);
    $('model-select').addEventListener('change', pickModel);
    $('save-settings').addEventListener('click', saveSettings);
    $('forget').addEventListener('click', forget);
    if (!window.isSecureContext || !crypto.subtle) {
      document.body.dataset.insecure = 'true';
      setText('log-checkpoint', 'this page is not a secure context (use https or localhost): WebCrypto is unavailable, nothing can be verified', false);
      return;
    }
    loadStatus().then(() => { document.body.dataset.ready = 'true'; });
  });
})();
