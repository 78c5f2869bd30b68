// Package provenance checks that a model file is the one its publisher released (sha256 at disk speed, pinned
// against a FORK.json manifest or a bare digest), and holds the operator keys that sign what bankml answers.
//
// # Design record
//
// What it does. [SHA256File] hashes a file; [Pin] hashes a file and checks the hash against the entry of its base
// name in a manifest ([ParseManifest], documented in docs/manifest.md), or against a digest given directly (a bare
// 64-hex-digit sha256 or an Ollama-style "sha256:<hex>"). A file is admitted only when its hash equals the pinned
// one; a mismatch is refused naming both hashes, a file the manifest does not name is "unpinned, refused", and a
// manifest that cannot be parsed refuses every file. This is the second of the three gates of
// ../shared/seeds/bankml-TECHNICAL.md §III.1: a model that cannot be verified does not answer.
//
// What it follows. The FORK.json shapes and error texts of the original runtime (the digest's §4.2 "Pins"): the
// importer's {source_repo, source_url, source_revision, licence_tag, imported_at_utc, pinned_from,
// files:[{path, bytes, sha256}]} and the converter's {kind, source, converter, converted_at_utc, oracle, inputs,
// files}; files matched by base name; key order free; the texts "<name> has no sha256 record in FORK.json:
// unpinned, refused" and "<name> sha256 <got> != pinned <want>: refused" (with the manifest's own base name in
// place of FORK.json). Hashing is FIPS 180-4 sha256 from crypto/sha256, which uses the SHA-NI instructions where
// the CPU has them (and AVX2 or the portable rounds elsewhere).
//
// Deliberate differences from the original's narrow scanner:
//   - A manifest is parsed as JSON and checked whole: malformed JSON, a missing or non-array "files", an entry
//     without a path, a sha256 that is not 64 hex digits or a negative size is an error naming the entry (the
//     original silently counted such entries as unpinned). Such an error still refuses (it wraps [ErrRefused] and
//     [ErrBadManifest]).
//   - Hex digits are accepted in either case and reported in lower case; an entry's sha256 may carry a "sha256:"
//     prefix.
//   - "size" is accepted as a synonym of "bytes". When the manifest records a size and the file's differs, the
//     refusal says so beside the two hashes (the file is still hashed, so both hashes can be named).
//   - Two entries with the same base name but different hashes make the pin ambiguous: refused.
//
// Speed. The file is read in 1 MiB chunks by one goroutine while another hashes the previous chunk (two buffers),
// so a cold read and the hash overlap; on a file in the page cache the hash alone sets the pace. The optional
// progress writer receives every chunk after it is hashed (a progress bar implements io.Writer) and cannot slow
// the hash down by more than its own cost.
//
// Determinism. The hash is a pure function of the bytes; the pin verdict and its text are pure functions of the
// file's bytes, its base name and the manifest's bytes. Nothing depends on the time, the host or map order.
//
// Keys and receipts. [WriteKeyFiles] makes an operator's Ed25519 key in C2SP signed-note form (the private key
// 0600, never replaced; FILE.pub the verifier key; FILE.pem for openssl), its key id the signed-note key hash
// ([KeyID]). [Signer.SignReceipt] signs a receipt over its RFC 8785 (JCS, github.com/gowebpki/jcs) canonical
// form without the "signature" member ([SignedMessage]); [VerifyReceipt] checks it. RFC 8785 rather than a
// signed note: the receipt stays one JSON object whose members are exactly what is signed (no second copy to
// disagree), and JSON.stringify over sorted members is RFC 8785, so a browser verifies with no library;
// docs/receipts.md shows openssl and any Ed25519 library doing it.
//
// Errors are wrapped with what was being done and on which file. Errors that mean "refused" (the exit status 2
// of bankml pin) wrap [ErrRefused]; all others are I/O errors (exit status 1).
package provenance
