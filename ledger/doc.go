// Package ledger keeps bankml's history: every exchange appended as one JSON line to a private file,
// committed by an RFC 6962 Merkle tree and, with an operator key, by a transparency log anyone can audit.
//
// # Design record
//
// What. [Open] locks a folder's history.jsonl (flock, one appending process), checks every line and cuts off
// a partial last line; [Ledger.Append] writes an [Exchange] as one line, fsynced before it returns; [Verify],
// [ProveFile] and [Entries] read a folder without locking it. A [Log] is a transparency log written through
// tessera (POSIX files, [OpenPOSIXLog], or MySQL/MariaDB shared by several processes, [OpenMySQLLog]) whose
// leaves are the lines' commitments (sha256 of a line; the line stays private); [Ledger.Publish] appends one,
// [Ledger.Reconcile] adds every line the log lacks (migration, interrupted appends), history.leaves records
// leaf indices. [AuditLog] and [Prover] check a log through any tlog-tiles reader; [Witness] cosigns.
//
// Follows. RFC 6962 §2.1 for both trees (leaf SHA-256(0x00‖data), node SHA-256(0x01‖l‖r)); RFC 9162
// §2.1.3.2 for verifying a path; the history line's leaf data is the line itself, the log's is its sha256.
// C2SP tlog-tiles, tlog-checkpoint and signed-note for the log (transparency-dev/tessera v1.0.4, formats,
// merkle), C2SP tlog-witness and tlog-cosignature for [Witness]. CIDv1 (raw, sha2-256, base32) of the file.
//
// Line format. {"index", "prev_root", "received", "answered", "appended", "request" (or "request_base64"),
// "answer" (or "answer_base64"), "receipt"}: bytes kept exactly; prev_root chains each line to those before.
//
// Crash safety. A line is committed once its newline is on disk; Open cuts a torn last line (with a log,
// [OpenWith] keeps it until Reconcile has checked that the log did not commit it: a history behind its log,
// cut or restored after its lines were logged, is refused with [ErrBehindLog], never cut). [Log.Add] is
// exactly once: a failed append (a database killed mid-commit) is looked up among the entries added since
// it began before it is retried, for RetryFor; a line whose append never succeeded is added by Reconcile.
//
// Deliberate differences. The local tree's proofs recompute subtree hashes (O(size)); the log's come from
// its tiles. history.leaves is not fsynced: losing it costs Reconcile a scan of the log, never an entry.
//
// Determinism. Trees, roots, commitments and the CID are pure functions of the bytes; timestamps, leaf
// indices (the order replicas reach the log) and checkpoint signing times are not.
package ledger
