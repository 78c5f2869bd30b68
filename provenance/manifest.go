package provenance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/bankml/bankml/internal/fsutil"
)

// ErrBadManifest is wrapped by every error that says a manifest cannot be used: not JSON, not an object, no
// "files" array, or an entry with a missing path or a malformed sha256 or size.
var ErrBadManifest = errors.New("bad manifest")

// MaxManifestBytes caps the size of a manifest file: a FORK.json is a few kilobytes, and the cap keeps a mistaken
// argument (a model passed as the manifest) from being read whole.
const MaxManifestBytes = 16 << 20

// Manifest is a parsed provenance manifest (docs/manifest.md): where the files came from and the sha256 of each.
type Manifest struct {
	Source   string  // the upstream source: "source_repo", else "source" (a string, or an object's "repo" or "url"), else "source_url"; "" if none
	URL      string  // "source_url", or the "url" of a "source" object; "" if none
	Revision string  // "source_revision", else "revision", else the "revision" of a "source" object; "" if none
	Kind     string  // "kind" (e.g. a conversion's), or ""
	Files    []Entry // "files", in manifest order: what the manifest pins
	Inputs   []Entry // "inputs" of a conversion manifest (informational: a pin never matches them)
}

// Entry is one pinned file of a manifest.
type Entry struct {
	Path   string // as written in the manifest; matched against a file by base name
	Size   int64  // "bytes" (or "size"), or -1 when the manifest does not record it
	SHA256 string // 64 lower-case hex digits
}

// Base returns the base name of the entry's path ('/' or '\\' separated), the name a file is matched by.
func (e Entry) Base() string {
	return path.Base(strings.ReplaceAll(e.Path, `\`, "/"))
}

// ReadManifest reads and parses the manifest file at p. An error reading the file is returned as an I/O error
// (wrapping the *os.PathError); an error in its contents wraps ErrBadManifest.
func ReadManifest(p string) (*Manifest, error) {
	f, err := fsutil.OpenRegular(p)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", p, err)
	}
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("manifest %s: %w: larger than %d bytes", p, ErrBadManifest, MaxManifestBytes)
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", p, err)
	}
	return m, nil
}

// ParseManifest parses a manifest held in data (see docs/manifest.md). It requires a JSON object with a non-empty
// "files" array whose entries each have a non-empty "path" and a "sha256" of 64 hex digits (an optional "sha256:"
// prefix, either case), and optionally a non-negative integer "bytes" or "size". Unknown keys are ignored. Every
// error wraps ErrBadManifest and names the entry at fault.
func ParseManifest(data []byte) (*Manifest, error) {
	var whole json.RawMessage
	if err := strictDecode(data, &whole); err != nil {
		return nil, fmt.Errorf("%w: not valid JSON: %v", ErrBadManifest, err)
	}
	var top map[string]json.RawMessage
	if isNull(whole) || json.Unmarshal(whole, &top) != nil {
		return nil, fmt.Errorf("%w: the top level is %s, want an object", ErrBadManifest, jsonKind(whole))
	}
	m := &Manifest{}
	var err error
	str := func(key string) string {
		if err != nil {
			return ""
		}
		var s string
		s, err = optString(top, key)
		return s
	}
	m.Kind = str("kind")
	repo, url, rev := str("source_repo"), str("source_url"), str("source_revision")
	if rev == "" {
		rev = str("revision")
	}
	if err != nil {
		return nil, err
	}
	srcName, srcURL, srcRev, err := parseSource(top["source"])
	if err != nil {
		return nil, err
	}
	m.Source = firstOf(repo, srcName, url, srcURL)
	m.URL = firstOf(url, srcURL)
	m.Revision = firstOf(rev, srcRev)

	raw, ok := top["files"]
	if !ok {
		return nil, fmt.Errorf("%w: no \"files\" array", ErrBadManifest)
	}
	if m.Files, err = parseEntries("files", raw); err != nil {
		return nil, err
	}
	if len(m.Files) == 0 {
		return nil, fmt.Errorf("%w: the \"files\" array is empty: the manifest pins nothing", ErrBadManifest)
	}
	if raw, ok := top["inputs"]; ok {
		if m.Inputs, err = parseEntries("inputs", raw); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Lookup returns the entries of m.Files whose base name is name (normally one).
func (m *Manifest) Lookup(name string) []Entry {
	var out []Entry
	for _, e := range m.Files {
		if e.Base() == name {
			out = append(out, e)
		}
	}
	return out
}

// strictDecode unmarshals one JSON value from data into v, refusing trailing data.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// optString returns the string value of key in obj, "" when the key is absent or null, and an error when the
// value is not a string.
func optString(obj map[string]json.RawMessage, key string) (string, error) {
	raw, ok := obj[key]
	if !ok || isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: %q is %s, want a string", ErrBadManifest, key, jsonKind(raw))
	}
	return s, nil
}

// parseSource reads a converter manifest's "source": a string (the source's name) or an object with optional
// "repo", "url" and "revision" strings. Absent or null gives empty strings.
func parseSource(raw json.RawMessage) (name, url, rev string, err error) {
	if raw == nil || isNull(raw) {
		return "", "", "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, "", "", nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return "", "", "", fmt.Errorf("%w: \"source\" is %s, want a string or an object", ErrBadManifest, jsonKind(raw))
	}
	for _, kv := range []struct {
		key string
		dst *string
	}{{"repo", &name}, {"url", &url}, {"revision", &rev}} {
		if *kv.dst, err = optString(obj, kv.key); err != nil {
			return "", "", "", fmt.Errorf("\"source\": %w", err)
		}
	}
	return firstOf(name, url), url, rev, nil
}

// parseEntries parses the array under key ("files" or "inputs").
func parseEntries(key string, raw json.RawMessage) ([]Entry, error) {
	var items []json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &items) != nil {
		return nil, fmt.Errorf("%w: %q is %s, want an array of objects", ErrBadManifest, key, jsonKind(raw))
	}
	out := make([]Entry, 0, len(items))
	for i, item := range items {
		e, err := parseEntry(item)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", key, i, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// parseEntry parses one {path, bytes|size, sha256} object.
func parseEntry(raw json.RawMessage) (Entry, error) {
	var obj map[string]json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &obj) != nil {
		return Entry{}, fmt.Errorf("%w: %s, want an object with path and sha256", ErrBadManifest, jsonKind(raw))
	}
	e := Entry{Size: -1}
	var err error
	if e.Path, err = optString(obj, "path"); err != nil {
		return Entry{}, err
	}
	if e.Path == "" {
		return Entry{}, fmt.Errorf("%w: no \"path\"", ErrBadManifest)
	}
	sum, err := optString(obj, "sha256")
	if err != nil {
		return Entry{}, fmt.Errorf("%q: %w", e.Path, err)
	}
	if sum == "" {
		return Entry{}, fmt.Errorf("%q: %w: no \"sha256\"", e.Path, ErrBadManifest)
	}
	d, ok := ParseDigest(sum)
	if !ok {
		return Entry{}, fmt.Errorf("%q: %w: sha256 %q is not 64 hex digits", e.Path, ErrBadManifest, sum)
	}
	e.SHA256 = d
	for _, key := range []string{"bytes", "size"} {
		raw, ok := obj[key]
		if !ok || isNull(raw) {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil || n < 0 {
			return Entry{}, fmt.Errorf("%q: %w: %q is %s, want a non-negative integer", e.Path, ErrBadManifest, key, string(raw))
		}
		if e.Size >= 0 && e.Size != n {
			return Entry{}, fmt.Errorf("%q: %w: \"bytes\" %d and \"size\" %d differ", e.Path, ErrBadManifest, e.Size, n)
		}
		e.Size = n
	}
	return e, nil
}

// isNull reports whether raw is the JSON literal null.
func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// jsonKind names the kind of a JSON value for error messages.
func jsonKind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "empty"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// firstOf returns the first non-empty string.
func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
