package gguf

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestEveryValueTypeReadsBackThroughItsAccessor(t *testing.T) {
	f, err := Parse(allTypes())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.KVs) != 24 || f.Architecture() != "llama" {
		t.Fatalf("got %d KVs, arch %q", len(f.KVs), f.Architecture())
	}
	u := func(k string) any { v, ok := f.GetUint64(k); return pair(v, ok) }
	i := func(k string) any { v, _ := f.Get(k); x, ok := v.Int64(); return pair(x, ok) }
	fl := func(k string) any { v, ok := f.GetFloat64(k); return pair(v, ok) }
	b := func(k string) any { v, ok := f.GetBool(k); return pair(v, ok) }
	s := func(k string) any { v, ok := f.GetString(k); return pair(v, ok) }
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"u8 as uint", u("u8"), pair(uint64(200), true)},
		{"i8 as int", i("i8"), pair(int64(-128), true)},
		{"negative i8 is no uint", u("i8"), pair(uint64(0), false)},
		{"u16", u("u16"), pair(uint64(65535), true)},
		{"i16", i("i16"), pair(int64(-2), true)},
		{"u32", u("u32"), pair(uint64(4000000000), true)},
		{"u32 as int", i("u32"), pair(int64(4000000000), true)},
		{"i32", i("i32"), pair(int64(-1), true)},
		{"f32 widened exactly", fl("f32"), pair(float64(float32(1e-5)), true)},
		{"f32 is no int", i("f32"), pair(int64(0), false)},
		{"bool", b("bool"), pair(true, true)},
		{"bool nonzero", b("bool2"), pair(true, true)},
		{"str", s("str"), pair("héllo", true)},
		{"str is no bool", b("str"), pair(false, false)},
		{"u64 max", u("u64"), pair(uint64(math.MaxUint64), true)},
		{"u64 max is no int64", i("u64"), pair(int64(0), false)},
		{"i64", i("i64"), pair(int64(-5), true)},
		{"f64", fl("f64"), pair(-2.5, true)},
		{"missing key", u("nope"), pair(uint64(0), false)},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	for _, tc := range []struct {
		key  string
		typ  ValueType
		len  int
		get  func(*Array) (any, error)
		want any
	}{
		{"a.str", String, 3, func(a *Array) (any, error) { return a.Strings() }, []string{"a", "", "ccc"}},
		{"a.f32", Float32, 2, func(a *Array) (any, error) { return a.Float32s() }, []float32{0.5, -3}},
		{"a.i32", Int32, 2, func(a *Array) (any, error) { return a.Int32s() }, []int32{7, -2}},
		{"a.u32 keeps its bits", Uint32, 1, func(a *Array) (any, error) { return a.Int32s() }, []int32{-1}},
		{"a.u8", Uint8, 3, values, []any{uint64(1), uint64(2), uint64(3)}},
		{"a.bool", Bool, 2, values, []any{false, true}},
		{"a.i16", Int16, 1, values, []any{int64(-32768)}},
		{"a.f64", Float64, 1, values, []any{0.25}},
		{"a.empty", Int64, 0, values, []any{}},
		{"a.nested", TypeArray, 3, values, []any{[]any{uint64(1), uint64(2)}, []any{}, []any{[]any{"x"}}}},
	} {
		key, _, _ := strings.Cut(tc.key, " ")
		a, ok := f.GetArray(key)
		if !ok || a.ElemType != tc.typ || a.Len != tc.len {
			t.Errorf("%s: got %v %v", tc.key, a, ok)
			continue
		}
		got, err := tc.get(a)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v (%v), want %v", tc.key, got, err, tc.want)
		}
	}
	strs, _ := f.GetArray("a.str")
	if _, err := strs.Float32s(); !errors.Is(err, ErrWrongType) {
		t.Errorf("Float32s of a string array: %v", err)
	}
	if _, err := (*Array)(nil).Strings(); !errors.Is(err, ErrWrongType) {
		t.Errorf("Strings of nil: %v", err)
	}
}

func pair(v any, ok bool) any { return [2]any{v, ok} }

// values decodes an array recursively into plain Go values.
func values(a *Array) (any, error) {
	out := []any{}
	for _, v := range a.Values() {
		switch v.Type {
		case TypeArray:
			sub, _ := v.Array()
			x, _ := values(sub)
			out = append(out, x)
		case String:
			s, _ := v.String()
			out = append(out, s)
		case Bool:
			x, _ := v.Bool()
			out = append(out, x)
		case Float32, Float64:
			x, _ := v.Float64()
			out = append(out, x)
		case Int8, Int16, Int32, Int64:
			x, _ := v.Int64()
			out = append(out, x)
		default:
			x, _ := v.Uint64()
			out = append(out, x)
		}
	}
	return out, nil
}

func TestTensorInfosSizesAndViews(t *testing.T) {
	data := allTypes()
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != 32 || f.DataOffset%32 != 0 || f.FileSize != uint64(len(data)) {
		t.Fatalf("version %d alignment %d data offset %d size %d", f.Version, f.Alignment, f.DataOffset, f.FileSize)
	}
	a, _ := f.Tensor("a")
	b, _ := f.Tensor("b")
	if a.Size != 24 || a.NElements() != 6 || b.Size != 68 || b.Offset != 32 || b.Type != Q8_0 {
		t.Fatalf("a %+v b %+v", a, b)
	}
	if d := f.TensorData(b); len(d) != 68 || cap(d) != 68 || d[0] != 32 {
		t.Fatalf("view of b: len %d cap %d", len(d), cap(d))
	}
	if _, ok := f.Tensor("c"); ok {
		t.Fatal("found a tensor that does not exist")
	}
	if f.TensorData(&TensorInfo{Offset: 1 << 40, Size: 1}) != nil {
		t.Fatal("view of a foreign tensor past the end")
	}
	if err := f.Close(); err != nil || f.TensorData(a) != nil || f.Close() != nil {
		t.Fatal("Close")
	}
}

func TestTensorByteSizeFollowsTheTypeTraits(t *testing.T) {
	for _, tc := range []struct {
		typ  GGMLType
		ne   []int64
		size uint64
	}{
		{F32, nil, 4}, // no dimensions: one element, as in the reference
		{F16, []int64{3, 5}, 30},
		{BF16, []int64{7}, 14},
		{Q8_0, []int64{64, 3}, 6 * 34},
		{Q4_0, []int64{32, 1, 2, 3}, 6 * 18},
		{Q4_K, []int64{512, 2}, 4 * 144},
		{Q6_K, []int64{256}, 210},
		{TQ1_0, []int64{256}, 54},
		{TQ2_0, []int64{256, 2}, 2 * 66},
		{Q1_0, []int64{128, 3}, 3 * 18},
		{Q2_0, []int64{64, 3}, 3 * 18},
		{MXFP4, []int64{32}, 17},
		{NVFP4, []int64{64}, 36},
		{I64, []int64{2}, 16},
	} {
		w := (&builder{}).header(1, 0).tensor("t", tc.typ, 0, tc.ne...)
		f, err := Parse(w.data(32, int(tc.size)).b)
		if err != nil {
			t.Errorf("%s %v: %v", tc.typ, tc.ne, err)
			continue
		}
		if got := f.Tensors[0].Size; got != tc.size || uint64(len(f.TensorData(&f.Tensors[0]))) != tc.size {
			t.Errorf("%s %v: size %d, want %d", tc.typ, tc.ne, got, tc.size)
		}
	}
}

func TestGGMLTypeTable(t *testing.T) {
	for _, tc := range []struct {
		typ         GGMLType
		name        string
		block, size int
	}{
		{F32, "f32", 1, 4}, {F16, "f16", 1, 2}, {Q4_0, "q4_0", 32, 18}, {Q4_1, "q4_1", 32, 20},
		{Q5_0, "q5_0", 32, 22}, {Q5_1, "q5_1", 32, 24}, {Q8_0, "q8_0", 32, 34}, {Q8_1, "q8_1", 32, 36},
		{Q2_K, "q2_K", 256, 84}, {Q3_K, "q3_K", 256, 110}, {Q4_K, "q4_K", 256, 144}, {Q5_K, "q5_K", 256, 176},
		{Q6_K, "q6_K", 256, 210}, {Q8_K, "q8_K", 256, 292}, {IQ4_NL, "iq4_nl", 32, 18}, {BF16, "bf16", 1, 2},
		{TQ1_0, "tq1_0", 256, 54}, {TQ2_0, "tq2_0", 256, 66}, {Q1_0, "q1_0", 128, 18}, {Q2_0, "q2_0", 64, 18},
		{4, "q4_2", 0, 0}, {31, "q4_0_4_4", 0, 0}, {38, "iq4_nl_8_8", 0, 0},
		{43, "type(43)", 0, 0}, {math.MaxUint32, "type(4294967295)", 0, 0},
	} {
		if tc.typ.String() != tc.name || tc.typ.BlockSize() != tc.block || tc.typ.TypeSize() != tc.size {
			t.Errorf("%d: got %s %d %d, want %s %d %d", uint32(tc.typ), tc.typ, tc.typ.BlockSize(), tc.typ.TypeSize(),
				tc.name, tc.block, tc.size)
		}
	}
	// Every defined type has both or neither of block and size.
	for i := range GGMLType(numGGMLTypes) {
		if (i.BlockSize() == 0) != (i.TypeSize() == 0) || i.String() == "" {
			t.Errorf("type %d: block %d size %d name %q", uint32(i), i.BlockSize(), i.TypeSize(), i)
		}
	}
}

func TestValueTypeNames(t *testing.T) {
	want := []string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64", "type(13)"}
	for i, name := range want {
		if got := ValueType(i).String(); got != name {
			t.Errorf("%d: %q, want %q", i, got, name)
		}
	}
}

func TestAlignment(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kv    func(*builder)
		align uint64
		err   error
	}{
		{"default 32", func(w *builder) { w.kvStr("x", "y") }, 32, nil},
		{"u32 64", func(w *builder) { w.kvU32(KeyAlignment, 64) }, 64, nil},
		{"u32 1", func(w *builder) { w.kvU32(KeyAlignment, 1) }, 1, nil},
		{"u32 2^31", func(w *builder) { w.kvU32(KeyAlignment, 1<<31) }, 1 << 31, ErrTruncated}, // padding past the end
		{"zero", func(w *builder) { w.kvU32(KeyAlignment, 0) }, 0, ErrAlignment},
		{"not a power of two", func(w *builder) { w.kvU32(KeyAlignment, 48) }, 0, ErrAlignment},
		{"u64, even if it fits", func(w *builder) { w.key(KeyAlignment, Uint64).u64(64) }, 0, ErrAlignment},
		{"u16", func(w *builder) { w.key(KeyAlignment, Uint16).u16(64) }, 0, ErrAlignment},
		{"string", func(w *builder) { w.kvStr(KeyAlignment, "64") }, 0, ErrAlignment},
	} {
		w := (&builder{}).header(1, 1)
		tc.kv(w)
		w.tensor("t", F32, 0, 5)
		pad := int(min(tc.align, 64))
		if pad == 0 {
			pad = 32
		}
		f, err := Parse(w.data(pad, 20).b)
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.err)
			continue
		}
		if err == nil && (f.Alignment != tc.align || f.DataOffset%tc.align != 0 || f.DataOffset >= uint64(len(w.b))) {
			t.Errorf("%s: alignment %d, data offset %d", tc.name, f.Alignment, f.DataOffset)
		}
	}
}

func TestNoTensorsMeansNoPadding(t *testing.T) {
	w := (&builder{}).header(0, 1).kvStr("k", "v")
	f, err := Parse(w.b)
	if err != nil || f.DataOffset != uint64(len(w.b)) || len(f.Tensors) != 0 {
		t.Fatalf("%v, data offset %d of %d", err, f.DataOffset, len(w.b))
	}
}

func TestMalformedFilesNameTheProblem(t *testing.T) {
	one := func(build func(w *builder)) []byte { w := &builder{}; build(w); return w.b }
	tensor := func(build func(w *builder)) []byte {
		return one(func(w *builder) { w.header(1, 0); build(w); w.data(32, 64) })
	}
	for _, tc := range []struct {
		name string
		data []byte
		err  error
		text string
	}{
		{"empty", nil, ErrTruncated, "magic"},
		{"bad magic", []byte("GGUL\x03\x00\x00\x00"), ErrBadMagic, `"GGUL"`},
		{"big-endian", []byte("GGUF\x00\x00\x00\x03"), ErrBigEndian, "little-endian"},
		{"version 0", []byte("GGUF\x00\x00\x00\x00"), ErrVersion, "0"},
		{"version 1", []byte("GGUF\x01\x00\x00\x00"), ErrVersion, "1; only versions 2 and 3"},
		{"version 4", []byte("GGUF\x04\x00\x00\x00"), ErrVersion, "4"},
		{"no counts", []byte("GGUF\x02\x00\x00\x00"), ErrTruncated, "tensor count"},
		{"huge metadata count", one(func(w *builder) { w.header(0, 1<<62) }), ErrTruncated, "metadata count 4611686018427387904"},
		{"huge tensor count", one(func(w *builder) { w.header(math.MaxUint64, 0) }), ErrTruncated, "tensor count"},
		{"counts together too big", one(func(w *builder) { w.header(1, 1); w.u64(0); w.u64(0); w.u64(0) }), ErrTruncated, "1 metadata and 1 tensors"},
		{"huge key length", one(func(w *builder) { w.header(0, 1); w.u64(1 << 62); w.u64(0); w.u64(0) }), ErrTruncated, "metadata 0: truncated: key length"},
		{"huge string length", one(func(w *builder) { w.header(0, 1).key("k", String).u64(math.MaxUint64) }), ErrTruncated, `key "k": truncated: string length`},
		{"huge array length", one(func(w *builder) { w.header(0, 1).key("k", TypeArray).u32(uint32(Uint8)); w.u64(1 << 40) }), ErrTruncated, "array of u8 count 1099511627776"},
		{"huge string array", one(func(w *builder) { w.header(0, 1).key("k", TypeArray).u32(uint32(String)); w.u64(3); w.u64(8) }), ErrTruncated, "array of str count 3"},
		{"string in array cut", one(func(w *builder) {
			w.header(0, 1).key("k", TypeArray).u32(uint32(String))
			w.u64(1)
			w.str("ab")
			w.b = w.b[:len(w.b)-1]
		}), ErrTruncated, "element 0"},
		{"unknown value type", one(func(w *builder) { w.header(0, 1).key("k", 13); w.u64(0) }), ErrUnknownType, `key "k": unknown value type: id 13`},
		{"unknown element type", one(func(w *builder) { w.header(0, 1).key("k", TypeArray).u32(99); w.u64(0) }), ErrUnknownType, "element type id 99"},
		{"unknown nested element type", one(func(w *builder) {
			w.header(0, 1).key("k", TypeArray).u32(uint32(TypeArray))
			w.u64(1)
			w.u32(200)
			w.u64(0)
		}), ErrUnknownType, "element 0: unknown value type: array element type id 200"},
		{"nesting too deep", one(func(w *builder) {
			w.header(0, 1).key("k", TypeArray)
			for range maxDepth + 1 {
				w.u32(uint32(TypeArray))
				w.u64(1)
			}
		}), ErrLimit, "nested more than 64"},
		{"empty key", one(func(w *builder) { w.header(0, 1).kvU32("", 1) }), ErrEmptyName, "metadata 0"},
		{"duplicate key", one(func(w *builder) { w.header(0, 2).kvU32("k", 1).kvStr("k", "x") }), ErrDuplicate, `key "k"`},
		{"empty tensor name", tensor(func(w *builder) { w.tensor("", F32, 0, 4) }), ErrEmptyName, "tensor 0"},
		{"tensor name of 64 bytes", tensor(func(w *builder) { w.tensor(strings.Repeat("n", 64), F32, 0, 4) }), ErrLimit, "64 bytes"},
		{"duplicate tensor", one(func(w *builder) { w.header(2, 0).tensor("t", F32, 0, 4).tensor("t", F32, 32, 4).data(32, 64) }), ErrDuplicate, `tensor "t"`},
		{"5 dims", tensor(func(w *builder) { w.tensor("t", F32, 0, 1, 1, 1, 1, 1) }), ErrDims, `tensor "t": bad dimensions: 5 dimensions`},
		{"zero dim", tensor(func(w *builder) { w.tensor("t", F32, 0, 4, 0) }), ErrDims, "dimension 1 is 0"},
		{"negative dim", tensor(func(w *builder) { w.tensor("t", F32, 0, -4) }), ErrDims, "dimension 0 is -4"},
		{"element count overflow", tensor(func(w *builder) { w.tensor("t", F32, 0, 1<<32, 1<<31) }), ErrOverflow, "element count"},
		{"byte size overflow", tensor(func(w *builder) { w.tensor("t", F32, 0, 1<<31, 1<<31) }), ErrOverflow, "byte size"},
		{"unknown ggml type", tensor(func(w *builder) { w.tensor("t", 43, 0, 4) }), ErrTensorType, "id 43"},
		{"removed ggml type", tensor(func(w *builder) { w.tensor("t", 32, 0, 4) }), ErrTensorType, "id 32 (q4_0_4_8) was removed"},
		{"row not a multiple of the block", tensor(func(w *builder) { w.tensor("t", Q8_0, 0, 48) }), ErrShape, "rows of 48 elements, block size 32"},
		{"scalar of a block type", tensor(func(w *builder) { w.tensor("t", Q8_0, 0) }), ErrShape, "rows of 1"},
		{"misaligned offset", one(func(w *builder) { w.header(2, 0).tensor("a", F32, 0, 4).tensor("b", F32, 16, 4).data(32, 64) }), ErrAlignment, `tensor "b": bad alignment: offset 16`},
		{"offset not packed", one(func(w *builder) { w.header(2, 0).tensor("a", F32, 0, 4).tensor("b", F32, 64, 4).data(32, 96) }), ErrLayout, "offset 64, expected 32"},
		{"first offset not 0", one(func(w *builder) { w.header(1, 0).tensor("a", F32, 32, 4).data(32, 64) }), ErrLayout, "expected 0"},
		{"tensor past the end", one(func(w *builder) { w.header(1, 0).tensor("a", F32, 0, 4, 4).data(32, 63) }), ErrOutOfBounds, "bytes 0 to 64 of a 63-byte"},
		{"data section past the end", one(func(w *builder) { w.header(1, 0).tensor("a", F32, 0, 1) }), ErrTruncated, "data section starts at"},
		{"offset cut", one(func(w *builder) { w.header(1, 0).tensor("a", F32, 0, 1); w.b = w.b[:len(w.b)-4] }), ErrTruncated, `tensor "a": truncated: offset`},
	} {
		f, err := Parse(tc.data)
		if f != nil || !errors.Is(err, tc.err) || !strings.HasPrefix(err.Error(), "gguf: ") || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: got %v, want %v containing %q", tc.name, err, tc.err, tc.text)
		}
	}
}

func TestParseIsDeterministic(t *testing.T) {
	data := allTypes()
	a, errA := Parse(data)
	b, errB := Parse(slices.Clone(data))
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	a.data, b.data = nil, nil
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two parses of the same bytes differ")
	}
}
