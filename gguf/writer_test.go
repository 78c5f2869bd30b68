package gguf

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/testdata"
)

// writeFile writes a whole file with WriteTensor and returns its bytes.
func writeFile(t testing.TB, kvs []KV, tensors []TensorInfo, data [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, kvs, tensors)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range data {
		if err := w.WriteTensor(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if uint64(buf.Len()) != w.Size() {
		t.Fatalf("wrote %d bytes, Size says %d", buf.Len(), w.Size())
	}
	return buf.Bytes()
}

// rewrite parses data and writes it again with the Writer.
func rewrite(t testing.TB, data []byte) []byte {
	t.Helper()
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var tensors [][]byte
	for i := range f.Tensors {
		tensors = append(tensors, f.TensorData(&f.Tensors[i]))
	}
	return writeFile(t, f.KVs, f.Tensors, tensors)
}

// TestWriterRoundTripsEverySharedModel: reading then writing every .gguf file of ../shared/models (the models,
// derived/ and vocab/) gives the same bytes, compared by sha256; the data is streamed tensor by tensor from the
// file's memory map into the hash.
func TestWriterRoundTripsEverySharedModel(t *testing.T) {
	dir := testdata.ModelsDir(t)
	var files []string
	for _, pattern := range []string{"*.gguf", "*/*.gguf"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 15 { // MANIFEST.md: 2 models, 3 derived, 10 vocabularies
		t.Fatalf("found %d .gguf files in %s, want at least 15", len(files), dir)
	}
	for _, path := range files {
		rel, _ := filepath.Rel(dir, path)
		t.Run(rel, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := sha256.Sum256(raw)
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h := sha256.New()
			w, err := NewWriter(h, f.KVs, f.Tensors)
			if err != nil {
				t.Fatal(err)
			}
			if w.DataOffset() != f.DataOffset || w.Size() != f.FileSize || w.Alignment() != f.Alignment {
				t.Fatalf("layout: data offset %d size %d alignment %d, file has %d %d %d",
					w.DataOffset(), w.Size(), w.Alignment(), f.DataOffset, f.FileSize, f.Alignment)
			}
			for i, ti := range w.Tensors() {
				if ti.Offset != f.Tensors[i].Offset || ti.Size != f.Tensors[i].Size {
					t.Fatalf("tensor %s at %d size %d, file has %d %d", ti.Name, ti.Offset, ti.Size, f.Tensors[i].Offset, f.Tensors[i].Size)
				}
				if err := w.WriteTensor(f.TensorData(&f.Tensors[i])); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
				t.Fatalf("sha256 %x, file %x", got, want)
			}
		})
	}
}

// TestValueConstructorsReadBack: every constructor's value reads back through its accessor, both as constructed and
// after a write and a parse; the file then rewrites to the same bytes.
func TestValueConstructorsReadBack(t *testing.T) {
	nested := ArrayArray([]*Array{Uint16Array([]uint16{1, 2}), Int8Array(nil), ArrayArray([]*Array{StringArray([]string{"x"})})})
	for _, tc := range []struct {
		name string
		v    Value
		want string // describe() of the value
	}{
		{"u8", Uint8Value(200), "u8:200"},
		{"i8", Int8Value(-128), "i8:-128"},
		{"u16", Uint16Value(65535), "u16:65535"},
		{"i16", Int16Value(-2), "i16:-2"},
		{"u32", Uint32Value(4000000000), "u32:4000000000"},
		{"i32", Int32Value(math.MinInt32), "i32:-2147483648"},
		{"u64", Uint64Value(math.MaxUint64), "u64:18446744073709551615"},
		{"i64", Int64Value(math.MinInt64), "i64:-9223372036854775808"},
		{"f32", Float32Value(1e-6), "f32:0x358637bd"},
		{"f32 nan payload", Float32Value(math.Float32frombits(0x7fa00001)), "f32:0x7fa00001"},
		{"f64", Float64Value(-2.5), "f64:0xc004000000000000"},
		{"bool true", BoolValue(true), "bool:true"},
		{"bool false", BoolValue(false), "bool:false"},
		{"str", StringValue("héllo"), `str:"héllo"`},
		{"str empty", StringValue(""), `str:""`},
		{"str not utf-8", StringValue("\xff\x00"), `str:"\xff\x00"`},
		{"arr u8", ArrayValue(Uint8Array([]uint8{1, 2, 255})), "[u8:1 u8:2 u8:255]"},
		{"arr i8", ArrayValue(Int8Array([]int8{-1, 127})), "[i8:-1 i8:127]"},
		{"arr u16", ArrayValue(Uint16Array([]uint16{0, 65535})), "[u16:0 u16:65535]"},
		{"arr i16", ArrayValue(Int16Array([]int16{-32768})), "[i16:-32768]"},
		{"arr u32", ArrayValue(Uint32Array([]uint32{0xFFFFFFFF})), "[u32:4294967295]"},
		{"arr i32", ArrayValue(Int32Array([]int32{1, -1, 3})), "[i32:1 i32:-1 i32:3]"},
		{"arr u64", ArrayValue(Uint64Array([]uint64{1 << 63})), "[u64:9223372036854775808]"},
		{"arr i64", ArrayValue(Int64Array([]int64{-5})), "[i64:-5]"},
		{"arr f32", ArrayValue(Float32Array([]float32{0.5, -3})), "[f32:0x3f000000 f32:0xc0400000]"},
		{"arr f64", ArrayValue(Float64Array([]float64{0.25})), "[f64:0x3fd0000000000000]"},
		{"arr bool", ArrayValue(BoolArray([]bool{false, true})), "[bool:false bool:true]"},
		{"arr str", ArrayValue(StringArray([]string{"a", "", "ccc"})), `[str:"a" str:"" str:"ccc"]`},
		{"arr empty", ArrayValue(Int64Array(nil)), "[]"},
		{"arr empty str", ArrayValue(StringArray(nil)), "[]"},
		{"arr of arr", ArrayValue(nested), `[[u16:1 u16:2] [] [[str:"x"]]]`},
		{"arr of empty arr", ArrayValue(ArrayArray(nil)), "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(tc.v); got != tc.want {
				t.Fatalf("constructed: %s, want %s", got, tc.want)
			}
			data := writeFile(t, []KV{{Key: "k", Value: tc.v}}, nil, nil)
			f, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(f.KVs[0].Value); got != tc.want {
				t.Fatalf("read back: %s, want %s", got, tc.want)
			}
			if again := rewrite(t, data); !bytes.Equal(again, data) {
				t.Fatal("rewriting the parsed file changed its bytes")
			}
		})
	}
}

// describe renders a value with its type and exact bits, recursing into arrays, so that two values describe alike
// exactly when they are the same GGUF value.
func describe(v Value) string {
	switch v.Type {
	case Uint8, Uint16, Uint32, Uint64:
		u, _ := v.Uint64()
		return fmt.Sprintf("%s:%d", v.Type, u)
	case Int8, Int16, Int32, Int64:
		i, _ := v.Int64()
		return fmt.Sprintf("%s:%d", v.Type, i)
	case Float32:
		return fmt.Sprintf("f32:%#08x", uint32(v.bits)) // bits, not Float64: widening would quiet a NaN
	case Float64:
		f, _ := v.Float64()
		return fmt.Sprintf("f64:%#016x", math.Float64bits(f))
	case Bool:
		b, _ := v.Bool()
		return fmt.Sprintf("bool:%t", b)
	case String:
		s, _ := v.String()
		return fmt.Sprintf("str:%q", s)
	case TypeArray:
		a, ok := v.Array()
		if !ok {
			return "nil-array"
		}
		var parts []string
		for _, e := range a.Values() {
			parts = append(parts, describe(e))
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("invalid(%d)", v.Type)
}

// randomValue returns a random value of any type, with arrays nested up to depth more levels.
func randomValue(r *rand.Rand, depth int) Value {
	t := ValueType(r.IntN(numValueTypes))
	if t == TypeArray && depth == 0 {
		t = String
	}
	switch t {
	case String:
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return StringValue(string(b))
	case TypeArray:
		elem := ValueType(r.IntN(numValueTypes))
		if elem == TypeArray && depth == 1 {
			elem = Uint8
		}
		vals := make([]Value, r.IntN(6))
		for i := range vals {
			for {
				vals[i] = randomValue(r, depth-1)
				if vals[i].Type == elem {
					break
				}
			}
		}
		a, err := NewArray(elem, vals)
		if err != nil {
			panic(err)
		}
		return ArrayValue(a)
	case Bool:
		return BoolValue(r.IntN(2) == 1)
	}
	// A fixed-size scalar: random bits, cut to the type's width by a write and a read.
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return scalar(t, b[:t.size()])
}

// TestWriterRandomValuesRoundTrip is a property test: 300 random files of random KVs of every type, arrays of every
// element type and arrays of arrays, each parse back to the same values and rewrite to the same bytes.
func TestWriterRandomValuesRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[ValueType]bool{}
	for iter := range 300 {
		kvs := make([]KV, 1+r.IntN(8))
		for i := range kvs {
			kvs[i] = KV{Key: fmt.Sprintf("key.%d", i), Value: randomValue(r, 3)}
			seen[kvs[i].Value.Type] = true
		}
		data := writeFile(t, kvs, nil, nil)
		f, err := Parse(data)
		if err != nil {
			t.Fatalf("file %d: %v", iter, err)
		}
		for i, kv := range f.KVs {
			if kv.Key != kvs[i].Key || describe(kv.Value) != describe(kvs[i].Value) {
				t.Fatalf("file %d: %s = %s, wrote %s = %s", iter, kv.Key, describe(kv.Value), kvs[i].Key, describe(kvs[i].Value))
			}
		}
		if again := rewrite(t, data); !bytes.Equal(again, data) {
			t.Fatalf("file %d: rewriting changed the bytes", iter)
		}
	}
	if len(seen) != numValueTypes {
		t.Fatalf("only %d value types generated", len(seen))
	}
}

// TestWriterRewritesTheAllTypesFile: the reader's test file of every value type and two tensors rewrites byte for
// byte, except where the test file is not what a writer makes: its bool stored as 2, which the reader reads as
// true, is written as 1 (as the reference writes a bool); its nonzero padding after the first tensor is written as
// zeros; and its last tensor, which ends the file unpadded, is padded to the alignment.
func TestWriterRewritesTheAllTypesFile(t *testing.T) {
	orig := allTypes()
	f, err := Parse(orig)
	if err != nil {
		t.Fatal(err)
	}
	got := rewrite(t, orig)
	if len(got) != int(pad(uint64(len(orig)), 32)) || bytes.ContainsFunc(got[len(orig):], func(r rune) bool { return r != 0 }) {
		t.Fatalf("%d bytes, want %d padded to 32 with zeros", len(got), len(orig))
	}
	a := f.Tensors[0]
	padStart, padEnd := int(f.DataOffset+a.Offset+a.Size), int(f.DataOffset+f.Tensors[1].Offset)
	boolAt := bytes.Index(orig, []byte("bool2")) + len("bool2") + 4 // after the key and its value type
	for i := range orig {
		switch {
		case i == boolAt:
			if orig[i] != 2 || got[i] != 1 {
				t.Fatalf("bool2 byte %d, rewritten %d", orig[i], got[i])
			}
		case i >= padStart && i < padEnd:
			if got[i] != 0 {
				t.Fatalf("padding byte %d is %d", i, got[i])
			}
		case got[i] != orig[i]:
			t.Fatalf("byte %d is %d, was %d", i, got[i], orig[i])
		}
	}
}

// testTensors is a small tensor list of mixed types whose sizes are not multiples of the alignment, and random data
// for it.
func testTensors(r *rand.Rand) ([]TensorInfo, [][]byte) {
	tensors := []TensorInfo{
		{Name: "a", Ne: []int64{3, 2}, Type: F32},    // 24 bytes
		{Name: "b", Ne: []int64{64}, Type: Q8_0},     // 68 bytes
		{Name: "c", Ne: []int64{128, 3}, Type: Q1_0}, // 54 bytes
		{Name: "d", Ne: []int64{256, 1, 2}, Type: TQ1_0},
		{Name: "e", Ne: []int64{5}, Type: F16},
		{Name: "f", Ne: []int64{64, 2, 1, 1}, Type: Q2_0},
	}
	data := make([][]byte, len(tensors))
	for i, ti := range tensors {
		n := ti.NElements() / int64(ti.Type.BlockSize()) * int64(ti.Type.TypeSize())
		data[i] = make([]byte, n)
		for j := range data[i] {
			data[i][j] = byte(r.Uint32()) | 1 // never zero, so that padding is told apart
		}
	}
	return tensors, data
}

// TestWriterStreamsInAnyChunking: the same data written whole per tensor or in chunks of any size, across tensor
// boundaries, gives the same file; the file parses with the tensors at aligned offsets, their data intact and zero
// padding between them, for several alignments.
func TestWriterStreamsInAnyChunking(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	tensors, data := testTensors(r)
	all := slices.Concat(data...)
	for _, align := range []uint32{0, 1, 8, 32, 64, 4096} { // 0: no general.alignment key
		kvs := []KV{{Key: "general.architecture", Value: StringValue("test")}}
		if align != 0 {
			kvs = append(kvs, KV{Key: KeyAlignment, Value: Uint32Value(align)})
		}
		want := writeFile(t, kvs, tensors, data)
		f, err := Parse(want)
		if err != nil {
			t.Fatalf("alignment %d: %v", align, err)
		}
		wantAlign := uint64(align)
		if align == 0 {
			wantAlign = 32
		}
		if f.Alignment != wantAlign {
			t.Fatalf("alignment %d: file alignment %d", align, f.Alignment)
		}
		end := f.DataOffset
		for i := range f.Tensors {
			ti := &f.Tensors[i]
			if !bytes.Equal(f.TensorData(ti), data[i]) {
				t.Fatalf("alignment %d: tensor %s data differs", align, ti.Name)
			}
			if gap := want[end : f.DataOffset+ti.Offset]; bytes.ContainsFunc(gap, func(r rune) bool { return r != 0 }) {
				t.Fatalf("alignment %d: nonzero padding before %s", align, ti.Name)
			}
			end = f.DataOffset + ti.Offset + ti.Size
		}
		if tail := want[end:]; uint64(len(want))%f.Alignment != 0 || bytes.ContainsFunc(tail, func(r rune) bool { return r != 0 }) {
			t.Fatalf("alignment %d: file of %d bytes, tail %v", align, len(want), tail)
		}
		for _, chunk := range []int{1, 7, 33, 1000, len(all)} {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, kvs, tensors)
			if err != nil {
				t.Fatal(err)
			}
			for p := all; len(p) > 0; {
				n := min(chunk, len(p))
				if got, err := w.Write(p[:n]); err != nil || got != n {
					t.Fatalf("Write: %d, %v", got, err)
				}
				p = p[n:]
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("alignment %d, chunks of %d: the file differs from the one written per tensor", align, chunk)
			}
		}
	}
}

// TestNewWriterRefuses: one row per malformed header; each is refused with its sentinel error before anything is
// written.
func TestNewWriterRefuses(t *testing.T) {
	q := func(name string, ne ...int64) TensorInfo { return TensorInfo{Name: name, Ne: ne, Type: Q8_0} }
	deep := Uint8Array(nil)
	for range maxDepth {
		deep = ArrayArray([]*Array{deep})
	}
	for _, tc := range []struct {
		name    string
		kvs     []KV
		tensors []TensorInfo
		want    error
	}{
		{"empty key", []KV{{Key: "", Value: Uint8Value(1)}}, nil, ErrEmptyName},
		{"duplicate key", []KV{{Key: "a", Value: Uint8Value(1)}, {Key: "a", Value: Uint8Value(2)}}, nil, ErrDuplicate},
		{"unknown value type", []KV{{Key: "a", Value: Value{Type: 13}}}, nil, ErrUnknownType},
		{"nil array", []KV{{Key: "a", Value: ArrayValue(nil)}}, nil, ErrBadValue},
		{"array literal without elements", []KV{{Key: "a", Value: ArrayValue(&Array{ElemType: Uint32, Len: 2})}}, nil, ErrBadValue},
		{"negative array length", []KV{{Key: "a", Value: ArrayValue(&Array{ElemType: Uint32, Len: -1})}}, nil, ErrLimit},
		{"array of unknown type", []KV{{Key: "a", Value: ArrayValue(&Array{ElemType: 99})}}, nil, ErrUnknownType},
		{"nil nested array", []KV{{Key: "a", Value: ArrayValue(ArrayArray([]*Array{nil}))}}, nil, ErrBadValue},
		{"arrays nested 65 deep", []KV{{Key: "a", Value: ArrayValue(deep)}}, nil, ErrLimit},
		{"alignment of type u64", []KV{{Key: KeyAlignment, Value: Uint64Value(32)}}, nil, ErrAlignment},
		{"alignment zero", []KV{{Key: KeyAlignment, Value: Uint32Value(0)}}, nil, ErrAlignment},
		{"alignment not a power of two", []KV{{Key: KeyAlignment, Value: Uint32Value(48)}}, nil, ErrAlignment},
		{"empty tensor name", nil, []TensorInfo{q("", 32)}, ErrEmptyName},
		{"duplicate tensor name", nil, []TensorInfo{q("t", 32), q("t", 32)}, ErrDuplicate},
		{"tensor name of 64 bytes", nil, []TensorInfo{q(strings.Repeat("n", 64), 32)}, ErrLimit},
		{"five dimensions", nil, []TensorInfo{q("t", 32, 1, 1, 1, 1)}, ErrDims},
		{"zero dimension", nil, []TensorInfo{q("t", 32, 0)}, ErrDims},
		{"negative dimension", nil, []TensorInfo{q("t", 32, -1)}, ErrDims},
		{"element count overflow", nil, []TensorInfo{q("t", 1<<32, 1<<31, 2)}, ErrOverflow},
		{"byte size overflow", nil, []TensorInfo{{Name: "t", Ne: []int64{1 << 62}, Type: F32}}, ErrOverflow},
		{"data section overflow", nil, []TensorInfo{{Name: "a", Ne: []int64{1 << 60}, Type: F32}, {Name: "b", Ne: []int64{1 << 60}, Type: F32}}, ErrOverflow},
		{"removed type", nil, []TensorInfo{{Name: "t", Ne: []int64{32}, Type: 4}}, ErrTensorType},
		{"unknown type", nil, []TensorInfo{{Name: "t", Ne: []int64{32}, Type: 143}}, ErrTensorType},
		{"row not a multiple of the block", nil, []TensorInfo{q("t", 48)}, ErrShape},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, tc.kvs, tc.tensors)
			if !errors.Is(err, tc.want) || w != nil || !strings.HasPrefix(err.Error(), "gguf: ") {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Fatalf("%d bytes written", buf.Len())
			}
		})
	}
}

// failingWriter accepts n bytes, then fails.
type failingWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) <= f.n {
		f.n -= len(p)
		return len(p), nil
	}
	n := f.n
	f.n = 0
	return n, errDiskFull
}

// TestWriterDataErrors: one row per misuse of the data stream; each fails with its sentinel error.
func TestWriterDataErrors(t *testing.T) {
	tensors, data := testTensors(rand.New(rand.NewPCG(5, 6)))
	all := slices.Concat(data...)
	for _, tc := range []struct {
		name string
		run  func(w *Writer) error
		want error
	}{
		{"too much data in one Write", func(w *Writer) error { _, err := w.Write(append(all, 1)); return err }, ErrDataSize},
		{"data after the last tensor", func(w *Writer) error {
			w.Write(all)
			_, err := w.Write([]byte{1})
			return err
		}, ErrDataSize},
		{"WriteTensor after the last tensor", func(w *Writer) error { w.Write(all); return w.WriteTensor(nil) }, ErrDataSize},
		{"WriteTensor of the wrong size", func(w *Writer) error { return w.WriteTensor(data[1]) }, ErrDataSize},
		{"WriteTensor after a partial Write", func(w *Writer) error { w.Write(data[0][:3]); return w.WriteTensor(data[0]) }, ErrDataSize},
		{"Close with a tensor missing", func(w *Writer) error { w.Write(all[:len(all)-1]); return w.Close() }, ErrDataSize},
		{"Close with no data", func(w *Writer) error { return w.Close() }, ErrDataSize},
		{"Write after Close", func(w *Writer) error { w.Write(all); w.Close(); _, err := w.Write(nil); return err }, ErrClosed},
		{"Close twice", func(w *Writer) error { w.Write(all); w.Close(); return w.Close() }, ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWriter(io.Discard, nil, tensors)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.run(w); !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), "gguf: ") {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// TestWriterReportsAndKeepsOutputErrors: an error of the underlying writer is returned wrapped, by NewWriter for the
// header and by Write for data, and every later call returns it.
func TestWriterReportsAndKeepsOutputErrors(t *testing.T) {
	bigKV := []KV{{Key: "k", Value: StringValue(strings.Repeat("x", 2*writeBuffer))}}
	if _, err := NewWriter(&failingWriter{n: 100}, bigKV, nil); !errors.Is(err, errDiskFull) || !strings.Contains(err.Error(), "header") {
		t.Fatalf("header write: %v", err)
	}
	big := make([]byte, 2*writeBuffer)
	w, err := NewWriter(&failingWriter{n: writeBuffer + 10}, nil, []TensorInfo{{Name: "t", Ne: []int64{int64(len(big))}, Type: I8}})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := w.Write(big); !errors.Is(err, errDiskFull) || !strings.Contains(err.Error(), `tensor "t"`) || n == len(big) {
		t.Fatalf("Write: %d, %v", n, err)
	}
	if err := w.WriteTensor(nil); !errors.Is(err, errDiskFull) {
		t.Fatalf("WriteTensor after the failure: %v", err)
	}
	if err := w.Close(); !errors.Is(err, errDiskFull) {
		t.Fatalf("Close after the failure: %v", err)
	}
}

// TestWriterMemoryDoesNotGrowWithTheModel: streaming a 256 MiB tensor in 1 MiB pieces allocates a small, fixed
// amount (the output buffer), not the tensor.
func TestWriterMemoryDoesNotGrowWithTheModel(t *testing.T) {
	const size = 256 << 20
	chunk := make([]byte, 1<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w, err := NewWriter(io.Discard, nil, []TensorInfo{{Name: "big", Ne: []int64{size / 4}, Type: F32}, {Name: "small", Ne: []int64{1}, Type: F32}})
	if err != nil {
		t.Fatal(err)
	}
	for range size / len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteTensor(make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Fatalf("writing %d MiB allocated %d bytes", size>>20, alloc)
	}
}
