package provenance

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/bankml/bankml/internal/fsutil"
)

// chunkSize is the size of one read. 1 MiB keeps a chunk in the L2 cache between its read and its hash, and is
// large enough that the per-read system call cost is negligible.
const chunkSize = 1 << 20

// DigestPrefix is the prefix of an Ollama-style digest, "sha256:<64 hex digits>".
const DigestPrefix = "sha256:"

// SHA256File returns the sha256 of the file at path as 64 lower-case hex digits. If progress is not nil, every
// chunk of the file is written to it after it has been hashed (e.g. a progress bar); errors from progress are
// ignored.
func SHA256File(path string, progress io.Writer) (string, error) {
	sum, _, err := hashFile(path, progress)
	return sum, err
}

// hashFile hashes the file at path and returns its hex sha256 and its length in bytes.
func hashFile(path string, progress io.Writer) (string, int64, error) {
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return "", 0, fmt.Errorf("sha256: %w", err)
	}
	defer f.Close()
	sum, n, err := HashReader(f, progress)
	if err != nil {
		return "", n, fmt.Errorf("sha256 of %s: %w", path, err)
	}
	return sum, n, nil
}

// HashReader returns the sha256 of everything r yields until io.EOF, as 64 lower-case hex digits, and the number
// of bytes hashed. Reading and hashing overlap: one goroutine reads the next chunk while the caller's goroutine
// hashes the last one. If progress is not nil, each chunk is written to it after it has been hashed; errors from
// progress are ignored. A read error ends the hash and is returned with the count hashed so far.
func HashReader(r io.Reader, progress io.Writer) (string, int64, error) {
	type chunk struct {
		buf []byte
		n   int
	}
	const nbuf = 2
	free := make(chan []byte, nbuf)
	full := make(chan chunk, nbuf)
	for range nbuf {
		free <- make([]byte, chunkSize)
	}
	var readErr error // written by the reader before it closes full; read after full is drained
	go func() {
		defer close(full)
		for buf := range free {
			n, err := io.ReadFull(r, buf)
			if n > 0 {
				full <- chunk{buf, n}
			}
			if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
				return
			}
			if err != nil {
				readErr = err
				return
			}
		}
	}()
	h := sha256.New()
	var total int64
	for c := range full {
		h.Write(c.buf[:c.n]) // a hash.Hash never returns an error
		total += int64(c.n)
		if progress != nil {
			_, _ = progress.Write(c.buf[:c.n])
		}
		free <- c.buf // never blocks: at most nbuf buffers exist
	}
	if readErr != nil {
		return "", total, readErr
	}
	return hex.EncodeToString(h.Sum(nil)), total, nil
}

// ErrBadDigest is wrapped by the error of a manifest argument that starts with "sha256:" (which announces a
// digest, never a file name) without 64 hex digits after it (DigestArg, Pin): the caller's usage error, neither
// a refusal of the file (nothing is hashed) nor I/O.
var ErrBadDigest = errors.New("not a sha256 digest")

// DigestArg reads a manifest argument (bankml's --manifest): a digest (ParseDigest: 64 hex digits, or "sha256:"
// and 64 hex digits) is returned as 64 lower-case hex digits with isDigest true; anything else that starts with
// "sha256:" is an error wrapping ErrBadDigest naming the argument; anything else is the path of a manifest file
// (isDigest false, no error), "" included.
func DigestArg(s string) (digest string, isDigest bool, err error) {
	if d, ok := ParseDigest(s); ok {
		return d, true, nil
	}
	if len(s) >= len(DigestPrefix) && strings.EqualFold(s[:len(DigestPrefix)], DigestPrefix) {
		return "", false, fmt.Errorf("--manifest %q: %w: want sha256: and 64 hex digits", s, ErrBadDigest)
	}
	return "", false, nil
}

// ParseDigest reports whether s is a sha256 digest given directly: exactly 64 hex digits, or "sha256:" followed by
// 64 hex digits (an Ollama-style digest; the prefix in any case). It returns the digest as 64 lower-case hex
// digits.
func ParseDigest(s string) (string, bool) {
	if len(s) == len(DigestPrefix)+64 && strings.EqualFold(s[:len(DigestPrefix)], DigestPrefix) {
		s = s[len(DigestPrefix):]
	}
	if !isHex64(s) {
		return "", false
	}
	return strings.ToLower(s), true
}

// isHex64 reports whether s is exactly 64 hex digits, in either case.
func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
