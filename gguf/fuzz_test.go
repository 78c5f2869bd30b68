package gguf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/testdata"
)

// FuzzParse checks that Parse never panics, that every error is a gguf error, and that a File it accepts holds
// only what it promises: views of the declared sizes inside the input, and accessors that do not panic.
// Run: go test -run '^$' -fuzz FuzzParse -fuzztime 10s ./gguf/
func FuzzParse(f *testing.F) {
	f.Add(allTypes())
	if data, err := os.ReadFile(filepath.Join(testdata.ModuleRoot(f), "..", "shared", "models", "stories260K.gguf")); err == nil {
		if g, err := Parse(data); err == nil {
			f.Add(data[:g.DataOffset])                       // the real header alone
			f.Add(data[:g.DataOffset+g.Tensors[0].Size+256]) // and the start of the data
			small := (&builder{}).header(1, 1).kvU32("k", 1) // a small valid file
			f.Add(small.tensor("t", Q8_0, 0, 32).data(32, 34).b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data)
		if err != nil {
			if g != nil || !strings.HasPrefix(err.Error(), "gguf: ") || errors.Unwrap(err) == nil {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		for _, kv := range g.KVs {
			walk(kv.Value, 0)
		}
		for i := range g.Tensors {
			ti := &g.Tensors[i]
			if got, _ := g.Tensor(ti.Name); got != ti || uint64(len(g.TensorData(ti))) != ti.Size ||
				ti.Offset%g.Alignment != 0 || ti.NElements() < 1 {
				t.Fatalf("tensor %q: %+v", ti.Name, ti)
			}
		}
	})
}

// walk calls every accessor on v and on its elements.
func walk(v Value, depth int) {
	v.Uint64()
	v.Int64()
	v.Float64()
	v.Bool()
	v.String()
	a, ok := v.Array()
	if !ok {
		return
	}
	a.Strings()
	a.Float32s()
	a.Int32s()
	for _, e := range a.Values() {
		walk(e, depth+1)
	}
}
