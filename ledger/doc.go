// Package ledger keeps bankml's history: every exchange (request, answer,
// receipt, timestamps) appended as one JSON line to a file, committed by an
// RFC 6962 Merkle tree whose root and the file's CIDv1 can be published, with
// inclusion proofs per entry.
//
// # Design record
//
// What. A folder holds history.jsonl and history.lock. [Open] takes the lock
// (one appending process per folder), reads and checks every line, and cuts
// off a partial last line; [Ledger.Append] writes an [Exchange] as one line
// with a single write and an fsync before it returns; [Ledger.Head] gives
// size, root and CID; [Ledger.Prove] an inclusion [Proof]; [Verify],
// [ProveFile] and [Entries] read a folder without locking it.
//
// Follows. RFC 6962 §2.1 for the tree: leaf = SHA-256(0x00 || line), node =
// SHA-256(0x01 || left || right), split at the largest power of two smaller
// than n, the empty tree's root SHA-256(""); §2.1.1 for the audit path; RFC
// 9162 §2.1.3.2 for verifying it, step by step. The leaf data is an entry's
// line without its newline. The CID is CIDv1 (multiformats): version 1, the
// raw codec 0x55, a sha2-256 multihash of the whole file, base32 lower case
// with the multibase prefix "b" — what IPFS names the file as one raw block.
//
// Line format. {"index", "prev_root", "received", "answered", "appended",
// "request" (or "request_base64"), "answer" (or "answer_base64"), "receipt"}:
// request and answer are kept byte for byte (as JSON strings when they are
// valid UTF-8, base64 otherwise); prev_root is the hex root of the entries
// before this one, so that a changed, removed or inserted line breaks the
// chain even without a published root (a rewrite of every later line does
// not: publish roots for that).
//
// Crash safety. A line is committed once its newline is on disk: Append
// returns only after fsync, and Open treats bytes after the last newline as
// a write a crash interrupted: it cuts them off (reporting how many, in
// [Opened]) and the ledger verifies, having lost at most the line being
// written. A failed write is cut back at once. A committed line that does not
// read back is corruption ([ErrCorrupt]) and is never dropped silently.
//
// Concurrency. Appends are serialised by a mutex; across processes the
// folder's lock file is held with flock (github.com/gofrs/flock) for the
// Ledger's lifetime ([ErrLocked]); the operating system releases it when the
// process dies, so a crash never leaves a stale lock.
//
// Deliberate differences. No consistency proofs yet. Proof generation
// recomputes subtree hashes (O(size) hashes per proof); Append and Head are
// O(log size).
//
// Determinism. The tree, the root and the CID are pure functions of the
// file's bytes; the lines' timestamps come from the caller and the clock.
package ledger
