package provenance

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/testdata"
)

// manifestRow is one file of ../shared/models/MANIFEST.md: its path under the models folder, size and sha256.
type manifestRow struct {
	rel  string
	size int64
	sum  string
}

// modelsManifest reads the file tables of the shared models' MANIFEST.md, an external record of every file's size
// and sha256 (written with other tools when the files were collected).
func modelsManifest(t *testing.T) (dir string, rows []manifestRow) {
	t.Helper()
	dir = testdata.ModelsDir(t)
	text, err := os.ReadFile(filepath.Join(dir, "MANIFEST.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?m)^\\| `([^`]+)` \\| ([0-9]+) \\| `([0-9a-f]{64})` \\|")
	for _, m := range re.FindAllStringSubmatch(string(text), -1) {
		rel := m[1]
		if _, err := os.Stat(filepath.Join(dir, rel)); err != nil && !strings.Contains(rel, "/") {
			rel = filepath.Join("vocab", rel) // section 4 lists the vocab files by base name
		}
		size, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, manifestRow{rel, size, m[3]})
	}
	if len(rows) < 40 {
		t.Fatalf("MANIFEST.md: only %d file rows found; has its table format changed?", len(rows))
	}
	return dir, rows
}

// TestSHA256OfEverySharedFileEqualsTheModelsManifest: the oracle is MANIFEST.md, whose hashes were computed
// independently of bankml.
func TestSHA256OfEverySharedFileEqualsTheModelsManifest(t *testing.T) {
	dir, rows := modelsManifest(t)
	for _, r := range rows {
		t.Run(r.rel, func(t *testing.T) {
			var counted countWriter
			sum, n, err := hashFile(filepath.Join(dir, r.rel), &counted)
			if err != nil {
				t.Fatal(err)
			}
			if sum != r.sum || n != r.size {
				t.Errorf("sha256 %s, %d bytes; MANIFEST.md says %s, %d bytes", sum, n, r.sum, r.size)
			}
			if counted.n != n {
				t.Errorf("progress saw %d bytes of %d", counted.n, n)
			}
			if s2, err := SHA256File(filepath.Join(dir, r.rel), nil); err != nil || s2 != sum {
				t.Errorf("SHA256File: %s, %v", s2, err)
			}
		})
	}
}

// TestHashReaderGivesTheFIPSVectors: FIPS 180-4 / NIST example values.
func TestHashReaderGivesTheFIPSVectors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
		{strings.Repeat("a", 1000000), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
	} {
		got, n, err := HashReader(strings.NewReader(tc.in), nil)
		if err != nil || got != tc.want || n != int64(len(tc.in)) {
			t.Errorf("%.20q: %s (%d bytes, %v), want %s", tc.in, got, n, err, tc.want)
		}
	}
}

// TestHashReaderIsExactAcrossChunkBoundaries: lengths around the chunk size, through readers that return short
// reads, equal crypto/sha256 over the whole buffer.
func TestHashReaderIsExactAcrossChunkBoundaries(t *testing.T) {
	data := make([]byte, 3*chunkSize+100)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	for _, n := range []int{0, 1, 63, 64, 65, chunkSize - 1, chunkSize, chunkSize + 1, 2 * chunkSize, len(data)} {
		want := sha256.Sum256(data[:n])
		for name, r := range map[string]io.Reader{
			"whole": bytes.NewReader(data[:n]),
			"short": &shortReader{data: data[:n], step: 4099},
		} {
			var counted countWriter
			got, m, err := HashReader(r, &counted)
			if err != nil || got != hex.EncodeToString(want[:]) || m != int64(n) || counted.n != int64(n) {
				t.Errorf("%s %d bytes: %s (%d hashed, %d seen by progress, %v)", name, n, got, m, counted.n, err)
			}
		}
	}
}

func TestHashReaderReturnsTheReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	r := io.MultiReader(bytes.NewReader(make([]byte, chunkSize+5)), &errReader{boom})
	sum, n, err := HashReader(r, nil)
	if !errors.Is(err, boom) || sum != "" || n != chunkSize+5 {
		t.Fatalf("sum %q, %d bytes, err %v; want the read error after %d bytes", sum, n, err, chunkSize+5)
	}
}

func TestSHA256FileOfAMissingFileIsAnOSError(t *testing.T) {
	_, err := SHA256File(filepath.Join(t.TempDir(), "absent.gguf"), nil)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "absent.gguf") {
		t.Fatalf("err %v; want a not-exist error naming the file", err)
	}
}

func TestParseDigestAcceptsBareAndOllamaForms(t *testing.T) {
	const h = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"
	for _, tc := range []struct {
		in   string
		want string // "" for not a digest
	}{
		{h, h},
		{strings.ToUpper(h), h},
		{"sha256:" + h, h},
		{"SHA256:" + h, h},
		{"sha256:" + strings.ToUpper(h), h},
		{h[:63], ""},
		{h + "0", ""},
		{"sha256:" + h[:63], ""},
		{"sha512:" + h, ""},
		{"sha256-" + h, ""},
		{h[:63] + "g", ""},
		{" " + h, ""},
		{"FORK.json", ""},
		{"", ""},
	} {
		got, ok := ParseDigest(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("ParseDigest(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}

// TestAManifestArgumentStartingSha256IsADigestOrAUsageError: DigestArg takes a digest in either form, takes
// anything that does not start "sha256:" as a manifest path, and refuses a "sha256:" argument without 64 hex
// digits with an error wrapping ErrBadDigest (not ErrRefused: nothing was judged) naming the argument; Pin
// returns that error before it reads anything.
func TestAManifestArgumentStartingSha256IsADigestOrAUsageError(t *testing.T) {
	const h = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"
	for _, tc := range []struct {
		in     string
		digest string // "" for a path
		bad    bool
	}{
		{h, h, false},
		{"SHA256:" + h, h, false},
		{"FORK.json", "", false},
		{"./sha256:zz", "", false},
		{"", "", false},
		{"sha256:zz", "", true},
		{"sha256:", "", true},
		{"Sha256:" + h[:63], "", true},
		{"sha256:" + h + "0", "", true},
	} {
		d, isDigest, err := DigestArg(tc.in)
		if d != tc.digest || isDigest != (tc.digest != "") || (err != nil) != tc.bad {
			t.Errorf("DigestArg(%q) = %q, %v, %v; want %q, bad %v", tc.in, d, isDigest, err, tc.digest, tc.bad)
		}
		if tc.bad {
			want := fmt.Sprintf("--manifest %q: not a sha256 digest: want sha256: and 64 hex digits", tc.in)
			if !errors.Is(err, ErrBadDigest) || errors.Is(err, ErrRefused) || err.Error() != want {
				t.Errorf("DigestArg(%q): %v; want %q wrapping ErrBadDigest only", tc.in, err, want)
			}
			if _, perr := Pin(filepath.Join(t.TempDir(), "absent.gguf"), tc.in, nil); perr == nil || perr.Error() != want {
				t.Errorf("Pin with %q: %v; want %q before the (absent) file is read", tc.in, perr, want)
			}
		}
	}
}

// BenchmarkHashReader measures the hash from memory (the ceiling of SHA256File on a file in the page cache).
func BenchmarkHashReader(b *testing.B) {
	data := make([]byte, 64<<20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := HashReader(bytes.NewReader(data), nil); err != nil {
			b.Fatal(err)
		}
	}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// shortReader returns at most step bytes per Read.
type shortReader struct {
	data []byte
	step int
}

func (s *shortReader) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), s.step)], s.data)
	s.data = s.data[n:]
	return n, nil
}

type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }
