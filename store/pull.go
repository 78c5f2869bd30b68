package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bankml/bankml/catalog"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/pull"
)

// PullOptions configure Pull.
type PullOptions struct {
	// Mirror is read from instead of the publisher: an http(s) base URL or a folder serving each file under
	// its base name (`--from`); "" reads from the publisher, or, for a catalog name, from $BANKML_MIRROR when
	// it is set (ResolvedMirror). An hf:// or http(s) address is read from the address itself unless Mirror
	// is given: the environment's mirror, set for the catalog's files, does not redirect an address the user
	// typed.
	Mirror string
	// SHA256 is the expected digest of an http(s), hf:// or local-file source (required for the first two;
	// for a local file, without it the file's own sha256 is taken when it is added). Ignored for catalog
	// names, whose digest is the catalog's.
	SHA256 string
	// Name is the NAME[:TAG] to store an http(s), hf:// or local-file source under (default: the file's base
	// name without ".gguf", tag "latest").
	Name string
	// Fetch configures the download (progress, client, retries).
	Fetch pull.Options
}

// HFBase is where hf:// addresses resolve.
const HFBase = "https://huggingface.co/"

// ParseHF reads hf://OWNER/REPO[@REVISION]/PATH into the Hugging Face resolve URL (revision "main" when none
// is given), the repository and the revision. Errors name what is missing.
func ParseHF(s string) (u, repo, rev string, err error) {
	rest, ok := strings.CutPrefix(s, "hf://")
	if !ok {
		return "", "", "", fmt.Errorf("%q is not an hf:// address", s)
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", fmt.Errorf("%q: an hf:// address is hf://OWNER/REPO[@REVISION]/PATH/TO/FILE.gguf", s)
	}
	name, rev, _ := strings.Cut(parts[1], "@")
	if rev == "" {
		rev = "main"
	}
	repo = parts[0] + "/" + name
	return HFBase + repo + "/resolve/" + url.PathEscape(rev) + "/" + parts[2], repo, rev, nil
}

// Pull brings a model into the store and returns its manifest. what is a catalog NAME[:TAG], an
// hf://OWNER/REPO[@REV]/FILE or http(s) address (with PullOptions.SHA256), or a local file. A catalog model
// whose file the store already holds whole is not downloaded again, but its source (the mirror, else the
// publisher) is asked all the same (pull.Probe), as ollama pull re-reads the registry's manifest of a model it
// has: one that cannot be reached, lacks the file or serves another size fails the pull, and the manifest
// written records the source asked. A file in the store cut short or damaged is fetched again. Errors name
// the model ("store: NAME:TAG: why"; the caller says it pulls): package pull's (a wrong digest refused naming
// both, too little disk, an interrupted transfer kept for the next pull, a source that cannot be reached), an
// unknown name (listing the catalog), a missing --sha256.
func (s *Store) Pull(ctx context.Context, what string, o PullOptions) (*Manifest, error) {
	if strings.HasPrefix(what, "hf://") || strings.HasPrefix(what, "http://") || strings.HasPrefix(what, "https://") {
		o.Mirror = absMirror(o.Mirror) // the address asked for, not $BANKML_MIRROR's copy of the catalog
	} else {
		o.Mirror = o.ResolvedMirror()
	}
	switch {
	case strings.HasPrefix(what, "hf://"):
		u, repo, rev, err := ParseHF(what)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		return s.pullURL(ctx, u, Provenance{Kind: "hf", URL: u, Repo: repo, Revision: rev}, o)
	case strings.HasPrefix(what, "http://") || strings.HasPrefix(what, "https://"):
		return s.pullURL(ctx, what, Provenance{Kind: "url", URL: what}, o)
	}
	st, serr := os.Stat(what)
	if serr == nil && !st.IsDir() {
		return s.pullFile(ctx, what, o)
	}
	e, err := catalog.Lookup(what)
	if err != nil {
		if serr == nil { // a folder (a catalog name that is also a folder here is the catalog's model)
			return nil, folderError("store: ", what)
		}
		if looksLikePath(what) {
			return nil, &wrapError{fmt.Sprintf("store: %s: no such file, and not a model name", what), ErrNotFound}
		}
		return nil, fmt.Errorf("store: %w", err)
	}
	prov := Provenance{Kind: "catalog", URL: e.URL(), Repo: e.Repo, Revision: e.Revision, DigestSource: "bankml's catalog: " + e.Source}
	fo := o.Fetch
	fo.Mirror = o.Mirror
	src := pull.Source{URL: e.URL(), Name: e.BaseName(), Size: e.Size, SHA256: e.SHA256}
	if st, err := os.Stat(s.BlobPath(e.SHA256)); err == nil && st.Size() == e.Size {
		if msg, _ := ggufProblem(s.BlobPath(e.SHA256)); msg != "" {
			os.Remove(s.BlobPath(e.SHA256)) // damaged in the store since it was verified: fetched again below
		}
	}
	if st, err := os.Stat(s.BlobPath(e.SHA256)); err == nil && st.Size() == e.Size {
		// The file is in the store already (verified when it was renamed into place). As ollama pull re-reads
		// the registry's manifest of a model it has, the source is asked all the same: one that cannot be
		// reached, or that serves another size, fails the pull rather than passing for it.
		if err := pull.Probe(ctx, src, fo); err != nil {
			return nil, &pullError{ref: e.Ref(), err: err}
		}
	} else if _, err := pull.Fetch(ctx, src, s.BlobsDir(), fo); err != nil { // missing, or cut short: fetched
		return nil, &pullError{ref: e.Ref(), err: err}
	}
	prov.Mirror = o.Mirror
	m, err := s.record(e.Name, e.Tag, Blob{SHA256: e.SHA256, Size: e.Size, File: e.BaseName()}, prov, e.License)
	if err != nil {
		return nil, &pullError{ref: e.Ref(), err: err}
	}
	return m, nil
}

// pullError is a pull of the model ref that failed: "store: NAME:TAG: why". The command that pulls says it
// pulls (bankml pull's "pull: "); Resolve, pulling a model on first use for another command, says so
// ("store: pull NAME:TAG: why", firstUse).
type pullError struct {
	ref      string
	err      error // says why, without the prefix "store: "
	firstUse bool
}

func (e *pullError) Error() string {
	if e.firstUse {
		return "store: pull " + e.ref + ": " + e.err.Error()
	}
	return "store: " + e.ref + ": " + e.err.Error()
}

func (e *pullError) Unwrap() error { return e.err }

// folderError is the error of a model given as a folder: it exists, but is no model file (not "no such
// file"). prefix says what it is from ("store: ", "store: Modelfile: FROM ").
func folderError(prefix, what string) error {
	return fmt.Errorf("%s%s is a folder, not a GGUF file (give a GGUF file, a catalog NAME[:TAG], or an hf:// or http(s) address with --sha256)", prefix, what)
}

func looksLikePath(s string) bool {
	return strings.ContainsAny(s, `/\`) || strings.HasSuffix(strings.ToLower(s), ".gguf")
}

// ResolvedMirror is the mirror Pull reads a catalog name from: o.Mirror, else $BANKML_MIRROR (pull.EnvMirror);
// a folder made absolute (so it is recorded in the provenance, and named in errors, by its absolute path); ""
// for the publisher. (An hf:// or http(s) address is read through o.Mirror only.)
func (o PullOptions) ResolvedMirror() string {
	m := o.Mirror
	if m == "" {
		m = os.Getenv(pull.EnvMirror)
	}
	return absMirror(m)
}

// absMirror is the mirror m with a folder made absolute.
func absMirror(m string) string {
	if m != "" && !strings.HasPrefix(m, "http://") && !strings.HasPrefix(m, "https://") {
		if abs, err := filepath.Abs(m); err == nil {
			m = abs
		}
	}
	return m
}

// IsModelName reports whether what can only name a model (a catalog or store NAME[:TAG]): no file path, no
// URL or hf:// address, no white space. The store server pulls only such names for its clients.
func IsModelName(what string) bool {
	return !looksLikePath(what) && !strings.Contains(what, "://") && !strings.ContainsAny(what, " \t\r\n")
}

// record writes the manifest of a model just brought in (keeping no Modelfile settings: a pull replaces
// the model, as Ollama's does). Its errors carry no "store: " prefix: the caller names the model.
func (s *Store) record(name, tag string, b Blob, prov Provenance, license string) (*Manifest, error) {
	if err := s.checkGGUF(b); err != nil {
		return nil, err
	}
	prov.Added = time.Now().UTC()
	m := &Manifest{Name: name, Tag: tag, Model: b, Provenance: prov}
	if license != "" {
		m.License = []string{license}
	}
	if err := s.put(m); err != nil {
		return nil, err
	}
	return m, nil
}

// checkGGUF refuses a blob that is not a whole GGUF file (the error wraps ErrNotGGUF), before any manifest
// names it: one that does not start with GGUF's magic, or whose header, tensor infos or tensor data do not
// parse within the file (gguf.Open: a truncated download, a damaged copy). A pull or a create of such a file
// fails here, not at its first run. The blob is removed unless a manifest names it. An error reading the blob
// is returned as it is (I/O).
func (s *Store) checkGGUF(b Blob) error {
	p := s.BlobPath(b.SHA256)
	msg, err := ggufProblem(p)
	if err != nil || msg == "" {
		return err
	}
	bad := &wrapError{fmt.Sprintf("%s %s: nothing stored", b.File, msg), ErrNotGGUF}
	if ms, lerr := s.List(); lerr == nil && !slices.ContainsFunc(ms, func(m *Manifest) bool { return m.Model.SHA256 == b.SHA256 }) {
		os.Remove(p)
	}
	return bad
}

// ggufProblem says what keeps the file at p from being a whole GGUF file, as the end of a sentence about it
// ("is not a GGUF file (it does not start with the magic \"GGUF\")", "is not a whole GGUF file (gguf: ...)",
// in the parser's words without the path), or "" when it is one. An error reading the file is returned as it
// is (I/O, not its bytes).
func ggufProblem(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	f.Close()
	if err != nil || string(magic) != "GGUF" {
		return "is not a GGUF file (it does not start with the magic \"GGUF\")", nil
	}
	g, err := gguf.Open(p)
	if err == nil {
		return "", g.Close()
	}
	var pe *os.PathError
	if errors.As(err, &pe) && !errors.Is(err, gguf.ErrTruncated) {
		return "", err // the file could not be read: I/O, not its bytes
	}
	msg := err.Error()
	if i := strings.Index(msg, "gguf: "); i >= 0 {
		msg = msg[i:] // the parser's words, without the file's path
	}
	return "is not a whole GGUF file (" + msg + ")", nil
}

// storeName is the NAME:TAG a non-catalog source is stored under: o.Name, else the file's base name
// without ".gguf". A refused o.Name is named as the flag that gave it (--name); a base name that is no model
// name comes with the advice to give one.
func storeName(o PullOptions, file string) (string, string, error) {
	if o.Name != "" {
		name, tag, err := catalog.ParseRef(o.Name)
		if err != nil {
			return "", "", fmt.Errorf("store: --name: %w", err)
		}
		return name, tag, nil
	}
	name, tag, err := catalog.ParseRef(strings.TrimSuffix(file, filepath.Ext(file)))
	if err != nil {
		return "", "", fmt.Errorf("store: %w (give the model a name with --name NAME[:TAG])", err)
	}
	return name, tag, nil
}

func (s *Store) pullURL(ctx context.Context, u string, prov Provenance, o PullOptions) (*Manifest, error) {
	if o.SHA256 == "" {
		return nil, fmt.Errorf("store: %s: give its sha256 with --sha256 (the digest its publisher records; for Hugging Face, the file's LFS sha256)", u)
	}
	file := path(u)
	name, tag, err := storeName(o, file)
	if err != nil {
		return nil, err
	}
	sha := strings.ToLower(strings.TrimPrefix(o.SHA256, "sha256:"))
	fo := o.Fetch
	fo.Mirror = o.Mirror
	ref := name + ":" + tag
	p, err := pull.Fetch(ctx, pull.Source{URL: u, Name: file, SHA256: sha}, s.BlobsDir(), fo)
	if err != nil {
		return nil, &pullError{ref: ref, err: err} // err names the address
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil, &pullError{ref: ref, err: err}
	}
	prov.DigestSource = "given with --sha256"
	prov.Mirror = o.Mirror
	m, err := s.record(name, tag, Blob{SHA256: sha, Size: st.Size(), File: file}, prov, "")
	if err != nil {
		return nil, &pullError{ref: ref, err: err}
	}
	return m, nil
}

func (s *Store) pullFile(ctx context.Context, file string, o PullOptions) (*Manifest, error) {
	name, tag, err := storeName(o, filepath.Base(file))
	if err != nil {
		return nil, err
	}
	b, prov, err := s.addFile(ctx, file, o.SHA256, o.Fetch)
	if err == nil {
		var m *Manifest
		if m, err = s.record(name, tag, b, prov, ""); err == nil {
			return m, nil
		}
	}
	return nil, fmt.Errorf("store: add %s:%s: %w", name, tag, err)
}

// addFile copies a local file into the blobs, verified against sha (when given) or hashed, and returns its
// blob and provenance. Its errors name the file; the caller says what it was adding it as.
func (s *Store) addFile(ctx context.Context, file, sha string, fo pull.Options) (Blob, Provenance, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return Blob{}, Provenance{}, err
	}
	sha, size := strings.ToLower(strings.TrimPrefix(sha, "sha256:")), int64(0)
	prov := Provenance{Kind: "file", Path: abs, DigestSource: "given with --sha256"}
	if sha == "" {
		if sha, size, err = pull.Sum(file); err != nil {
			return Blob{}, Provenance{}, err
		}
		prov.DigestSource = "computed from the local file when it was added"
	}
	fo.Mirror = ""
	if _, err := pull.Fetch(ctx, pull.Source{URL: abs, SHA256: sha, Size: size}, s.BlobsDir(), fo); err != nil {
		return Blob{}, Provenance{}, err
	}
	st, err := os.Stat(s.BlobPath(sha))
	if err != nil {
		return Blob{}, Provenance{}, err
	}
	return Blob{SHA256: sha, Size: st.Size(), File: filepath.Base(file)}, prov, nil
}

// path is the last element of a URL's path.
func path(u string) string {
	if p, err := url.Parse(u); err == nil {
		u = p.Path
	}
	return u[strings.LastIndexByte(u, '/')+1:]
}

// Resolve returns the model NAME[:TAG] from the store, pulling it from the catalog first when the store
// does not have it (bankml serve and run's "pull on first use"); pulled reports that it was pulled. A stored
// model's file is checked whole first (CheckBlob: a missing, cut short or damaged file is an error naming the
// model, the file and what is wrong); a failed pull on first use says so ("store: pull NAME:TAG: why").
func (s *Store) Resolve(ctx context.Context, ref string, o PullOptions) (m *Manifest, pulled bool, err error) {
	m, err = s.Get(ref)
	if err == nil {
		if err := s.CheckBlob(m); err != nil {
			return nil, false, err
		}
		return m, false, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, false, err
	}
	if _, cerr := catalog.Lookup(ref); cerr != nil {
		name, tag, _ := catalog.ParseRef(ref) // Get parsed it
		return nil, false, &NotFoundError{Ref: name + ":" + tag, Root: s.Root, Catalog: catalog.Refs()}
	}
	m, err = s.Pull(ctx, ref, o)
	var pe *pullError
	if errors.As(err, &pe) {
		first := *pe
		first.firstUse = true
		return nil, false, &first
	}
	return m, err == nil, err
}
