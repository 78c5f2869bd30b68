package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Constructors of metadata values, for writing files with [NewWriter]. Each returns a Value (or an Array) that owns
// its storage: the argument slices are copied. A constructed value reads back through the same accessors as a parsed
// one, and writing it then parsing the file gives an equal Value.

// Uint8Value returns a u8 value.
func Uint8Value(v uint8) Value { return Value{Type: Uint8, bits: uint64(v)} }

// Int8Value returns an i8 value.
func Int8Value(v int8) Value { return Value{Type: Int8, bits: uint64(int64(v))} }

// Uint16Value returns a u16 value.
func Uint16Value(v uint16) Value { return Value{Type: Uint16, bits: uint64(v)} }

// Int16Value returns an i16 value.
func Int16Value(v int16) Value { return Value{Type: Int16, bits: uint64(int64(v))} }

// Uint32Value returns a u32 value.
func Uint32Value(v uint32) Value { return Value{Type: Uint32, bits: uint64(v)} }

// Int32Value returns an i32 value.
func Int32Value(v int32) Value { return Value{Type: Int32, bits: uint64(int64(v))} }

// Uint64Value returns a u64 value.
func Uint64Value(v uint64) Value { return Value{Type: Uint64, bits: v} }

// Int64Value returns an i64 value.
func Int64Value(v int64) Value { return Value{Type: Int64, bits: uint64(v)} }

// Float32Value returns an f32 value; its bits are kept exactly (NaN payloads included).
func Float32Value(v float32) Value { return Value{Type: Float32, bits: uint64(math.Float32bits(v))} }

// Float64Value returns an f64 value; its bits are kept exactly (NaN payloads included).
func Float64Value(v float64) Value { return Value{Type: Float64, bits: math.Float64bits(v)} }

// BoolValue returns a bool value, written as the byte 1 or 0.
func BoolValue(v bool) Value {
	if v {
		return Value{Type: Bool, bits: 1}
	}
	return Value{Type: Bool}
}

// StringValue returns a str value. The bytes need not be valid UTF-8; [NewWriter] refuses strings over the
// reference's limit of 1 GiB.
func StringValue(s string) Value { return Value{Type: String, str: s} }

// ArrayValue returns an arr value holding a. A nil a gives a Value that [NewWriter] refuses.
func ArrayValue(a *Array) Value { return Value{Type: TypeArray, arr: a} }

// fixedArray encodes the elements of a fixed-size array with put, which writes one element of size bytes.
func fixedArray[T any](t ValueType, v []T, put func([]byte, T)) *Array {
	size := t.size()
	raw := make([]byte, len(v)*size)
	for i, x := range v {
		put(raw[i*size:], x)
	}
	return &Array{ElemType: t, Len: len(v), raw: raw}
}

// Uint8Array returns an array of u8.
func Uint8Array(v []uint8) *Array {
	return &Array{ElemType: Uint8, Len: len(v), raw: slices.Clone(v)}
}

// Int8Array returns an array of i8.
func Int8Array(v []int8) *Array {
	return fixedArray(Int8, v, func(b []byte, x int8) { b[0] = byte(x) })
}

// Uint16Array returns an array of u16.
func Uint16Array(v []uint16) *Array {
	return fixedArray(Uint16, v, binary.LittleEndian.PutUint16)
}

// Int16Array returns an array of i16.
func Int16Array(v []int16) *Array {
	return fixedArray(Int16, v, func(b []byte, x int16) { binary.LittleEndian.PutUint16(b, uint16(x)) })
}

// Uint32Array returns an array of u32.
func Uint32Array(v []uint32) *Array {
	return fixedArray(Uint32, v, binary.LittleEndian.PutUint32)
}

// Int32Array returns an array of i32 (the type of tokenizer.ggml.token_type).
func Int32Array(v []int32) *Array {
	return fixedArray(Int32, v, func(b []byte, x int32) { binary.LittleEndian.PutUint32(b, uint32(x)) })
}

// Uint64Array returns an array of u64.
func Uint64Array(v []uint64) *Array {
	return fixedArray(Uint64, v, binary.LittleEndian.PutUint64)
}

// Int64Array returns an array of i64.
func Int64Array(v []int64) *Array {
	return fixedArray(Int64, v, func(b []byte, x int64) { binary.LittleEndian.PutUint64(b, uint64(x)) })
}

// Float32Array returns an array of f32 (the type of tokenizer.ggml.scores), bits kept exactly.
func Float32Array(v []float32) *Array {
	return fixedArray(Float32, v, func(b []byte, x float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(x)) })
}

// Float64Array returns an array of f64, bits kept exactly.
func Float64Array(v []float64) *Array {
	return fixedArray(Float64, v, func(b []byte, x float64) { binary.LittleEndian.PutUint64(b, math.Float64bits(x)) })
}

// BoolArray returns an array of bool, each written as the byte 1 or 0.
func BoolArray(v []bool) *Array {
	return fixedArray(Bool, v, func(b []byte, x bool) {
		if x {
			b[0] = 1
		}
	})
}

// StringArray returns an array of str (the type of tokenizer.ggml.tokens and tokenizer.ggml.merges).
func StringArray(v []string) *Array {
	return &Array{ElemType: String, Len: len(v), strs: slices.Clone(v)}
}

// ArrayArray returns an array of arrays. The elements may differ in element type and length, as the GGUF
// specification allows. The reference's reader refuses arrays of arrays; this package reads them (nested at most 64
// deep), and [NewWriter] refuses deeper nesting and nil elements.
func ArrayArray(v []*Array) *Array {
	return &Array{ElemType: TypeArray, Len: len(v), arrs: slices.Clone(v)}
}

// NewArray returns an array of elem built from values, each of which must be of type elem (for elem TypeArray,
// each must hold a non-nil array). It is the inverse of [Array.Values]. The error wraps [ErrWrongType] for a value
// of another type and [ErrUnknownType] for an elem outside the GGUF value types.
func NewArray(elem ValueType, values []Value) (*Array, error) {
	if elem >= numValueTypes {
		return nil, fmt.Errorf("gguf: new array: %w: element type id %d", ErrUnknownType, uint32(elem))
	}
	a := &Array{ElemType: elem, Len: len(values)}
	size := elem.size()
	for i, v := range values {
		if v.Type != elem {
			return nil, fmt.Errorf("gguf: new array of %s: %w: element %d is a %s", elem, ErrWrongType, i, v.Type)
		}
		switch elem {
		case String:
			a.strs = append(a.strs, v.str)
		case TypeArray:
			if v.arr == nil {
				return nil, fmt.Errorf("gguf: new array of arr: %w: element %d is a nil array", ErrWrongType, i)
			}
			a.arrs = append(a.arrs, v.arr)
		default:
			a.raw = appendScalar(a.raw, v.Type, v.bits, size)
		}
	}
	return a, nil
}

// appendScalar appends the size-byte little-endian encoding of a fixed-size value of type t whose bits are bits.
func appendScalar(b []byte, t ValueType, bits uint64, size int) []byte {
	if t == Bool && bits != 0 {
		bits = 1
	}
	switch size {
	case 1:
		return append(b, byte(bits))
	case 2:
		return binary.LittleEndian.AppendUint16(b, uint16(bits))
	case 4:
		return binary.LittleEndian.AppendUint32(b, uint32(bits))
	}
	return binary.LittleEndian.AppendUint64(b, bits)
}
