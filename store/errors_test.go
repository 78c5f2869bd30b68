package store_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bankml/bankml/store"
)

func TestOpenNamesTheStoreFolderAndWhatIsWrongWithIt(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, root, want string
	}{
		{name: "a file where the folder should be is named as a file", root: file,
			want: "store: the model store's folder " + file + " is a file, not a folder"},
		{name: "a folder beneath a file names both", root: filepath.Join(file, "models"),
			want: "store: the model store's folder " + filepath.Join(file, "models") + " cannot be used: " + file + " is a file, not a folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := store.Open(tc.root)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Open: %v\nwant %s", err, tc.want)
			}
		})
	}
}

// counting serves dir, counting the requests and the bytes of whole-file answers.
type counting struct {
	h        http.Handler
	requests atomic.Int64
	ranges   atomic.Int64
}

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.requests.Add(1)
	if r.Header.Get("Range") == "bytes=0-0" {
		c.ranges.Add(1)
	}
	c.h.ServeHTTP(w, r)
}

func TestARePullOfACatalogNameAsksTheConfiguredSourceAndRecordsIt(t *testing.T) {
	s, models := newStore(t)
	first := httptest.NewServer(http.FileServer(http.Dir(models)))
	if _, err := s.Pull(context.Background(), "stories260K", opts(first.URL)); err != nil {
		t.Fatal(err)
	}
	first.Close()
	gone := first.URL
	hostGone := strings.TrimPrefix(gone, "http://")
	noFolder := filepath.Join(t.TempDir(), "no-mirror")
	empty := t.TempDir()
	other := t.TempDir() // a mirror whose stories260K.gguf has another size
	if err := os.WriteFile(filepath.Join(other, "stories260K.gguf"), []byte("GGUF short"), 0o644); err != nil {
		t.Fatal(err)
	}
	up := &counting{h: http.FileServer(http.Dir(models))}
	srv := httptest.NewServer(up)
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		mirror string
		want   string // the error, whole; "" for a pull that passes
	}{
		{name: "a mirror server that is gone fails the pull, naming it", mirror: gone,
			want: "store: stories260K:latest: " + gone + "/stories260K.gguf: dial tcp " + hostGone + ": connect: connection refused " +
				"(the file already in the store is left as it is): the mirror " + gone + " cannot be reached; check --from or $BANKML_MIRROR"},
		{name: "a mirror folder that is not there fails the pull, naming it", mirror: noFolder,
			want: "store: stories260K:latest: the mirror " + noFolder + " is no folder (the file already in the store is left as it is): check --from or $BANKML_MIRROR, or unset it to download from the publisher"},
		{name: "a mirror folder without the file fails the pull, naming both", mirror: empty,
			want: "store: stories260K:latest: the mirror " + empty + " has no stories260K.gguf (the file already in the store is left as it is): give --from a mirror that holds it, or unset $BANKML_MIRROR to download from the publisher"},
		{name: "a mirror serving another size is refused", mirror: other,
			want: "store: stories260K:latest: refused: " + filepath.Join(other, "stories260K.gguf") + " has 10 bytes, not the expected 1185376"},
		{name: "a mirror that serves the file passes and is recorded as the source", mirror: srv.URL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := s.Pull(context.Background(), "stories260K", opts(tc.mirror))
			if tc.want != "" {
				if err == nil || err.Error() != tc.want {
					t.Fatalf("re-pull: %v\nwant %s", err, tc.want)
				}
				if _, serr := os.Stat(s.BlobPath(storiesSHA)); serr != nil {
					t.Fatalf("the file in the store went: %v", serr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Provenance.Mirror != tc.mirror {
				t.Fatalf("provenance mirror %q, want %q", m.Provenance.Mirror, tc.mirror)
			}
			if got, _ := s.Get("stories260K"); got == nil || got.Provenance.Mirror != tc.mirror {
				t.Fatalf("the stored manifest keeps the earlier source: %+v", got)
			}
			if up.requests.Load() != 1 || up.ranges.Load() != 1 {
				t.Fatalf("%d requests (%d for the first byte): want one for the first byte, no download", up.requests.Load(), up.ranges.Load())
			}
		})
	}
}

func TestAPullErrorNamesTheModelOnceAndSaysPullOnlyOnFirstUse(t *testing.T) {
	s, _ := newStore(t)
	noFolder := filepath.Join(t.TempDir(), "no-mirror")
	const why = "the mirror %s is no folder (nothing downloaded): check --from or $BANKML_MIRROR, or unset it to download from the publisher"
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{name: "Pull names the model once, without the word pull its caller says",
			call: func() error { _, err := s.Pull(context.Background(), "stories260K", opts(noFolder)); return err },
			want: "store: stories260K:latest: " + strings.ReplaceAll(why, "%s", noFolder)},
		{name: "Resolve says it was pulling the model on first use",
			call: func() error { _, _, err := s.Resolve(context.Background(), "stories260K", opts(noFolder)); return err },
			want: "store: pull stories260K:latest: " + strings.ReplaceAll(why, "%s", noFolder)},
		{name: "Create from a catalog model says store once",
			call: func() error {
				_, err := s.Create(context.Background(), "x", strings.NewReader("FROM stories260K\n"), store.CreateOptions{Pull: opts(noFolder)})
				return err
			},
			want: "store: Modelfile: FROM stories260K: pull stories260K:latest: " + strings.ReplaceAll(why, "%s", noFolder)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); err == nil || err.Error() != tc.want {
				t.Fatalf("error %v\nwant  %s", err, tc.want)
			}
		})
	}
}

func TestAStoredModelWhoseFileIsCutShortOrDamagedIsNamedWithItsFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(blob string) error
		want   string // %s: the blob's path
		// copied: Copy (bankml cp, which reads no file) takes it all the same: its size is the manifest's
		copied bool
	}{
		{name: "a file shorter than its manifest says names both sizes",
			damage: func(blob string) error { return os.Truncate(blob, 600000) },
			want:   "store: stories260K:latest: its model file %s has 600000 bytes, not the 1185376 its manifest records (cut short or damaged: pull it again)"},
		{name: "a file of the right size whose GGUF header is damaged names the parser's reason",
			damage: func(blob string) error {
				b, err := os.ReadFile(blob)
				if err != nil {
					return err
				}
				b[8], b[9], b[10] = 0x40, 0x42, 0x0f // tensor count 1000000
				return os.WriteFile(blob, b, 0o644)
			},
			want:   "store: stories260K:latest: its model file %s is not a whole GGUF file (gguf: truncated: tensor count 1000000 at offset 24 needs at least 24 bytes each, 1185352 remain): pull it again",
			copied: true},
		{name: "a missing file says so",
			damage: os.Remove,
			want:   "store: stories260K:latest: its model file %s is missing (pull it again)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, models := newStore(t)
			if _, err := s.Pull(context.Background(), "stories260K", opts(models)); err != nil {
				t.Fatal(err)
			}
			blob := s.BlobPath(storiesSHA)
			if err := tc.damage(blob); err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(tc.want, "%s", blob)
			_, _, err := s.Resolve(context.Background(), "stories260K", opts(""))
			if err == nil || err.Error() != want {
				t.Fatalf("Resolve: %v\nwant       %s", err, want)
			}
			if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, store.ErrNotGGUF) {
				t.Fatalf("Resolve: %v wraps neither os.ErrNotExist nor ErrNotGGUF", err)
			}
			if _, err := s.Copy("stories260K", "copy"); !tc.copied && (err == nil || err.Error() != want) {
				t.Fatalf("Copy: %v\nwant    %s", err, want)
			}
			// Pulling it again mends it.
			if _, err := s.Pull(context.Background(), "stories260K", opts(models)); err != nil {
				t.Fatalf("pull again: %v", err)
			}
			if _, _, err := s.Resolve(context.Background(), "stories260K", opts("")); err != nil {
				t.Fatalf("Resolve after pulling again: %v", err)
			}
		})
	}
}
