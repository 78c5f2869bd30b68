package admit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/provenance"
)

// stories260K's sha256, as ../shared/models/MANIFEST.md records it.
const storiesSHA256 = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"

// copyStories copies stories260K into a temporary folder (tests that change the file's times).
func copyStories(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(testdata.Model(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "stories260K.gguf")
	if err := os.WriteFile(p, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOpenAdmitsUnderThePinPolicy: a file pinned by its digest is admitted pinned; an unpinned one is
// admitted with AllowUnpinned (hashed, Pinned false) and refused with RequirePin, naming its sha256 and the
// flags that admit it; the model comes loaded with its tokenizer, and the chat template only when asked.
func TestOpenAdmitsUnderThePinPolicy(t *testing.T) {
	path := testdata.Model(t, "stories260K.gguf")
	for _, c := range []struct {
		name   string
		o      Options
		pinned bool
	}{
		{"pinned by its digest", Options{Manifest: storiesSHA256}, true},
		{"pinned by its sha256: digest, unpinned allowed", Options{Manifest: "sha256:" + storiesSHA256, Pin: AllowUnpinned}, true},
		{"unpinned, allowed, with the chat template", Options{Pin: AllowUnpinned, Chat: true}, false},
	} {
		m, err := Open(path, c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if m.Pin.Pinned != c.pinned || m.SHA256 != storiesSHA256 || m.Name != "stories260K.gguf" {
			t.Errorf("%s: pinned %v sha256 %s name %s", c.name, m.Pin.Pinned, m.SHA256, m.Name)
		}
		if m.Tokenizer.NVocab() != m.Model.HP.NVocab || m.Guard.Verdict != "play" || m.MainlineRefusal != "" {
			t.Errorf("%s: vocabulary %d of %d, guard %s, mainline refusal %q", c.name, m.Tokenizer.NVocab(), m.Model.HP.NVocab, m.Guard.Verdict, m.MainlineRefusal)
		}
		if (m.Template != nil) != c.o.Chat {
			t.Errorf("%s: template %v with Chat %v", c.name, m.Template != nil, c.o.Chat)
		}
		if fi, err := os.Stat(path); err != nil || m.Identity.Size != fi.Size() || m.Identity.Mtime != fi.ModTime().UnixNano() {
			t.Errorf("%s: identity %+v, file %v %v", c.name, m.Identity, fi, err)
		}
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestOpenRefuses: each file or pin that must not run is refused (errors.Is ErrRefused, an *Error with
// Refused) with a message naming why; a missing file is an I/O error, a malformed digest a usage error, neither
// a refusal.
func TestOpenRefuses(t *testing.T) {
	stories := testdata.Model(t, "stories260K.gguf")
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "x.gguf")
	if err := os.WriteFile(notGGUF, []byte("not a gguf file at all, not at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		path    string
		o       Options
		refused bool
		want    string
	}{
		{"an unpinned file under RequirePin", stories, Options{}, true, "(sha256 " + storiesSHA256 + ") has no pin: refused (give --manifest"},
		{"a wrong digest", stories, Options{Manifest: strings.Repeat("ab", 32), Pin: AllowUnpinned}, true, "!= pinned " + strings.Repeat("ab", 32)},
		{"a malformed digest is the caller's usage error, not a refusal", stories, Options{Manifest: "sha256:xyz", Pin: AllowUnpinned}, false, `--manifest "sha256:xyz": not a sha256 digest`},
		{"a file that is not GGUF", notGGUF, Options{Pin: AllowUnpinned}, true, "guard: refused"},
		{"a missing file", filepath.Join(dir, "absent.gguf"), Options{Pin: AllowUnpinned}, false, "guard: open " + filepath.Join(dir, "absent.gguf") + ": no such file"},
		{"a missing manifest", stories, Options{Manifest: filepath.Join(dir, "FORK.json"), Pin: AllowUnpinned}, false, "FORK.json"},
	} {
		m, err := Open(c.path, c.o)
		if err == nil {
			m.Close()
			t.Errorf("%s: admitted", c.name)
			continue
		}
		var ae *Error
		if !errors.As(err, &ae) || ae.Refused != c.refused || errors.Is(err, ErrRefused) != c.refused || ae.Path != c.path {
			t.Errorf("%s: %#v, want an *Error with Refused %v for %s", c.name, err, c.refused, c.path)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q lacks %q", c.name, err, c.want)
		}
	}
}

// TestOpenRefusesAFileChangedWhileHashed: a file whose modification time changes while the pin hashes it
// (here from the progress writer, which sees the first chunk) is refused naming what changed, as serve's
// per-answer re-check would name it.
func TestOpenRefusesAFileChangedWhileHashed(t *testing.T) {
	path := copyStories(t)
	touched := false
	progress := writerFunc(func(b []byte) (int, error) {
		if !touched {
			touched = true
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(path, later, later); err != nil {
				t.Error(err)
			}
		}
		return len(b), nil
	})
	m, err := Open(path, Options{Pin: AllowUnpinned, Progress: progress})
	if err == nil {
		m.Close()
		t.Fatal("admitted a file touched while it was hashed")
	}
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "the model file was modified") || !strings.Contains(err.Error(), "while it was hashed") {
		t.Errorf("%v", err)
	}
	// Untouched since, it is admitted, and its identity is the file's now.
	m, err = Open(path, Options{Pin: AllowUnpinned})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	now, err := StatIdentity(path)
	if err != nil || m.Identity.Diff(now) != "" {
		t.Errorf("identity %+v, file now %+v (%v)", m.Identity, now, err)
	}
	if sum, err := provenance.SHA256File(path, nil); err != nil || sum != m.SHA256 {
		t.Errorf("sha256 %s, file %s (%v)", m.SHA256, sum, err)
	}
}

// TestIdentityDiff names each kind of change, the replaced file first.
func TestIdentityDiff(t *testing.T) {
	base := FileIdentity{Dev: 1, Inode: 2, Size: 3, Mtime: 4}
	for _, c := range []struct {
		got  FileIdentity
		want string
	}{
		{base, ""},
		{FileIdentity{Dev: 1, Inode: 9, Size: 3, Mtime: 4}, "the model file was replaced (device 1 inode 9, verified device 1 inode 2)"},
		{FileIdentity{Dev: 1, Inode: 2, Size: 5, Mtime: 8}, "the model file changed size (5 bytes, verified 3)"},
		{FileIdentity{Dev: 1, Inode: 2, Size: 3, Mtime: 5}, "the model file was modified (mtime 1970-01-01T00:00:00.000000005Z, verified 1970-01-01T00:00:00.000000004Z)"},
	} {
		if got := base.Diff(c.got); got != c.want {
			t.Errorf("%+v: %q, want %q", c.got, got, c.want)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
