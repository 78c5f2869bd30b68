package quant

import (
	"math"
	"unsafe"
)

func float32frombits(b uint32) float32 { return math.Float32frombits(b) }

// float32View reinterprets little-endian f32 bytes as []float32 without a copy
// (amd64 and arm64 are little-endian; GGUF data is little-endian and aligned
// to at least 32 bytes).
func float32View(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// uint16View reinterprets little-endian f16 bytes as []uint16 without a copy.
func uint16View(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}
