// Package provenance checks that a model file is the one its publisher released (sha256 at disk speed, pinned
// against a FORK.json manifest or a bare digest), and holds the operator keys that sign what bankml answers.
//
// # Design record
//
// What. [SHA256File] hashes a file; [Pin] hashes it and checks the hash against the entry of its base name in a
// manifest ([ParseManifest], docs/manifest.md) or against a digest given directly (64 hex digits or
// "sha256:<hex>"). Only an equal hash admits the file: a mismatch is refused naming both hashes, a file the
// manifest does not name is "unpinned, refused", an unparsable manifest refuses every file. It is one of the
// gates of package admit's front door: a model that cannot be verified does not answer.
// [WriteKeyFiles] makes an operator's Ed25519 key in C2SP signed-note form; [Signer.SignReceipt] signs a receipt
// over its RFC 8785 canonical form without "signature" ([SignedMessage]); [VerifyReceipt] checks it.
//
// Follows. The FORK.json shapes (importer and converter manifests) and refusal texts of the original runtime;
// FIPS 180-4 sha256 from crypto/sha256 (SHA-NI where the CPU has it); RFC 8785 through github.com/gowebpki/jcs,
// so a browser's JSON.stringify over sorted members verifies with no library (docs/receipts.md).
//
// Deliberate differences from the original's narrow scanner. A manifest is parsed as JSON and checked whole:
// a malformed entry is an error naming it (wrapping [ErrRefused] and [ErrBadManifest]) where the original
// counted it unpinned; hex in either case; "size" as a synonym of "bytes", a size mismatch named beside the
// hashes; two entries of one base name with different hashes refused as ambiguous.
//
// Determinism. The hash is a pure function of the bytes; the verdict and its text are pure functions of the
// file's bytes, its base name and the manifest's bytes. Errors that mean "refused" (exit status 2 of bankml pin)
// wrap [ErrRefused]; a "sha256:" argument that is no digest wraps [ErrBadDigest] (a usage error, exit status 1);
// all others are I/O errors. The full record, with the pipelined read: docs/manifest.md.
package provenance
