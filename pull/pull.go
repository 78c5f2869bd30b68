// Package pull downloads a model file whose size and sha256 are known in advance: streamed to a temporary
// file, resumed with an HTTP Range request after an interruption, hashed while it streams, checked against
// free disk first, and renamed into place only when its sha256 is the one expected.
//
// # Design record
//
// What. Fetch takes a Source (a URL, or a local file, with the size and sha256 the publisher records) and a
// folder, and leaves DIR/sha256-<hex> holding exactly those bytes, or nothing new but a resumable
// DIR/sha256-<hex>.partial. A mirror (Options.Mirror: an http(s) URL or a local folder, as `--from` and
// $BANKML_MIRROR give it) serves each file under its base name, so a folder of GGUF files is a mirror.
//
// Follows. Ollama's pull (blobs named by their digest, a partial download resumed, the digest checked
// before the blob is used); RFC 9110 §14 range requests (Range: bytes=N-; a 206 whose Content-Range starts
// at N is appended, a 200 restarts from zero); the Hugging Face LFS oid as the file's sha256.
//
// Deliberate differences. One connection per file (Ollama splits large blobs into parallel parts): bankml's
// files are one GGUF each and the limit is the link, not the connection count. A wrong digest deletes the
// partial download (it cannot be resumed into the right one; the source itself is never touched) and is an
// error naming both digests; a body longer than the expected size is cut off and refused the same way. When
// the bytes that did not verify began with a partial download an earlier pull left (a stale or damaged
// .partial file, which the source cannot be blamed for), that partial is discarded and the whole file
// fetched once more from zero: only a digest that is still wrong then is the source's fault.
//
// Probe asks the source of a file already fetched whether it still serves it (a mirror folder's file looked
// up, an http(s) source asked for its first byte), so that a pull of a model the store has checks its source
// as ollama pull re-reads the registry's manifest, without downloading the file again.
//
// Errors. Fetch's and Probe's callers say which model is being pulled (package store: "store: NAME:TAG: ...",
// after the command's own "pull: "), so their errors carry no "pull:" prefix of their own: they start with the
// source or the problem. A source that
// cannot be reached (no network, a server down) is an error that says how to pull from a mirror instead
// (--from, $BANKML_MIRROR), or to check the mirror when one was used.
//
// Determinism. The result is the expected bytes or an error; nothing is renamed into place unverified.
package pull

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// EnvMirror names a mirror pulls of catalog names read from instead of the publisher (an http(s) URL or a
// folder), as `bankml pull --from` does (package store applies it; an address given explicitly is not
// redirected by it).
const EnvMirror = "BANKML_MIRROR"

// Source is a file to fetch.
type Source struct {
	URL    string // http(s):// address, or a local file path
	Name   string // the file's base name: what a mirror serves it as; "" takes the URL's last element
	Size   int64  // expected bytes; 0 when unknown (then the disk check uses Content-Length)
	SHA256 string // expected sha256, lower-case hex (required)
}

// Options configure Fetch. Zero values take the defaults named.
type Options struct {
	// Mirror replaces the source's address: an http(s) base URL (the file is Mirror/Name) or a local
	// folder (the file is Mirror/Name); "" fetches from Source.URL.
	Mirror string
	Client *http.Client // nil: a client without an overall timeout (downloads are long), proxies from the environment
	// Retries is how many times an interrupted transfer is resumed with a Range request before Fetch gives
	// up (default 5); the partial file stays for a later Fetch.
	Retries int
	// Progress, if set, is called before the transfer with the expected total and the bytes already on
	// disk, and returns a writer that receives every byte as it arrives (a progress bar); nil: none. It is
	// called once more, from 0, when a file resumed from an earlier pull's partial download did not verify
	// and is fetched again from zero.
	Progress func(total, done int64) io.Writer
	// FreeSpace reports the bytes free on the file system of dir (default: the operating system's count;
	// nil result and an error skip the check on systems without one).
	FreeSpace func(dir string) (uint64, error)
	// Backoff is the pause before a resumed attempt (default 500 ms).
	Backoff time.Duration
}

// DigestError is a download whose bytes do not have the expected sha256: nothing was stored, and the partial
// download (bankml's copy in the folder, never the source) was removed. When the bytes that did not verify
// began with a partial download an earlier pull had left, that partial was discarded and the file fetched
// once more from zero: a DigestError then blames the source's own bytes (Again).
type DigestError struct {
	From      string // where the bytes came from
	Want, Got string // expected and received sha256, lower-case hex
	// Copy is set when the source is a local file being added (no mirror): nothing was downloaded, the
	// copy bankml made was removed and the file itself left as it is.
	Copy bool
	// Again is set when the bytes were fetched a second time from zero, after the first attempt (resumed
	// from a partial download an earlier pull left) did not verify either.
	Again bool
}

func (e *DigestError) Error() string {
	what := "the partial download was removed"
	if e.Copy {
		what = "the copy was removed; the file itself is left as it is"
	}
	again := ""
	if e.Again {
		again = ", fetched again from zero after the partial download an earlier pull left did not verify"
	}
	return fmt.Sprintf("refused: %s has sha256 %s, not the expected %s%s (nothing was stored; %s)", e.From, e.Got, e.Want, again, what)
}

// ErrNoSpace is wrapped by Fetch's error when the disk cannot hold the file.
var ErrNoSpace = errors.New("not enough free disk space")

var hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

// BlobName is the file name of a blob with the given sha256: "sha256-<hex>", as Ollama names its blobs.
func BlobName(sha string) string { return "sha256-" + sha }

// Fetch makes dir/BlobName(src.SHA256) hold the source's bytes and returns its path. An existing blob of
// the expected size is taken as it is (blobs are only ever renamed into place verified). Errors: a missing
// or malformed expected digest, too little disk (ErrNoSpace), an HTTP status other than 200/206, an
// interruption that Retries resumptions did not get past (the partial file stays for the next call), a size
// other than expected, and a *DigestError. A file resumed from a partial download an earlier call left that
// does not verify is fetched once more from zero before a *DigestError (Again) names the source.
func Fetch(ctx context.Context, src Source, dir string, o Options) (string, error) {
	src.SHA256 = strings.ToLower(strings.TrimPrefix(src.SHA256, "sha256:"))
	if !hexDigest.MatchString(src.SHA256) {
		return "", fmt.Errorf("expected sha256 %q is not 64 hex digits", src.SHA256)
	}
	if src.Name == "" {
		src.Name = baseName(src.URL)
	}
	o = o.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	final := filepath.Join(dir, BlobName(src.SHA256))
	if st, err := os.Stat(final); err == nil && (src.Size == 0 || st.Size() == src.Size) {
		return final, nil
	}
	from := src.URL
	if o.Mirror != "" {
		from = mirrorPath(o.Mirror, src.Name)
	}
	partial := final + ".partial"
	f, err := os.OpenFile(partial, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return "", err
	}
	defer f.Close()
	// Hash what an earlier, interrupted pull left, then go on from its end.
	h := sha256.New()
	have, err := io.Copy(h, f)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", partial, err)
	}
	if src.Size > 0 && have > src.Size { // not a prefix of the file: start again
		if have, h, err = restart(f); err != nil {
			return "", err
		}
	}
	t := &transfer{src: src, from: from, f: f, h: h, have: have, resumed: have, o: o, dir: dir}
	got, err := t.fetch(ctx)
	if err == nil && got != src.SHA256 && t.resumed > 0 {
		// The bytes an earlier pull left may be what is wrong (a different file, a damaged disk), not the
		// source's: discard them and fetch the whole file once more before blaming the source.
		bad := got
		if err = t.restart(); err == nil {
			if got, err = t.fetch(ctx); err != nil {
				err = fmt.Errorf("the partial download an earlier pull left (%d bytes) was discarded: completed from %s it had sha256 %s, not the expected %s; fetching the whole file again: %w", have, from, bad, src.SHA256, err)
			} else if got != src.SHA256 {
				f.Close()
				os.Remove(partial)
				return "", &DigestError{From: from, Want: src.SHA256, Got: got, Copy: !isHTTP(from) && o.Mirror == "", Again: true}
			}
		}
	}
	if err != nil {
		if st, serr := f.Stat(); serr == nil && st.Size() == 0 { // nothing arrived: leave no empty partial file
			f.Close()
			os.Remove(partial)
		}
		return "", err
	}
	if got != src.SHA256 {
		f.Close()
		os.Remove(partial)
		return "", &DigestError{From: from, Want: src.SHA256, Got: got, Copy: !isHTTP(from) && o.Mirror == ""}
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(partial, final); err != nil {
		return "", err
	}
	syncDir(dir)
	return final, nil
}

// withDefaults is o with its zero fields set as Fetch and Probe use them: 5 retries 500 ms apart, the disk's
// free space, a client of the default transport.
func (o Options) withDefaults() Options {
	if o.Retries <= 0 {
		o.Retries = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = 500 * time.Millisecond
	}
	if o.FreeSpace == nil {
		o.FreeSpace = diskFree
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: http.DefaultTransport}
	}
	return o
}

// Probe asks the source of a file the store already holds whether it still serves it, without downloading it:
// a local file or a mirror folder's file is looked up, an http(s) source asked for its first byte (a Range
// request, redirects followed), retried as Fetch retries. Errors are Fetch's for the same source: one that
// cannot be reached (with the advice to use, or check, a mirror), a mirror without the file, an HTTP status
// other than 200/206, and a size other than src.Size ("refused: ..."). The sha256 is not re-read: the bytes
// were verified when the blob was renamed into place, and only a download could check them again.
func Probe(ctx context.Context, src Source, o Options) error {
	if src.Name == "" {
		src.Name = baseName(src.URL)
	}
	o = o.withDefaults()
	from := src.URL
	if o.Mirror != "" {
		from = mirrorPath(o.Mirror, src.Name)
	}
	t := &transfer{src: src, from: from, o: o, probe: true}
	if !isHTTP(from) {
		st, err := os.Stat(from)
		switch {
		case errors.Is(err, fs.ErrNotExist) && o.Mirror != "":
			return t.noMirrorFile()
		case err != nil:
			return err
		case st.IsDir():
			return fmt.Errorf("%s is a folder, not the model file", from)
		case src.Size > 0 && st.Size() != src.Size:
			return fmt.Errorf("refused: %s has %d bytes, not the expected %d", from, st.Size(), src.Size)
		}
		return nil
	}
	var last error
	for attempt := 0; attempt <= o.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s: %w", from, ctx.Err())
			case <-time.After(o.Backoff):
			}
		}
		err := t.probeOnce(ctx)
		var fatal *fatalError
		if err == nil || errors.As(err, &fatal) || ctx.Err() != nil {
			return err
		}
		last = err
	}
	return t.giveUp(last)
}

// probeOnce asks t.from for its first byte and checks the size it reports.
func (t *transfer) probeOnce(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.from, nil)
	if err != nil {
		return &fatalError{err}
	}
	req.Header.Set("User-Agent", "bankml-pull")
	req.Header.Set("Range", "bytes=0-0")
	resp, err := t.o.Client.Do(req)
	if err != nil {
		return err // a network error: try again
	}
	resp.Body.Close()
	total := int64(-1)
	switch resp.StatusCode {
	case http.StatusOK:
		total = resp.ContentLength
	case http.StatusPartialContent:
		if _, n, ok := contentRange(resp.Header.Get("Content-Range")); ok {
			total = n
		}
	default:
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return &unavailableError{fmt.Errorf("HTTP %s", resp.Status)}
		}
		return fatal("%s: HTTP %s", t.from, resp.Status)
	}
	if t.src.Size > 0 && total >= 0 && total != t.src.Size {
		return fatal("refused: %s has %d bytes, not the expected %d", t.from, total, t.src.Size)
	}
	return nil
}

// restart empties the partial file and its hash.
func restart(f *os.File) (int64, hash.Hash, error) {
	if err := f.Truncate(0); err != nil {
		return 0, nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, nil, err
	}
	return 0, sha256.New(), nil
}

func checkSpace(free func(string) (uint64, error), dir string, need int64) error {
	n, err := free(dir)
	if err != nil || need <= 0 {
		return nil // no count on this system: the write itself will fail if the disk fills
	}
	if uint64(need) > n {
		return fmt.Errorf("%w: %d bytes still to download, %d free in %s", ErrNoSpace, need, n, dir)
	}
	return nil
}

// transfer is one file's download state across resumptions.
type transfer struct {
	src  Source
	from string
	f    *os.File
	h    hash.Hash
	have int64
	// resumed is how many of the bytes in f an earlier pull left (0 once the file was started again).
	resumed int64
	o       Options
	sink    io.Writer
	dir     string
	probe   bool // a Probe: nothing is downloaded, the blob in the store stays
}

// fetch checks the free disk, completes the file from t.have on and returns its sha256 (lower-case hex).
func (t *transfer) fetch(ctx context.Context) (string, error) {
	if t.src.Size > 0 {
		if err := checkSpace(t.o.FreeSpace, t.dir, t.src.Size-t.have); err != nil {
			return "", err
		}
	}
	t.sink = io.Discard
	if t.o.Progress != nil {
		t.sink = t.o.Progress(t.src.Size, t.have)
	}
	if err := t.run(ctx); err != nil {
		return "", err
	}
	return hex.EncodeToString(t.h.Sum(nil)), nil
}

// restart empties the partial file and its hash: nothing an earlier pull left is kept.
func (t *transfer) restart() error {
	var err error
	t.have, t.h, err = restart(t.f)
	t.resumed = 0
	return err
}

// run reads from the source until it has Size bytes (or, with no size, until a clean end), resuming after
// an interruption.
func (t *transfer) run(ctx context.Context) error {
	var last error
	for attempt := 0; attempt <= t.o.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w (%s)", ctx.Err(), t.kept())
			case <-time.After(t.o.Backoff):
			}
		}
		before := t.have
		done, err := t.once(ctx)
		if done {
			return nil
		}
		var fatal *fatalError
		if errors.As(err, &fatal) || ctx.Err() != nil {
			return err
		}
		last = err
		if t.have > before {
			attempt = 0 // progress was made: an interruption, not a dead source
		}
	}
	return t.giveUp(last)
}

// giveUp is the error of a source that failed every attempt with last: the source, why, what is kept and,
// when it could not be reached, the advice to use (or check) a mirror.
func (t *transfer) giveUp(last error) error {
	var ue *url.Error
	var un *unavailableError
	advice := ""
	switch {
	case errors.As(last, &ue):
		advice = t.unreachable()
		if ue.URL == t.from {
			last = ue.Err // the client's error names the address again: "Get \"URL\": ..."
		}
	case errors.As(last, &un):
		advice = t.unreachable()
	}
	return fmt.Errorf("%s: %w (%s)%s", t.from, last, t.kept(), advice)
}

// unavailableError is an HTTP status the server may recover from (5xx, 429).
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// kept says what an unfinished transfer leaves for the next pull.
func (t *transfer) kept() string {
	switch {
	case t.probe:
		return "the file already in the store is left as it is"
	case t.have == 0:
		return "nothing downloaded"
	case t.src.Size > 0:
		return fmt.Sprintf("%d of %d bytes kept for the next pull", t.have, t.src.Size)
	}
	return fmt.Sprintf("%d bytes kept for the next pull", t.have)
}

// unreachable is the advice for a source that could not be reached (a network error, or a server error
// that outlasted the retries): pull from a mirror, or check the one in use.
func (t *transfer) unreachable() string {
	if t.o.Mirror != "" {
		return fmt.Sprintf(": the mirror %s cannot be reached; check --from or $%s", t.o.Mirror, EnvMirror)
	}
	return fmt.Sprintf(": the source cannot be reached; to pull from a mirror instead (an http(s) URL or a folder holding the file), give --from URL|DIR (for a catalog name, $%s too)", EnvMirror)
}

// fatalError is an error resuming will not cure.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

func fatal(format string, args ...any) error { return &fatalError{fmt.Errorf(format, args...)} }

// once makes one request (or opens the local file) from t.have on and copies what arrives. It reports
// done when the file is complete.
func (t *transfer) once(ctx context.Context) (bool, error) {
	if t.src.Size > 0 && t.have == t.src.Size {
		return true, nil
	}
	body, offset, total, err := t.open(ctx)
	if err != nil {
		return false, err
	}
	defer body.Close()
	if offset != t.have { // the source starts elsewhere (a 200 to a Range request): start again
		if err := t.restart(); err != nil {
			return false, &fatalError{err}
		}
	}
	if t.src.Size == 0 && total > 0 && t.have == 0 {
		if err := checkSpace(t.o.FreeSpace, t.dir, total); err != nil {
			return false, &fatalError{err}
		}
	}
	if _, err := t.f.Seek(t.have, io.SeekStart); err != nil {
		return false, &fatalError{err}
	}
	limit := int64(-1)
	if t.src.Size > 0 {
		limit = t.src.Size - t.have + 1 // one byte more than expected shows a longer body
	}
	var r io.Reader = body
	if limit >= 0 {
		r = io.LimitReader(body, limit)
	}
	n, err := io.Copy(io.MultiWriter(t.f, t.h, t.sink), r)
	t.have += n
	if t.src.Size > 0 && t.have > t.src.Size {
		t.f.Close()
		os.Remove(t.f.Name())
		return false, fatal("refused: %s sent more than the expected %d bytes (nothing was stored; the partial download was removed)", t.from, t.src.Size)
	}
	if err != nil {
		return false, err
	}
	if t.src.Size > 0 && t.have < t.src.Size {
		return false, fmt.Errorf("the transfer ended at %d of %d bytes", t.have, t.src.Size)
	}
	return true, nil
}

// open returns the source's bytes from t.have on (or from 0 when the source cannot start there), the offset
// they start at and the file's total size when the source says it (else -1).
func (t *transfer) open(ctx context.Context) (io.ReadCloser, int64, int64, error) {
	if !isHTTP(t.from) {
		f, err := os.Open(t.from)
		if errors.Is(err, fs.ErrNotExist) && t.o.Mirror != "" { // a folder mirror without this file, or no folder
			return nil, 0, 0, t.noMirrorFile()
		}
		if err != nil {
			return nil, 0, 0, &fatalError{err}
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, 0, 0, &fatalError{err}
		}
		if t.src.Size > 0 && st.Size() != t.src.Size {
			f.Close()
			return nil, 0, 0, fatal("refused: %s has %d bytes, not the expected %d", t.from, st.Size(), t.src.Size)
		}
		if _, err := f.Seek(t.have, io.SeekStart); err != nil {
			f.Close()
			return nil, 0, 0, &fatalError{err}
		}
		return f, t.have, st.Size(), nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.from, nil)
	if err != nil {
		return nil, 0, 0, &fatalError{err}
	}
	req.Header.Set("User-Agent", "bankml-pull")
	if t.have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(t.have, 10)+"-")
	}
	resp, err := t.o.Client.Do(req)
	if err != nil {
		return nil, 0, 0, err // a network error: resume
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return resp.Body, 0, resp.ContentLength, nil
	case http.StatusPartialContent:
		start, total, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok {
			resp.Body.Close()
			return nil, 0, 0, fatal("%s: 206 with Content-Range %q", t.from, resp.Header.Get("Content-Range"))
		}
		if t.src.Size > 0 && total > 0 && total != t.src.Size {
			resp.Body.Close()
			return nil, 0, 0, fatal("refused: %s has %d bytes, not the expected %d", t.from, total, t.src.Size)
		}
		return resp.Body, start, total, nil
	case http.StatusRequestedRangeNotSatisfiable: // the partial file is not a prefix of this source
		resp.Body.Close()
		if err := t.restart(); err != nil {
			return nil, 0, 0, &fatalError{err}
		}
		return nil, 0, 0, errors.New("the source refused the range: starting again")
	default:
		resp.Body.Close()
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return nil, 0, 0, &unavailableError{fmt.Errorf("HTTP %s", resp.Status)} // the server may come back
		}
		return nil, 0, 0, fatal("%s: HTTP %s", t.from, resp.Status)
	}
}

// noMirrorFile is the error of a folder mirror that does not hold the file: no such folder, or no such file
// in it. What was downloaded is said as Fetch says it (t.kept: nothing, for a Probe).
func (t *transfer) noMirrorFile() error {
	if st, serr := os.Stat(t.o.Mirror); serr != nil || !st.IsDir() {
		return fatal("the mirror %s is no folder (%s): check --from or $%s, or unset it to download from the publisher", t.o.Mirror, t.kept(), EnvMirror)
	}
	return fatal("the mirror %s has no %s (%s): give --from a mirror that holds it, or unset $%s to download from the publisher", t.o.Mirror, t.src.Name, t.kept(), EnvMirror)
}

// contentRange reads "bytes START-END/TOTAL" (TOTAL may be "*": -1).
func contentRange(s string) (start, total int64, ok bool) {
	s, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(s, "/")
	if !found {
		return 0, 0, false
	}
	first, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, total, true
}

func isHTTP(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// mirrorPath is the address of the file name at a mirror (a base URL or a folder).
func mirrorPath(mirror, name string) string {
	if isHTTP(mirror) {
		return strings.TrimSuffix(mirror, "/") + "/" + url.PathEscape(name)
	}
	return filepath.Join(mirror, name)
}

func baseName(s string) string {
	if isHTTP(s) {
		if u, err := url.Parse(s); err == nil {
			s = u.Path
		}
		return s[strings.LastIndexByte(s, '/')+1:]
	}
	return filepath.Base(s)
}

// Sum returns the sha256 of a file (lower-case hex), for sources whose digest the caller computes.
func Sum(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
