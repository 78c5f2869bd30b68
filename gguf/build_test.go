package gguf

import (
	"encoding/binary"
	"math"
)

// builder writes GGUF bytes for tests: a header, KVs and tensor infos, then padding and tensor data.
type builder struct {
	b []byte
}

func (w *builder) u8(v uint8)   { w.b = append(w.b, v) }
func (w *builder) u16(v uint16) { w.b = binary.LittleEndian.AppendUint16(w.b, v) }
func (w *builder) u32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *builder) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *builder) str(s string) { w.u64(uint64(len(s))); w.b = append(w.b, s...) }

// header writes magic, version 3 and the counts.
func (w *builder) header(nTensors, nKV uint64) *builder {
	w.b = append(w.b, "GGUF"...)
	w.u32(3)
	w.u64(nTensors)
	w.u64(nKV)
	return w
}

// key writes a key and its value type.
func (w *builder) key(k string, t ValueType) *builder { w.str(k); w.u32(uint32(t)); return w }

func (w *builder) kvU32(k string, v uint32) *builder { w.key(k, Uint32); w.u32(v); return w }
func (w *builder) kvStr(k, v string) *builder        { w.key(k, String); w.str(v); return w }

// tensor writes a tensor info.
func (w *builder) tensor(name string, t GGMLType, off uint64, ne ...int64) *builder {
	w.str(name)
	w.u32(uint32(len(ne)))
	for _, d := range ne {
		w.u64(uint64(d))
	}
	w.u32(uint32(t))
	w.u64(off)
	return w
}

// data pads to align and appends n bytes of tensor data (0, 1, 2, ...).
func (w *builder) data(align, n int) *builder {
	for len(w.b)%align != 0 {
		w.b = append(w.b, 0)
	}
	for i := range n {
		w.b = append(w.b, byte(i))
	}
	return w
}

// allTypes returns a file with one KV of every value type, arrays of every element type and nested arrays, and
// two tensors.
func allTypes() []byte {
	w := (&builder{}).header(2, 24)
	w.key("u8", Uint8).u8(200)
	w.key("i8", Int8).u8(0x80) // -128
	w.key("u16", Uint16).u16(65535)
	w.key("i16", Int16).u16(0xFFFE) // -2
	w.kvU32("u32", 4000000000)
	w.key("i32", Int32).u32(0xFFFFFFFF) // -1
	w.key("f32", Float32).u32(math.Float32bits(1e-5))
	w.key("bool", Bool).u8(1)
	w.key("bool2", Bool).u8(2) // nonzero is true, as in the reference
	w.kvStr("str", "héllo")
	w.key("u64", Uint64).u64(math.MaxUint64)
	w.key("i64", Int64).u64(uint64(math.MaxUint64 - 4)) // -5
	w.key("f64", Float64).u64(math.Float64bits(-2.5))
	w.kvStr("general.architecture", "llama")
	// arrays
	w.key("a.str", TypeArray).u32(uint32(String))
	w.u64(3)
	w.str("a")
	w.str("")
	w.str("ccc")
	w.key("a.f32", TypeArray).u32(uint32(Float32))
	w.u64(2)
	w.u32(math.Float32bits(0.5))
	w.u32(math.Float32bits(-3))
	w.key("a.i32", TypeArray).u32(uint32(Int32))
	w.u64(2)
	w.u32(7)
	w.u32(0xFFFFFFFE)
	w.key("a.u32", TypeArray).u32(uint32(Uint32))
	w.u64(1)
	w.u32(0xFFFFFFFF)
	w.key("a.u8", TypeArray).u32(uint32(Uint8))
	w.u64(3)
	w.u8(1)
	w.u8(2)
	w.u8(3)
	w.key("a.bool", TypeArray).u32(uint32(Bool))
	w.u64(2)
	w.u8(0)
	w.u8(1)
	w.key("a.i16", TypeArray).u32(uint32(Int16))
	w.u64(1)
	w.u16(0x8000)
	w.key("a.f64", TypeArray).u32(uint32(Float64))
	w.u64(1)
	w.u64(math.Float64bits(0.25))
	w.key("a.empty", TypeArray).u32(uint32(Int64))
	w.u64(0)
	// [[1, 2], [], [["x"]]]: arrays of arrays, one of them holding an array of strings
	w.key("a.nested", TypeArray).u32(uint32(TypeArray))
	w.u64(3)
	w.u32(uint32(Uint16))
	w.u64(2)
	w.u16(1)
	w.u16(2)
	w.u32(uint32(Int8))
	w.u64(0)
	w.u32(uint32(TypeArray))
	w.u64(1)
	w.u32(uint32(String))
	w.u64(1)
	w.str("x")
	// tensors: f32 [3,2] = 24 bytes at 0, q8_0 [64] = 2 blocks = 68 bytes at 32
	w.tensor("a", F32, 0, 3, 2)
	w.tensor("b", Q8_0, 32, 64)
	return w.data(32, 32+68).b
}
