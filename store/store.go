// Package store is bankml's local model store: pulled and created models, each a manifest (name, tag, the
// file's digest, parameters, system prompt, messages, licence, provenance) over a content-addressed blob.
//
// # Design record
//
// What. A store is a folder ($BANKML_MODELS, else <the user's data folder>/bankml/models) holding
// blobs/sha256-<hex> (model files, named by their sha256, only ever renamed into place verified: package
// pull) and manifests/<name>/<tag>.json (lower-cased, so names compare case-insensitively as Ollama's do).
// Pull brings a model in (the catalog, an http(s) URL or hf:// address with its sha256, a local file),
// Create makes one from an Ollama Modelfile, and Get, List, Copy and Remove manage them; Remove deletes a
// blob once no manifest names it. A model's manifest is its pin: bankml serve and run admit the blob
// against the manifest's sha256 (package provenance), so no --manifest or --unpinned is needed.
//
// Follows. Ollama's store (~/.ollama/models: blobs/sha256-<hex>, manifests per name and tag, a name's
// default tag "latest", blobs kept while a manifest names them) and its Modelfile (parsed by Ollama's own
// package github.com/ollama/ollama/parser; PARAMETER values typed by api.FormatParams under Ollama's option
// names).
//
// Deliberate differences. A manifest is bankml's JSON (schema 1), not an OCI image manifest: one GGUF blob,
// and the Modelfile's settings in the manifest itself rather than in layers. TEMPLATE (a Go template Ollama
// renders) and ADAPTER (LoRA) are refused with the reason (see Create). Writes are a temporary file and a
// rename, so a crash leaves the old manifest or the new one.
//
// Determinism. A manifest's content is a function of what was pulled or created and the clock (Modified).
package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/catalog"
	"github.com/bankml/bankml/pull"
)

// EnvModels names the store's folder. (It once named the test-data folder; that is now
// $BANKML_TESTDATA, package internal/testdata.)
const EnvModels = "BANKML_MODELS"

// Schema is the manifest format's version.
const Schema = 1

// ErrNotFound is wrapped by Get's error when the store has no such model.
var ErrNotFound = errors.New("not found")

// ErrNotGGUF is wrapped by the error of a pull or a create whose file is not a whole GGUF file: no GGUF
// magic, or a header, tensor infos or tensor data that do not parse within the file (nothing is stored): the file cannot be used, where ErrNotFound means nothing was named.
var ErrNotGGUF = errors.New("not a GGUF file")

// ErrModelfile is wrapped by Create's error when the Modelfile itself cannot be used: it does not parse, it
// has no FROM or two, a command bankml refuses (TEMPLATE, ADAPTER, …) or a bad PARAMETER: the user's input, as
// a bad flag value (bankml create exits 1), where a FROM file that is no GGUF (ErrNotGGUF) is a model that cannot
// be used (exit 2).
var ErrModelfile = errors.New("the Modelfile is refused")

// modelfileError reads as err and wraps both err and ErrModelfile.
type modelfileError struct{ err error }

func (e *modelfileError) Error() string   { return e.err.Error() }
func (e *modelfileError) Unwrap() []error { return []error{e.err, ErrModelfile} }

// refuseModelfile marks err as a Modelfile that cannot be used (ErrModelfile).
func refuseModelfile(err error) error { return &modelfileError{err} }

// wrapError reads as msg and wraps err: a sentence of its own that errors.Is still classifies.
type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.err }

// Manifest is one model of the store.
type Manifest struct {
	Schema   int       `json:"schema"`
	Name     string    `json:"name"` // as given (names compare case-insensitively)
	Tag      string    `json:"tag"`
	Model    Blob      `json:"model"`
	Modified time.Time `json:"modified_at"`
	// Parameters are the Modelfile's PARAMETERs under Ollama's option names (api.Options' JSON names),
	// typed as Ollama types them (numbers, booleans, strings; "stop" a list).
	Parameters map[string]any `json:"parameters,omitempty"`
	System     string         `json:"system,omitempty"`   // SYSTEM: the default system prompt
	Messages   []Message      `json:"messages,omitempty"` // MESSAGE: a conversation put before every chat
	License    []string       `json:"license,omitempty"`  // LICENSE texts
	Provenance Provenance     `json:"provenance"`
}

// Blob is the model file.
type Blob struct {
	SHA256 string `json:"sha256"` // lower-case hex: the pin
	Size   int64  `json:"size"`   // bytes
	File   string `json:"file"`   // the file's name where it came from
}

// Message is a MESSAGE of a Modelfile.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Provenance says where the model came from.
type Provenance struct {
	// Kind: "catalog" (bankml's built-in catalog), "url" (an http(s) address with --sha256), "hf" (an
	// hf://owner/repo/file address with --sha256), "file" (a local file, hashed when it was added),
	// "create" (a Modelfile over another model).
	Kind     string `json:"kind"`
	URL      string `json:"url,omitempty"`      // the publisher's address (catalog, url, hf)
	Mirror   string `json:"mirror,omitempty"`   // the mirror the bytes were read from, when not the publisher
	Repo     string `json:"repo,omitempty"`     // Hugging Face repository (catalog, hf)
	Revision string `json:"revision,omitempty"` // its commit (catalog) or the revision asked (hf)
	// DigestSource says who vouched for the sha256: the catalog's citation, "given with --sha256", or
	// "computed from the local file when it was added".
	DigestSource string    `json:"digest_source"`
	Path         string    `json:"path,omitempty"` // the local file (file), the Modelfile (create)
	From         string    `json:"from,omitempty"` // the model a Modelfile's FROM named (create)
	Added        time.Time `json:"added_at"`
}

// Ref is the manifest's NAME:TAG.
func (m *Manifest) Ref() string { return m.Name + ":" + m.Tag }

// Named is msg, a message about the model's file at blob (the store's BlobPath for it), with that file named as
// words instead (the model's NAME:TAG, say): its path, and then its base name (sha256-HEX, as a pin's refusal
// names a file), are replaced. What a user or a store server's client reads names the model, never the store's
// file for it.
func (m *Manifest) Named(msg, blob, words string) string {
	msg = strings.ReplaceAll(msg, blob, words)
	return strings.ReplaceAll(msg, pull.BlobName(m.Model.SHA256), words)
}

// Store is a store folder.
type Store struct {
	Root string
}

// DefaultRoot is $BANKML_MODELS, else the user's data folder's bankml/models: $XDG_DATA_HOME (else
// ~/.local/share) on Linux and the BSDs, ~/Library/Application Support on macOS, %LocalAppData% on Windows.
func DefaultRoot() (string, error) {
	if d := os.Getenv(EnvModels); d != "" {
		return d, nil
	}
	d, err := dataDir()
	if err != nil {
		return "", fmt.Errorf("store: no folder for models (set $%s): %w", EnvModels, err)
	}
	return filepath.Join(d, "bankml", "models"), nil
}

// Open returns the store at root, creating its folders. Its errors name root, the store's folder, and what is
// wrong with it: a file where the folder should be, a folder that cannot be created or read.
func Open(root string) (*Store, error) {
	if st, err := os.Stat(root); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("store: the model store's folder %s is a file, not a folder", root)
	}
	for _, d := range []string{root, filepath.Join(root, "blobs"), filepath.Join(root, "manifests")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("store: the model store's folder %s cannot be used: %w", root, pathProblem(root, err))
		}
	}
	if _, err := os.ReadDir(filepath.Join(root, "manifests")); err != nil {
		return nil, fmt.Errorf("store: the model store's folder %s cannot be used: %w", root, pathProblem(root, err))
	}
	return &Store{Root: root}, nil
}

// pathProblem is err, a file system error under the store's folder root, without naming root itself twice: an
// error about root alone is its cause ("permission denied"); one about a path within it, or above it (a
// file where a parent folder should be), names that path.
func pathProblem(root string, err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	if pe.Path == root {
		return pe.Err
	}
	if st, serr := os.Stat(pe.Path); serr == nil && !st.IsDir() {
		return fmt.Errorf("%s is a file, not a folder", pe.Path)
	}
	return err
}

// BlobsDir is where the model files are.
func (s *Store) BlobsDir() string { return filepath.Join(s.Root, "blobs") }

// BlobPath is the path of the blob with the given sha256.
func (s *Store) BlobPath(sha string) string { return filepath.Join(s.BlobsDir(), pull.BlobName(sha)) }

func (s *Store) manifestPath(name, tag string) string {
	return filepath.Join(s.Root, "manifests", strings.ToLower(name), strings.ToLower(tag)+".json")
}

// NotFoundError is Resolve's error for a model neither the store nor bankml's catalog has. It wraps
// ErrNotFound.
type NotFoundError struct {
	Ref     string   // the model's NAME:TAG
	Root    string   // the store's folder
	Catalog []string // the catalog's NAME:TAGs (catalog.Refs)
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("store: %s: not in %s, and not in bankml's catalog (it has %s)", e.Ref, e.Root, strings.Join(e.Catalog, ", "))
}

func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// Get returns the manifest NAME[:TAG] names; the error wraps ErrNotFound when there is none, and names a
// manifest that does not read.
func (s *Store) Get(ref string) (*Manifest, error) {
	name, tag, err := catalog.ParseRef(ref)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	m, err := readManifest(s.manifestPath(name, tag))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("store: %s:%s: %w in %s", name, tag, ErrNotFound, s.Root)
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return m, nil
}

// readManifest reads the manifest file p; its errors name p (a missing file wraps os.ErrNotExist).
func readManifest(p string) (*Manifest, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", p, err)
	}
	if m.Schema != Schema {
		return nil, fmt.Errorf("manifest %s: schema %d, this bankml reads %d", p, m.Schema, Schema)
	}
	if m.Parameters, err = typed(m.Parameters); err != nil {
		return nil, fmt.Errorf("manifest %s: parameters: %w", p, err)
	}
	return &m, nil
}

// typed gives JSON-decoded parameters (numbers as float64, lists as []any) the types api.FormatParams gives
// a Modelfile's PARAMETERs (int64, float32, bool, string, []string), by formatting each value back to its
// text.
func typed(params map[string]any) (map[string]any, error) {
	if len(params) == 0 {
		return nil, nil
	}
	text := map[string][]string{}
	for k, v := range params {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				text[k] = append(text[k], fmt.Sprint(e))
			}
		case float64:
			text[k] = []string{strconv.FormatFloat(v, 'g', -1, 64)}
		default:
			text[k] = []string{fmt.Sprint(v)}
		}
	}
	return api.FormatParams(text)
}

// Put writes a manifest (replacing one of the same name and tag) after checking its blob is in the store
// with the manifest's size (CheckBlob).
func (s *Store) Put(m *Manifest) error {
	if err := s.put(m); err != nil {
		return fmt.Errorf("store: %s: %w", m.Ref(), err)
	}
	return nil
}

// put is Put with errors that do not name the model (the caller does).
func (s *Store) put(m *Manifest) error {
	if _, _, err := catalog.ParseRef(m.Ref()); err != nil {
		return err
	}
	if err := s.blobProblem(m); err != nil {
		return err
	}
	m.Schema = Schema
	if m.Modified.IsZero() {
		m.Modified = time.Now().UTC()
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(s.manifestPath(m.Name, m.Tag), append(b, '\n'))
}

// CheckBlob checks that m's model file is in the store whole: there, with the size m records, and a GGUF file
// that parses within it (its header, tensor infos and tensor data; gguf.Open). Its error names the model
// (NAME:TAG), the file's path and what is wrong ("has 600000 bytes, not the 1185376 its manifest records");
// a file that is missing wraps os.ErrNotExist, one cut short or damaged wraps ErrNotGGUF. Pulling the model
// again (or removing it) mends the store.
func (s *Store) CheckBlob(m *Manifest) error {
	if err := s.blobProblem(m); err != nil {
		return fmt.Errorf("store: %s: %w", m.Ref(), err)
	}
	p := s.BlobPath(m.Model.SHA256)
	if msg, err := ggufProblem(p); err != nil {
		return fmt.Errorf("store: %s: its model file %s: %w", m.Ref(), p, err)
	} else if msg != "" {
		return fmt.Errorf("store: %s: %w", m.Ref(), &wrapError{fmt.Sprintf("its model file %s %s: pull it again", p, msg), ErrNotGGUF})
	}
	return nil
}

// blobProblem says what is wrong with m's model file in the store, naming its path: missing (wrapping
// os.ErrNotExist), unreadable, or of another size than m records (wrapping ErrNotGGUF: cut short or damaged).
func (s *Store) blobProblem(m *Manifest) error {
	p := s.BlobPath(m.Model.SHA256)
	st, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return &wrapError{fmt.Sprintf("its model file %s is missing (pull it again)", p), os.ErrNotExist}
	}
	if err != nil {
		return fmt.Errorf("its model file: %w", err)
	}
	if st.Size() != m.Model.Size {
		return &wrapError{fmt.Sprintf("its model file %s has %d bytes, not the %d its manifest records (cut short or damaged: pull it again)", p, st.Size(), m.Model.Size), ErrNotGGUF}
	}
	return nil
}

// writeAtomic writes data to path through a temporary file in the same folder and a rename. Its errors name
// path (the caller names the model).
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// UnreadableError is List's error when some manifests do not read: List returns it beside every manifest
// that does (as Ollama's list skips a bad manifest with a warning), so a caller can show those and report
// these.
type UnreadableError struct {
	Manifests []*ManifestError // in the order of their NAME:TAG
}

func (e *UnreadableError) Error() string {
	msgs := make([]string, len(e.Manifests))
	for i, m := range e.Manifests {
		msgs[i] = m.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap gives the unreadable manifests' errors.
func (e *UnreadableError) Unwrap() []error {
	errs := make([]error, len(e.Manifests))
	for i, m := range e.Manifests {
		errs[i] = m
	}
	return errs
}

// ManifestError is one manifest that does not read: the model's NAME:TAG (its folder's and file's names)
// and why.
type ManifestError struct {
	Ref string
	Err error // names the manifest file
}

func (e *ManifestError) Error() string { return "store: " + e.Ref + ": " + e.Err.Error() }
func (e *ManifestError) Unwrap() error { return e.Err }

// List returns every manifest that reads, sorted by name and tag. When some do not read, it returns them
// all the same, with an *UnreadableError naming each one that does not and why; any other error (the
// store's folders do not read) comes with no manifests.
func (s *Store) List() ([]*Manifest, error) {
	var out []*Manifest
	var bad []*ManifestError
	root := filepath.Join(s.Root, "manifests")
	names, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	for _, n := range names {
		if !n.IsDir() {
			continue
		}
		tags, err := os.ReadDir(filepath.Join(root, n.Name()))
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		for _, t := range tags {
			tag, ok := strings.CutSuffix(t.Name(), ".json")
			if !ok || strings.HasPrefix(t.Name(), ".") {
				continue
			}
			m, err := readManifest(filepath.Join(root, n.Name(), t.Name()))
			if err != nil {
				bad = append(bad, &ManifestError{Ref: n.Name() + ":" + tag, Err: err})
				continue
			}
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i].Ref()) < strings.ToLower(out[j].Ref()) })
	if len(bad) > 0 {
		sort.Slice(bad, func(i, j int) bool { return bad[i].Ref < bad[j].Ref })
		return out, &UnreadableError{Manifests: bad}
	}
	return out, nil
}

// Copy makes dst (NAME[:TAG]) a copy of src's manifest (the blob is shared), replacing a dst that exists.
func (s *Store) Copy(src, dst string) (*Manifest, error) {
	m, err := s.Get(src)
	if err != nil {
		return nil, err
	}
	if err := s.blobProblem(m); err != nil { // named as the source, not as the copy Put would name
		return nil, fmt.Errorf("store: %s: %w", m.Ref(), err)
	}
	name, tag, err := catalog.ParseRef(dst)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	c := *m
	c.Name, c.Tag, c.Modified = name, tag, time.Now().UTC()
	if err := s.Put(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

// Remove deletes the manifest NAME[:TAG] and, when no other manifest names it, its blob (and any partial
// download of it). A manifest that does not read is deleted too (that is how a store mends one List names),
// and the blob it may have named is kept.
func (s *Store) Remove(ref string) error {
	m, err := s.Get(ref)
	if err != nil {
		name, tag, perr := catalog.ParseRef(ref)
		if errors.Is(err, ErrNotFound) || perr != nil {
			return err
		}
		p := s.manifestPath(name, tag)
		if rerr := os.Remove(p); rerr != nil {
			return fmt.Errorf("%w (and removing it: %w)", err, rerr)
		}
		os.Remove(filepath.Dir(p))
		return nil
	}
	p := s.manifestPath(m.Name, m.Tag)
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	os.Remove(filepath.Dir(p)) // the name's folder, when empty
	all, err := s.List()
	var ue *UnreadableError
	if errors.As(err, &ue) {
		return fmt.Errorf("store: %s removed; its model file is kept, since a manifest that does not read may name it: %w", m.Ref(), err)
	}
	if err != nil {
		return err
	}
	for _, o := range all {
		if o.Model.SHA256 == m.Model.SHA256 {
			return nil
		}
	}
	if err := os.Remove(s.BlobPath(m.Model.SHA256)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}
