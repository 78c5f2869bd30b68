package gguf

import "strconv"

// ValueType is the type id of a metadata value, gguf_type of ggml/include/gguf.h. It is stored in a file as a
// little-endian uint32.
type ValueType uint32

// The metadata value types. The array type is named TypeArray because Array names the array value itself.
const (
	Uint8     ValueType = 0  // u8, 1 byte
	Int8      ValueType = 1  // i8, 1 byte
	Uint16    ValueType = 2  // u16, 2 bytes
	Int16     ValueType = 3  // i16, 2 bytes
	Uint32    ValueType = 4  // u32, 4 bytes
	Int32     ValueType = 5  // i32, 4 bytes
	Float32   ValueType = 6  // f32, 4 bytes, IEEE 754 binary32
	Bool      ValueType = 7  // bool, 1 byte, nonzero is true
	String    ValueType = 8  // str, a u64 byte length followed by the bytes (no terminator)
	TypeArray ValueType = 9  // arr, a u32 element type, a u64 element count, then the elements
	Uint64    ValueType = 10 // u64, 8 bytes
	Int64     ValueType = 11 // i64, 8 bytes
	Float64   ValueType = 12 // f64, 8 bytes, IEEE 754 binary64
)

const numValueTypes = 13

var valueTypeNames = [numValueTypes]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64"}

// valueTypeSizes holds the encoded size in bytes of each fixed-size value type; 0 for str and arr.
var valueTypeSizes = [numValueTypes]int{1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8}

// String returns the reference's name for the type (gguf_type_name: "u8", "str", "arr", ...), or "type(N)" for an
// id it does not define.
func (t ValueType) String() string {
	if t < numValueTypes {
		return valueTypeNames[t]
	}
	return "type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// size returns the encoded size of a fixed-size value type, or 0 for str, arr and unknown ids.
func (t ValueType) size() int {
	if t < numValueTypes {
		return valueTypeSizes[t]
	}
	return 0
}

// GGMLType is a tensor data type id, ggml_type of ggml/include/ggml.h (llama.cpp v0.5.0). It is stored in a file
// as a little-endian uint32.
type GGMLType uint32

// The tensor data types, named after ggml's GGML_TYPE_* constants. Ids 4, 5, 31-33 and 36-38 were removed from
// ggml and are not valid in a file.
const (
	F32     GGMLType = 0
	F16     GGMLType = 1
	Q4_0    GGMLType = 2
	Q4_1    GGMLType = 3
	Q5_0    GGMLType = 6
	Q5_1    GGMLType = 7
	Q8_0    GGMLType = 8
	Q8_1    GGMLType = 9
	Q2_K    GGMLType = 10
	Q3_K    GGMLType = 11
	Q4_K    GGMLType = 12
	Q5_K    GGMLType = 13
	Q6_K    GGMLType = 14
	Q8_K    GGMLType = 15
	IQ2_XXS GGMLType = 16
	IQ2_XS  GGMLType = 17
	IQ3_XXS GGMLType = 18
	IQ1_S   GGMLType = 19
	IQ4_NL  GGMLType = 20
	IQ3_S   GGMLType = 21
	IQ2_S   GGMLType = 22
	IQ4_XS  GGMLType = 23
	I8      GGMLType = 24
	I16     GGMLType = 25
	I32     GGMLType = 26
	I64     GGMLType = 27
	F64     GGMLType = 28
	IQ1_M   GGMLType = 29
	BF16    GGMLType = 30
	TQ1_0   GGMLType = 34
	TQ2_0   GGMLType = 35
	MXFP4   GGMLType = 39
	NVFP4   GGMLType = 40
	Q1_0    GGMLType = 41
	Q2_0    GGMLType = 42
)

// numGGMLTypes is GGML_TYPE_COUNT of the reference.
const numGGMLTypes = 43

// ggmlTraits is the part of ggml.c's type_traits a reader needs: the name, the elements per block and the bytes
// per block (sizeof(block_*), checked against ggml-common.h). Removed ids keep their old name and have block 0.
var ggmlTraits = [numGGMLTypes]struct {
	name        string
	block, size int
}{
	F32: {"f32", 1, 4}, F16: {"f16", 1, 2},
	Q4_0: {"q4_0", 32, 18}, Q4_1: {"q4_1", 32, 20},
	4: {"q4_2", 0, 0}, 5: {"q4_3", 0, 0},
	Q5_0: {"q5_0", 32, 22}, Q5_1: {"q5_1", 32, 24},
	Q8_0: {"q8_0", 32, 34}, Q8_1: {"q8_1", 32, 36},
	Q2_K: {"q2_K", 256, 84}, Q3_K: {"q3_K", 256, 110}, Q4_K: {"q4_K", 256, 144},
	Q5_K: {"q5_K", 256, 176}, Q6_K: {"q6_K", 256, 210}, Q8_K: {"q8_K", 256, 292},
	IQ2_XXS: {"iq2_xxs", 256, 66}, IQ2_XS: {"iq2_xs", 256, 74}, IQ3_XXS: {"iq3_xxs", 256, 98},
	IQ1_S: {"iq1_s", 256, 50}, IQ4_NL: {"iq4_nl", 32, 18}, IQ3_S: {"iq3_s", 256, 110},
	IQ2_S: {"iq2_s", 256, 82}, IQ4_XS: {"iq4_xs", 256, 136},
	I8: {"i8", 1, 1}, I16: {"i16", 1, 2}, I32: {"i32", 1, 4}, I64: {"i64", 1, 8}, F64: {"f64", 1, 8},
	IQ1_M: {"iq1_m", 256, 56}, BF16: {"bf16", 1, 2},
	31: {"q4_0_4_4", 0, 0}, 32: {"q4_0_4_8", 0, 0}, 33: {"q4_0_8_8", 0, 0},
	TQ1_0: {"tq1_0", 256, 54}, TQ2_0: {"tq2_0", 256, 66},
	36: {"iq4_nl_4_4", 0, 0}, 37: {"iq4_nl_4_8", 0, 0}, 38: {"iq4_nl_8_8", 0, 0},
	MXFP4: {"mxfp4", 32, 17}, NVFP4: {"nvfp4", 64, 36},
	Q1_0: {"q1_0", 128, 18}, Q2_0: {"q2_0", 64, 18},
}

// String returns ggml's type name ("f32", "q8_0", "q4_K", ...); a removed id gives its former name (4 is "q4_2")
// and an id ggml never defined gives "type(N)".
func (t GGMLType) String() string {
	if t < numGGMLTypes {
		return ggmlTraits[t].name
	}
	return "type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// BlockSize returns the number of elements in one block of the type (ggml_blck_size): 1 for f32, f16, bf16 and
// the integer types, 32 for q8_0, 256 for the K-quants. It is 0 for a removed or unknown id.
func (t GGMLType) BlockSize() int {
	if t < numGGMLTypes {
		return ggmlTraits[t].block
	}
	return 0
}

// TypeSize returns the number of bytes in one block of the type (ggml_type_size), e.g. 4 for f32 and 34 for
// q8_0. It is 0 for a removed or unknown id.
func (t GGMLType) TypeSize() int {
	if t < numGGMLTypes {
		return ggmlTraits[t].size
	}
	return 0
}
