package provenance

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
)

// ErrRefused is wrapped by every error of Pin that refuses the file: a hash that differs from the pinned one, a
// file the manifest does not name, an ambiguous or malformed manifest. Any other error of Pin is an I/O error.
var ErrRefused = errors.New("refused")

// The verdicts of a Result.
const (
	VerdictPinned   = "pinned"   // the file's sha256 equals the pinned one
	VerdictRefuse   = "refuse"   // the file is refused; Result.Reason says why
	VerdictUnpinned = "unpinned" // no manifest was given: the file was hashed, not pinned
)

// Result is what Pin found. Its JSON form is the object of `bankml pin --json`.
type Result struct {
	Verdict    string `json:"verdict"`                 // VerdictPinned, VerdictRefuse or VerdictUnpinned
	Pinned     bool   `json:"pinned"`                  // Verdict == VerdictPinned
	File       string `json:"file"`                    // the path checked
	Name       string `json:"name"`                    // its base name, the name looked up in the manifest
	SHA256     string `json:"sha256,omitempty"`        // the file's sha256, 64 lower-case hex digits ("" if it was not hashed)
	Size       int64  `json:"size"`                    // the file's length in bytes (when hashed)
	Want       string `json:"pinned_sha256,omitempty"` // the pinned sha256 ("" when the file has no pin)
	WantSize   int64  `json:"pinned_size"`             // the pinned length in bytes, or -1 when not recorded
	Manifest   string `json:"manifest,omitempty"`      // the manifest path, or the digest as given
	FromDigest bool   `json:"from_digest,omitempty"`   // the pin was a digest given directly, not a manifest file
	Source     string `json:"source,omitempty"`        // the upstream source the manifest names
	Revision   string `json:"revision,omitempty"`      // the upstream revision the manifest names
	Reason     string `json:"reason,omitempty"`        // why the file was refused or not pinned
}

// Pin hashes the file at path and checks it against manifest, which is one of:
//   - "" (no manifest): the file is only hashed; the Result has Verdict "unpinned" and the error is nil, so that
//     a caller that does not require a pin yet (bankml run) can report the hash and go on;
//   - 64 hex digits, or "sha256:" and 64 hex digits (an Ollama-style digest): the file's sha256 must equal it,
//     whatever the file's name (a manifest file whose name has this form must be given as "./NAME");
//   - anything else: the path of a manifest (docs/manifest.md), in which the file's base name must have an entry
//     whose sha256 equals the file's.
//
// The error is nil when the file is pinned (or unpinned with no manifest). A refusal returns the Result with
// Verdict "refuse" and the Reason, and an error with the same text wrapping ErrRefused (and ErrBadManifest when
// the manifest is at fault). A manifest that starts with "sha256:" but is no digest is an error wrapping
// ErrBadDigest, before anything is read (DigestArg). Any other error is an I/O error reading the file or the
// manifest. If progress is not nil, the file's bytes are written to it as they are hashed (see SHA256File).
//
// The manifest is read and checked before the file is hashed, so a bad manifest is refused at once; the file is
// then hashed even when the manifest has no entry for it, so that the Result always carries its sha256.
func Pin(path, manifest string, progress io.Writer) (Result, error) {
	res := Result{File: path, Name: filepath.Base(path), WantSize: -1, Manifest: manifest}
	var entries []Entry
	manifestName := ""
	switch d, isDigest, err := DigestArg(manifest); {
	case err != nil:
		// "sha256:" announces a digest, never a file name: a malformed one is the caller's usage error.
		return res, err
	case manifest == "":
	case isDigest:
		res.FromDigest = true
		entries = []Entry{{Path: res.Name, Size: -1, SHA256: d}}
		manifestName = "the digest given"
	default:
		m, err := ReadManifest(manifest)
		if err != nil {
			if errors.Is(err, ErrBadManifest) {
				return refuse(res, fmt.Errorf("%w: %w", err, ErrRefused))
			}
			return res, err
		}
		res.Source, res.Revision = m.Source, m.Revision
		entries = m.Lookup(res.Name)
		manifestName = filepath.Base(manifest)
	}

	sum, n, err := hashFile(path, progress)
	if err != nil {
		return res, err
	}
	res.SHA256, res.Size = sum, n

	if manifest == "" {
		res.Verdict, res.Reason = VerdictUnpinned, "no manifest given"
		return res, nil
	}
	return Check(res, entries, manifestName)
}

// Check finishes a pin whose file has been hashed: res.Name, res.SHA256 and res.Size must be set, entries are the
// manifest entries of that name (see Manifest.Lookup) and manifestName names the manifest in a refusal. It returns
// res with the verdict filled in and, for a refusal, an error wrapping ErrRefused. Loaders that hash a file
// themselves (while streaming it, say) call Check instead of Pin.
func Check(res Result, entries []Entry, manifestName string) (Result, error) {
	if len(entries) == 0 {
		return refuse(res, fmt.Errorf("%s has no sha256 record in %s: unpinned, %w", res.Name, manifestName, ErrRefused))
	}
	want := entries[0]
	for _, e := range entries[1:] {
		if e.SHA256 != want.SHA256 {
			return refuse(res, fmt.Errorf("%s has %d entries in %s with different sha256 (%s, %s): ambiguous, %w",
				res.Name, len(entries), manifestName, want.SHA256, e.SHA256, ErrRefused))
		}
		if want.Size < 0 {
			want.Size = e.Size
		}
	}
	res.Want, res.WantSize = want.SHA256, want.Size
	sizeNote := ""
	if want.Size >= 0 && want.Size != res.Size {
		sizeNote = fmt.Sprintf(" (%d bytes, pinned %d)", res.Size, want.Size)
	}
	if res.SHA256 != want.SHA256 {
		return refuse(res, fmt.Errorf("%s sha256 %s != pinned %s%s: %w", res.Name, res.SHA256, want.SHA256, sizeNote, ErrRefused))
	}
	if sizeNote != "" { // the same hash with another size: the manifest contradicts itself
		return refuse(res, fmt.Errorf("%s sha256 %s matches the pin, but the file is %d bytes and %s says %d: inconsistent, %w",
			res.Name, res.SHA256, res.Size, manifestName, want.Size, ErrRefused))
	}
	res.Verdict, res.Pinned, res.Reason = VerdictPinned, true, ""
	return res, nil
}

// refuse fills in a refusal and returns it with err.
func refuse(res Result, err error) (Result, error) {
	res.Verdict, res.Pinned, res.Reason = VerdictRefuse, false, err.Error()
	return res, err
}
