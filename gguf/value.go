package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Value is one metadata value. Type says which accessor applies; the accessors report false for any other type.
// A Value owns its storage: it stays valid after the File it came from is closed. The zero Value is a u8 0.
type Value struct {
	Type ValueType // the value's type as stored in the file

	bits uint64 // fixed-size types: the integer (sign-extended), the float's bits, or 0/1 for bool
	str  string // String
	arr  *Array // TypeArray
}

// KV is one metadata key/value pair, in file order.
type KV struct {
	Key   string
	Value Value
}

// Uint64 returns an integer value of any width and signedness that is not negative.
func (v Value) Uint64() (uint64, bool) {
	switch v.Type {
	case Uint8, Uint16, Uint32, Uint64:
		return v.bits, true
	case Int8, Int16, Int32, Int64:
		if int64(v.bits) >= 0 {
			return v.bits, true
		}
	}
	return 0, false
}

// Int64 returns an integer value of any width and signedness that fits an int64.
func (v Value) Int64() (int64, bool) {
	switch v.Type {
	case Int8, Int16, Int32, Int64:
		return int64(v.bits), true
	case Uint8, Uint16, Uint32, Uint64:
		if v.bits <= math.MaxInt64 {
			return int64(v.bits), true
		}
	}
	return 0, false
}

// Float64 returns an f32 or f64 value, widened exactly to float64.
func (v Value) Float64() (float64, bool) {
	switch v.Type {
	case Float32:
		return float64(math.Float32frombits(uint32(v.bits))), true
	case Float64:
		return math.Float64frombits(v.bits), true
	}
	return 0, false
}

// Bool returns a bool value.
func (v Value) Bool() (bool, bool) {
	return v.bits != 0, v.Type == Bool
}

// String returns a string value: the stored bytes, which need not be valid UTF-8.
func (v Value) String() (string, bool) {
	return v.str, v.Type == String
}

// Array returns an array value.
func (v Value) Array() (*Array, bool) {
	return v.arr, v.Type == TypeArray && v.arr != nil
}

// scalar decodes a fixed-size value of type t from b, which holds exactly t.size() little-endian bytes.
func scalar(t ValueType, b []byte) Value {
	v := Value{Type: t}
	switch t {
	case Uint8:
		v.bits = uint64(b[0])
	case Int8:
		v.bits = uint64(int64(int8(b[0])))
	case Bool:
		if b[0] != 0 {
			v.bits = 1
		}
	case Uint16:
		v.bits = uint64(binary.LittleEndian.Uint16(b))
	case Int16:
		v.bits = uint64(int64(int16(binary.LittleEndian.Uint16(b))))
	case Uint32, Float32:
		v.bits = uint64(binary.LittleEndian.Uint32(b))
	case Int32:
		v.bits = uint64(int64(int32(binary.LittleEndian.Uint32(b))))
	case Uint64, Int64, Float64:
		v.bits = binary.LittleEndian.Uint64(b)
	}
	return v
}

// Array is an array value: Len elements, all of type ElemType. Elements of a fixed-size type are kept in their
// encoded form and decoded on request; string and array elements are decoded when the file is parsed.
type Array struct {
	ElemType ValueType // the type of every element
	Len      int       // the number of elements

	raw  []byte   // fixed-size elements: Len*ElemType.size() little-endian bytes
	strs []string // ElemType == String
	arrs []*Array // ElemType == TypeArray
}

func (a *Array) wrongType(want string) error {
	if a == nil {
		return fmt.Errorf("gguf: %w: nil array, want %s", ErrWrongType, want)
	}
	return fmt.Errorf("gguf: %w: array of %s, want %s", ErrWrongType, a.ElemType, want)
}

// Strings returns a copy of the elements of a string array, or an error wrapping ErrWrongType.
func (a *Array) Strings() ([]string, error) {
	if a == nil || a.ElemType != String {
		return nil, a.wrongType("str")
	}
	return slices.Clone(a.strs), nil
}

// Float32s returns the elements of an f32 array, or an error wrapping ErrWrongType.
func (a *Array) Float32s() ([]float32, error) {
	if a == nil || a.ElemType != Float32 {
		return nil, a.wrongType("f32")
	}
	out := make([]float32, a.Len)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.raw[4*i:]))
	}
	return out, nil
}

// Int32s returns the elements of an i32 or u32 array as int32 (a u32 element keeps its bits: 0xFFFFFFFF is -1, as
// when the reference reads such an array through an int32 pointer), or an error wrapping ErrWrongType.
func (a *Array) Int32s() ([]int32, error) {
	if a == nil || (a.ElemType != Int32 && a.ElemType != Uint32) {
		return nil, a.wrongType("i32 or u32")
	}
	out := make([]int32, a.Len)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(a.raw[4*i:]))
	}
	return out, nil
}

// Values returns every element as a Value, whatever the element type; this is how arrays of arrays are read.
func (a *Array) Values() []Value {
	if a == nil {
		return nil
	}
	out := make([]Value, a.Len)
	for i := range out {
		switch a.ElemType {
		case String:
			out[i] = Value{Type: String, str: a.strs[i]}
		case TypeArray:
			out[i] = Value{Type: TypeArray, arr: a.arrs[i]}
		default:
			n := a.ElemType.size()
			out[i] = scalar(a.ElemType, a.raw[n*i:n*i+n])
		}
	}
	return out
}
