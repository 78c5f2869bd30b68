//go:build !windows

package gguf

import (
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/reference"
	"github.com/ebitengine/purego"
)

// TestGGMLTypeTableMatchesTheReference: for every type id the reference defines (0 to GGML_TYPE_COUNT-1 = 42), the
// table's block size and bytes per block are those of the reference's compiled type_traits (ggml_blck_size,
// ggml_type_size of libggml-base.so) and its name is the reference's (ggml_type_name); a removed id, which the
// reference names "DEPRECATED" with block size 0, keeps its former name here and has block size and bytes 0, so
// that Parse refuses it by name.
func TestGGMLTypeTableMatchesTheReference(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the reference runs on linux/amd64")
	}
	dir, err := reference.Dir()
	if errors.Is(err, reference.ErrNotInstalled) {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	lib, err := purego.Dlopen(filepath.Join(dir, "libggml-base.so"), purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	var (
		typeName func(int32) string
		blckSize func(int32) int64
		typeSize func(int32) uintptr
	)
	purego.RegisterLibFunc(&typeName, lib, "ggml_type_name")
	purego.RegisterLibFunc(&blckSize, lib, "ggml_blck_size")
	purego.RegisterLibFunc(&typeSize, lib, "ggml_type_size")
	removed := 0
	for id := range int32(numGGMLTypes) {
		typ := GGMLType(id)
		name, block, size := typeName(id), blckSize(id), typeSize(id)
		if block == 0 { // removed from ggml
			removed++
			// The reference names 4 and 5 "DEPRECATED" and the others "TYPE_Q4_0_4_4 REMOVED, use ...".
			former := name == "DEPRECATED" || strings.HasPrefix(name, "TYPE_"+strings.ToUpper(typ.String())+" REMOVED")
			if !former || typ.BlockSize() != 0 || typ.TypeSize() != 0 || typ.String() == "" {
				t.Errorf("id %d: reference %q %d %d, table %q %d %d", id, name, block, size, typ, typ.BlockSize(), typ.TypeSize())
			}
			w := (&builder{}).header(1, 0).tensor("t", typ, 0, 256)
			if _, err := Parse(w.data(32, 256).b); !errors.Is(err, ErrTensorType) || !strings.Contains(err.Error(), typ.String()) {
				t.Errorf("id %d: Parse %v, want ErrTensorType naming %s", id, err, typ)
			}
			continue
		}
		if name != typ.String() || block != int64(typ.BlockSize()) || size != uintptr(typ.TypeSize()) {
			t.Errorf("id %d: reference %q %d %d, table %q %d %d", id, name, block, size, typ, typ.BlockSize(), typ.TypeSize())
		}
	}
	if removed != 8 { // 4, 5, 31-33, 36-38
		t.Errorf("%d removed ids, want 8", removed)
	}
}
