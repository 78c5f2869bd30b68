package pull_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bankml/bankml/pull"
)

func TestProbeAsksTheSourceForTheFileWithoutDownloadingIt(t *testing.T) {
	src, models := storiesSource(t)
	var bytesSent atomic.Int64
	files := http.FileServer(http.Dir(models))
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &countingWriter{ResponseWriter: w, n: &bytesSent}
		files.ServeHTTP(cw, r)
	}))
	defer up.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	short := t.TempDir()
	if err := os.WriteFile(filepath.Join(short, "stories260K.gguf"), []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty, noFolder := t.TempDir(), filepath.Join(t.TempDir(), "none")
	const kept = "the file already in the store is left as it is"
	for _, tc := range []struct {
		name   string
		mirror string
		size   int64
		want   string // the error, whole; "" when the source serves the file
	}{
		{name: "a server that serves the file passes", mirror: up.URL, size: storiesSize},
		{name: "a server that serves another size is refused naming both sizes", mirror: up.URL, size: storiesSize + 1,
			want: "refused: " + up.URL + "/stories260K.gguf has 1185376 bytes, not the expected 1185377"},
		{name: "a server without the file is its HTTP status", mirror: up.URL + "/nothere", size: storiesSize,
			want: up.URL + "/nothere/stories260K.gguf: HTTP 404 Not Found"},
		{name: "a server that stays unavailable is unreachable with the mirror advice", mirror: failing.URL, size: storiesSize,
			want: failing.URL + "/stories260K.gguf: HTTP 503 Service Unavailable (" + kept + "): the mirror " + failing.URL + " cannot be reached; check --from or $BANKML_MIRROR"},
		{name: "a server that is gone is unreachable with the mirror advice", mirror: gone.URL, size: storiesSize,
			want: gone.URL + "/stories260K.gguf: dial tcp " + strings.TrimPrefix(gone.URL, "http://") + ": connect: connection refused (" + kept + "): the mirror " + gone.URL + " cannot be reached; check --from or $BANKML_MIRROR"},
		{name: "a folder holding the file passes", mirror: models, size: storiesSize},
		{name: "a folder holding another size is refused", mirror: short, size: storiesSize,
			want: "refused: " + filepath.Join(short, "stories260K.gguf") + " has 4 bytes, not the expected 1185376"},
		{name: "a folder without the file names it", mirror: empty, size: storiesSize,
			want: "the mirror " + empty + " has no stories260K.gguf (" + kept + "): give --from a mirror that holds it, or unset $BANKML_MIRROR to download from the publisher"},
		{name: "a folder that is not there says so", mirror: noFolder, size: storiesSize,
			want: "the mirror " + noFolder + " is no folder (" + kept + "): check --from or $BANKML_MIRROR, or unset it to download from the publisher"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bytesSent.Store(0)
			s := src
			s.Size = tc.size
			o := fast()
			o.Retries = 1
			o.Mirror = tc.mirror
			err := pull.Probe(context.Background(), s, o)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
				t.Fatalf("Probe: %v\nwant   %q", err, tc.want)
			}
			if n := bytesSent.Load(); n > 1 {
				t.Fatalf("the server sent %d bytes of the file: want at most the first", n)
			}
		})
	}
}

// countingWriter counts the bytes of a successful answer's body.
type countingWriter struct {
	http.ResponseWriter
	n      *atomic.Int64
	status int
}

func (w *countingWriter) WriteHeader(code int) { w.status = code; w.ResponseWriter.WriteHeader(code) }

func (w *countingWriter) Write(b []byte) (int, error) {
	if w.status == 0 || w.status < 300 {
		w.n.Add(int64(len(b)))
	}
	return w.ResponseWriter.Write(b)
}
