package guard

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/internal/testdata"
)

// writeParts writes the tensors of the model at src into n split files named <dir>/<prefix>-%05d-of-%05d.gguf, as
// llama.cpp's gguf-split writes them: every part carries split.no, split.count and split.tensors.count, the first
// also the model's metadata; countValue overrides split.count's value (and so its type) in every part when not nil.
func writeParts(t *testing.T, src, dir, prefix string, n int, countValue *gguf.Value) []string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	count := gguf.Uint16Value(uint16(n))
	if countValue != nil {
		count = *countValue
	}
	var paths []string
	per := (len(f.Tensors) + n - 1) / n
	for i := range n {
		lo, hi := i*per, min((i+1)*per, len(f.Tensors))
		kvs := []gguf.KV{
			{Key: "split.no", Value: gguf.Uint16Value(uint16(i))},
			{Key: "split.count", Value: count},
			{Key: "split.tensors.count", Value: gguf.Int32Value(int32(len(f.Tensors)))},
		}
		if i == 0 {
			kvs = append(f.KVs[:len(f.KVs):len(f.KVs)], kvs...)
		}
		p := filepath.Join(dir, fmt.Sprintf("%s-%05d-of-%05d.gguf", prefix, i+1, n))
		out, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		w, err := gguf.NewWriter(out, kvs, f.Tensors[lo:hi])
		if err != nil {
			t.Fatal(err)
		}
		for j := lo; j < hi; j++ {
			if err := w.WriteTensor(f.TensorData(&f.Tensors[j])); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// TestSplitModelsAreRefusedNamingTheirParts: the parts of a split model (stories260K in three parts, which the
// reference loads as one model from its first part) are each refused, naming the parts and how to merge them,
// never played as if one part were the model; a split.count that is not a u16 is refused in llama.cpp's words, and
// the reference refuses that file too. A split.count of 1 (an unsplit file that says so) plays.
func TestSplitModelsAreRefusedNamingTheirParts(t *testing.T) {
	src := testdata.Model(t, "stories260K.gguf")
	lib := reftest.Lib(t)
	dir := t.TempDir()

	parts := writeParts(t, src, dir, "stories", 3, nil)
	rm, err := lib.LoadModel(parts[0])
	if err != nil {
		t.Fatalf("the reference refuses the three-part split model: %v", err)
	}
	rm.Close()
	for i, p := range parts {
		rep, err := File(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("split model: this file is part %d of 3", i+1)
		if rep.Verdict != Refuse || !strings.Contains(rep.Reason, want) ||
			!strings.Contains(rep.Reason, "stories-00001-of-00003.gguf … stories-00003-of-00003.gguf") {
			t.Errorf("%s: %s %q; want refuse with %q and the parts' names", filepath.Base(p), rep.Verdict, rep.Reason, want)
		}
	}

	u32 := gguf.Uint32Value(2)
	wrong := writeParts(t, src, t.TempDir(), "wrong", 2, &u32)
	if rm, err := lib.LoadModel(wrong[0]); err == nil {
		rm.Close()
		t.Errorf("the reference loads a split model whose split.count is a u32")
	}
	rep, err := File(wrong[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "key split.count has wrong type u32 but expected type u16"; rep.Verdict != Refuse || !strings.Contains(rep.Reason, want) {
		t.Errorf("u32 split.count: %s %q; want refuse with %q", rep.Verdict, rep.Reason, want)
	}

	one := writeParts(t, src, t.TempDir(), "one", 1, nil)
	if rep, err := File(one[0], Options{}); err != nil || rep.Verdict != Play {
		t.Errorf("split.count 1: %v %v; want play", rep, err)
	}
}
