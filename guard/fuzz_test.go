package guard

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/testdata"
)

// FuzzGuard runs the guard's header reader and judge, and package gguf's reader, on any bytes, and checks that they
// agree. It starts from every file in the shared models folder (whole, and cut at the end of the header) and every
// generated trap and hostile header of TestTrapsAndHostileHeaders.
//
// Run: go test -run '^$' -fuzz FuzzGuard -fuzztime 10m ./guard/
func FuzzGuard(f *testing.F) {
	dir := testdata.ModelsDir(f)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f.Add(data)
		if g, err := gguf.Parse(data); err == nil && len(g.Tensors) > 0 {
			f.Add(data[:g.DataOffset]) // the header alone: small, so mutations are fast
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, r := range rows() {
		f.Add(r.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzOne(t, data)
	})
}

// fuzzOne checks the guard's promises on one input:
//   - no panic and no error (a bytes.Reader fails only with io.EOF); a report that says what it means: reasons
//     exactly when not play, bytes_needed past the input on need_more, valid JSON;
//   - it is deterministic;
//   - what plays on mainline, package gguf parses, with the same tensors and data offset; what package gguf parses
//     plays on mainline, or is refused only for its tokenizer metadata or a Bonsai 2 name;
//   - given a prefix of the input (and the input's size), the guard gives the same report or need_more past the
//     prefix;
//   - on play, the guard reads nothing at or past the data offset.
//
// The determinism, prefix and read checks run on inputs up to 1 MiB, so that mutations of the largest seeds (4 MB
// vocabularies) stay cheap.
func fuzzOne(t *testing.T, data []byte) {
	heavy := len(data) <= 1<<20
	size := int64(len(data))
	opt := Options{FileName: "fuzz.gguf"}
	var main *Report
	for _, e := range []Engine{Mainline, Prism} {
		opt.Engine = e
		rep, err := Check(bytes.NewReader(data), size, opt)
		if err != nil {
			t.Fatalf("%s: error %v", e, err)
		}
		switch rep.Verdict {
		case Play, Refuse:
			if (rep.Verdict == Play) != (len(rep.Reasons) == 0) || rep.BytesNeeded != 0 {
				t.Fatalf("%s: %+v", e, rep)
			}
		case NeedMore:
			if len(rep.Reasons) != 1 || rep.BytesNeeded <= uint64(size) || rep.BytesMissing != rep.BytesNeeded-uint64(size) {
				t.Fatalf("%s: %+v", e, rep)
			}
		default:
			t.Fatalf("%s: verdict %q", e, rep.Verdict)
		}
		js, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		if e == Mainline {
			main = rep
		}
		if !heavy {
			continue
		}
		again, _ := Check(bytes.NewReader(data), size, opt)
		if js2, _ := json.Marshal(again); !bytes.Equal(js, js2) {
			t.Fatalf("%s: not deterministic:\n%s\n%s", e, js, js2)
		}
		// A prefix: the same report, or need_more past it.
		k := len(data) / 2
		if len(data) > 0 {
			k = int(data[len(data)-1]) * len(data) / 256
		}
		part, err := Check(bytes.NewReader(data[:k]), size, opt)
		if err != nil {
			t.Fatalf("%s: prefix %d: %v", e, k, err)
		}
		if js3, _ := json.Marshal(part); !bytes.Equal(js, js3) && (part.Verdict != NeedMore || part.BytesNeeded <= uint64(k)) {
			t.Fatalf("%s: prefix %d of %d:\n%s\nwhole:\n%s", e, k, size, js3, js)
		}
		// Nothing at or past the data is read.
		if rep.Verdict == Play {
			gr := &guardedReader{r: bytes.NewReader(data), limit: int64(rep.DataOffset)}
			if g, err := Check(gr, size, opt); err != nil || g.Verdict != Play {
				t.Fatalf("%s: guarded: %v, %v", e, g, err)
			}
		}
	}

	g, err := gguf.Parse(data)
	switch {
	case main.Verdict == Play && err != nil:
		t.Fatalf("plays on mainline, but gguf.Parse: %v", err)
	case main.Verdict == Play && (len(g.Tensors) != main.Tensors || g.DataOffset != main.DataOffset):
		t.Fatalf("plays with %d tensors at %d, gguf.Parse reads %d at %d", main.Tensors, main.DataOffset, len(g.Tensors), g.DataOffset)
	case err == nil && main.Verdict != Play:
		for _, r := range main.Reasons {
			if !strings.HasPrefix(r, "tokenizer.ggml.") && !strings.Contains(r, "Bonsai 2") {
				t.Fatalf("gguf.Parse accepts, the guard says %s: %s", main.Verdict, main.Reason)
			}
		}
	}
}

// TestFuzzRegressions runs FuzzGuard's checks on the inputs it once failed on.
func TestFuzzRegressions(t *testing.T) {
	for _, data := range []string{
		"00X", // a file shorter than the magic, read whole and from a prefix: the reason quoted different bytes
	} {
		fuzzOne(t, []byte(data))
	}
}
