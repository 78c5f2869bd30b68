package pull_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/pull"
)

// stories260K as ../shared/models/MANIFEST.md records it.
const (
	storiesSHA  = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"
	storiesSize = 1185376
)

func storiesSource(t *testing.T) (pull.Source, string) {
	t.Helper()
	dir := testdata.ModelsDir(t)
	testdata.Model(t, "stories260K.gguf")
	return pull.Source{URL: "https://huggingface.co/ggml-org/models/resolve/x/tinyllamas/stories260K.gguf", Size: storiesSize, SHA256: storiesSHA}, dir
}

func fast() pull.Options { return pull.Options{Backoff: time.Millisecond} }

// dropping serves the file, but the first response is cut off (the connection closed) after half the
// bytes; later requests, which must carry a Range header, are served in full by http.ServeContent.
type dropping struct {
	dir    string
	hits   atomic.Int32
	ranges []string
}

func (d *dropping) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, err := os.ReadFile(filepath.Join(d.dir, filepath.Base(r.URL.Path)))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	if d.hits.Add(1) == 1 {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:len(data)/2])
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	d.ranges = append(d.ranges, r.Header.Get("Range"))
	http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(data))
}

func TestFetchFromAMirrorServerVerifiesAndRenamesTheFile(t *testing.T) {
	src, models := storiesSource(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(models)))
	defer srv.Close()
	dir := t.TempDir()
	o := fast()
	o.Mirror = srv.URL
	var seen bytes.Buffer
	var total, done int64 = -1, -1
	o.Progress = func(tt, d int64) io.Writer { total, done = tt, d; return &seen }
	path, err := pull.Fetch(context.Background(), src, dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "sha256-"+storiesSHA); path != want {
		t.Fatalf("path %s, want %s", path, want)
	}
	sum, n, err := pull.Sum(path)
	if err != nil || sum != storiesSHA || n != storiesSize {
		t.Fatalf("the blob has sha256 %s, %d bytes (%v)", sum, n, err)
	}
	if total != storiesSize || done != 0 || seen.Len() != storiesSize {
		t.Fatalf("progress saw total %d, done %d, %d bytes", total, done, seen.Len())
	}
	if _, err := os.Stat(path + ".partial"); !os.IsNotExist(err) {
		t.Fatalf("the partial file is still there: %v", err)
	}
}

func TestFetchResumesWithARangeRequestAfterTheConnectionDropsHalfWay(t *testing.T) {
	src, models := storiesSource(t)
	d := &dropping{dir: models}
	srv := httptest.NewServer(d)
	defer srv.Close()
	o := fast()
	o.Mirror = srv.URL
	path, err := pull.Fetch(context.Background(), src, t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum, _, _ := pull.Sum(path); sum != storiesSHA {
		t.Fatalf("sha256 %s", sum)
	}
	if want := "bytes=" + strconv.Itoa(storiesSize/2) + "-"; len(d.ranges) != 1 || d.ranges[0] != want {
		t.Fatalf("resumed with Range %q, want one request with %q", d.ranges, want)
	}
}

func TestFetchResumesAPartialFileAnEarlierPullLeft(t *testing.T) {
	src, models := storiesSource(t)
	data, err := os.ReadFile(filepath.Join(models, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	partial := filepath.Join(dir, "sha256-"+storiesSHA+".partial")
	if err := os.WriteFile(partial, data[:100000], 0o644); err != nil {
		t.Fatal(err)
	}
	var ranges []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ranges = append(ranges, r.Header.Get("Range"))
		http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(data))
	}))
	defer srv.Close()
	o := fast()
	o.Mirror = srv.URL
	var done int64
	o.Progress = func(_, d int64) io.Writer { done = d; return io.Discard }
	if _, err := pull.Fetch(context.Background(), src, dir, o); err != nil {
		t.Fatal(err)
	}
	if len(ranges) != 1 || ranges[0] != "bytes=100000-" || done != 100000 {
		t.Fatalf("ranges %q, progress started at %d: want one request from byte 100000", ranges, done)
	}
}

func TestFetchRefusesWrongBytesNamingBothDigestsAndKeepsNothing(t *testing.T) {
	src, models := storiesSource(t)
	data, err := os.ReadFile(filepath.Join(models, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/3] ^= 0x01 // one bit changed
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(data))
	}))
	defer srv.Close()
	dir := t.TempDir()
	o := fast()
	o.Mirror = srv.URL
	_, err = pull.Fetch(context.Background(), src, dir, o)
	var de *pull.DigestError
	if !errors.As(err, &de) {
		t.Fatalf("error %v, want a *DigestError", err)
	}
	if de.Want != storiesSHA || len(de.Got) != 64 || de.Got == storiesSHA ||
		!strings.Contains(err.Error(), de.Want) || !strings.Contains(err.Error(), de.Got) {
		t.Fatalf("the error does not name both digests: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left %d files behind", len(ents))
	}
}

func TestFetchRefusesABodyLongerThanTheExpectedSize(t *testing.T) {
	src, models := storiesSource(t)
	data, _ := os.ReadFile(filepath.Join(models, "stories260K.gguf"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(append(data, 'x'))
	}))
	defer srv.Close()
	dir := t.TempDir()
	o := fast()
	o.Mirror = srv.URL
	_, err := pull.Fetch(context.Background(), src, dir, o)
	if err == nil || !strings.Contains(err.Error(), "more than the expected 1185376 bytes") {
		t.Fatalf("error %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left %d files behind", len(ents))
	}
}

func TestFetchFromAMirrorFolderCopiesAndVerifies(t *testing.T) {
	src, models := storiesSource(t)
	o := fast()
	o.Mirror = models
	path, err := pull.Fetch(context.Background(), src, t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum, _, _ := pull.Sum(path); sum != storiesSHA {
		t.Fatalf("sha256 %s", sum)
	}
}

func TestFetchChecksFreeDiskFirst(t *testing.T) {
	src, models := storiesSource(t)
	hit := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit = true }))
	defer srv.Close()
	o := fast()
	o.Mirror = srv.URL
	o.FreeSpace = func(string) (uint64, error) { return 1000, nil }
	_ = models
	_, err := pull.Fetch(context.Background(), src, t.TempDir(), o)
	if !errors.Is(err, pull.ErrNoSpace) || !strings.Contains(err.Error(), "1185376 bytes still to download, 1000 free") {
		t.Fatalf("error %v", err)
	}
	if hit {
		t.Fatal("the server was asked before the disk was checked")
	}
}

func TestFetchGivesUpOnAnHTTPErrorAndKeepsThePartialFile(t *testing.T) {
	src, _ := storiesSource(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "gone", http.StatusNotFound)
	}))
	defer srv.Close()
	o := fast()
	o.Mirror = srv.URL
	_, err := pull.Fetch(context.Background(), src, t.TempDir(), o)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("error %v", err)
	}
}

func TestFetchRefusesAMalformedExpectedDigest(t *testing.T) {
	_, err := pull.Fetch(context.Background(), pull.Source{URL: "http://127.0.0.1:1/x", SHA256: "abc"}, t.TempDir(), fast())
	if err == nil || !strings.Contains(err.Error(), "not 64 hex digits") {
		t.Fatalf("error %v", err)
	}
}

func TestFetchErrorsSayWhatHappenedAndHowToPullFromAMirror(t *testing.T) {
	src, models := storiesSource(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // nothing listens there any more: connection refused
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	wrong := strings.Repeat("ab", 32)
	local := filepath.Join(models, "stories260K.gguf")
	for _, tc := range []struct {
		name   string
		src    pull.Source
		mirror string
		want   string // the whole message; {dead}, {down} stand for the servers' addresses
	}{
		{"an unreachable publisher", pull.Source{URL: deadURL + "/stories260K.gguf", Size: storiesSize, SHA256: storiesSHA}, "",
			"{dead}/stories260K.gguf: dial tcp {host}: connect: connection refused (nothing downloaded): the source cannot be reached; " +
				"to pull from a mirror instead (an http(s) URL or a folder holding the file), give --from URL|DIR (for a catalog name, $BANKML_MIRROR too)"},
		{"an unreachable mirror", src, deadURL,
			"{dead}/stories260K.gguf: dial tcp {host}: connect: connection refused (nothing downloaded): the mirror {dead} cannot be reached; check --from or $BANKML_MIRROR"},
		{"a publisher that stays down", pull.Source{URL: down.URL + "/stories260K.gguf", Size: storiesSize, SHA256: storiesSHA}, "",
			"{down}/stories260K.gguf: HTTP 503 Service Unavailable (nothing downloaded): the source cannot be reached; " +
				"to pull from a mirror instead (an http(s) URL or a folder holding the file), give --from URL|DIR (for a catalog name, $BANKML_MIRROR too)"},
		{"a mirror folder without the file", pull.Source{URL: deadURL + "/Bonsai-1.7B-Q1_0.gguf", Name: "Bonsai-1.7B-Q1_0.gguf", Size: storiesSize, SHA256: storiesSHA}, models,
			"the mirror " + models + " has no Bonsai-1.7B-Q1_0.gguf (nothing downloaded): give --from a mirror that holds it, or unset $BANKML_MIRROR to download from the publisher"},
		{"a mirror folder that does not exist", pull.Source{URL: deadURL + "/Bonsai-1.7B-Q1_0.gguf", Name: "Bonsai-1.7B-Q1_0.gguf", Size: storiesSize, SHA256: storiesSHA}, filepath.Join(models, "no-such-folder"),
			"the mirror " + filepath.Join(models, "no-such-folder") + " is no folder (nothing downloaded): check --from or $BANKML_MIRROR, or unset it to download from the publisher"},
		{"a local file with another sha256", pull.Source{URL: local, SHA256: wrong}, "",
			"refused: " + local + " has sha256 " + storiesSHA + ", not the expected " + wrong + " (nothing was stored; the copy was removed; the file itself is left as it is)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fast()
			o.Retries, o.Mirror = 1, tc.mirror
			dir := t.TempDir()
			_, err := pull.Fetch(context.Background(), tc.src, dir, o)
			want := strings.NewReplacer("{dead}", deadURL, "{down}", down.URL, "{host}", strings.TrimPrefix(deadURL, "http://")).Replace(tc.want)
			if err == nil || err.Error() != want {
				t.Fatalf("error %v\nwant  %s", err, want)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("left %d files in the folder, want none", len(left))
			}
		})
	}
}

// TestAStalePartialDownloadIsDiscardedAndTheFileFetchedAgainBeforeTheSourceIsBlamed: a .partial file an
// earlier pull left whose bytes are not the file's (here random bytes) made the resumed file fail its digest,
// and Fetch blamed the source, which was right all along. Fetch now discards such a partial and fetches the
// whole file once more; only a source whose own bytes are wrong is refused (naming it, and saying it was
// fetched again from zero), and when fetching again fails the error says the partial was discarded.
func TestAStalePartialDownloadIsDiscardedAndTheFileFetchedAgainBeforeTheSourceIsBlamed(t *testing.T) {
	src, models := storiesSource(t)
	good, err := os.ReadFile(filepath.Join(models, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0x01
	stale := make([]byte, 300000)
	for i := range stale {
		stale[i] = byte(i*7 + i/251)
	}
	serving := func(data []byte, requests *[]string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			*requests = append(*requests, r.Header.Get("Range"))
			http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(data))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	for _, c := range []struct {
		name     string
		partial  []byte
		data     []byte // what the HTTP mirror serves; nil: the mirror is the models folder
		dead     bool   // the mirror cannot be reached
		want     string // the error, "" for none; {mirror} stands for the mirror's file
		requests []string
	}{
		{name: "a stale partial and a good mirror folder", partial: stale},
		{name: "a stale partial and a good HTTP mirror", partial: stale, data: good, requests: []string{"bytes=300000-", ""}},
		{name: "a stale partial of the whole size and a good HTTP mirror", partial: bad, data: good, requests: []string{""}},
		{name: "a stale partial and an HTTP mirror serving other bytes", partial: stale, data: bad, requests: []string{"bytes=300000-", ""},
			want: "refused: {mirror} has sha256 {bad}, not the expected " + storiesSHA +
				", fetched again from zero after the partial download an earlier pull left did not verify (nothing was stored; the partial download was removed)"},
		{name: "a stale partial of the whole size and a mirror that cannot be reached", partial: bad, dead: true,
			want: "the partial download an earlier pull left (1185376 bytes) was discarded: completed from {mirror} it had sha256 {bad}, not the expected " + storiesSHA +
				"; fetching the whole file again: {mirror}: dial tcp {host}: connect: connection refused (nothing downloaded): the mirror {dead} cannot be reached; check --from or $BANKML_MIRROR"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			partial := filepath.Join(dir, "sha256-"+storiesSHA+".partial")
			if err := os.WriteFile(partial, c.partial, 0o644); err != nil {
				t.Fatal(err)
			}
			var requests []string
			o := fast()
			o.Retries = 1
			switch {
			case c.dead:
				o.Mirror = deadURL
			case c.data != nil:
				o.Mirror = serving(c.data, &requests)
			default:
				o.Mirror = models
			}
			path, err := pull.Fetch(context.Background(), src, dir, o)
			sum := sha256.Sum256(bad)
			want := strings.NewReplacer("{mirror}", o.Mirror+"/stories260K.gguf", "{bad}", hex.EncodeToString(sum[:]),
				"{dead}", deadURL, "{host}", strings.TrimPrefix(deadURL, "http://")).Replace(c.want)
			if c.want == "" {
				if err != nil {
					t.Fatalf("error %v, want the file fetched again from zero", err)
				}
				if got, _, _ := pull.Sum(path); got != storiesSHA {
					t.Fatalf("stored sha256 %s", got)
				}
			} else if err == nil || err.Error() != want {
				t.Fatalf("error %v\nwant  %s", err, want)
			}
			if c.data != nil && !slices.Equal(requests, c.requests) {
				t.Errorf("Range headers %q, want %q", requests, c.requests)
			}
			if _, err := os.Stat(partial); !os.IsNotExist(err) {
				t.Errorf("the partial file is still there: %v", err)
			}
		})
	}
}
