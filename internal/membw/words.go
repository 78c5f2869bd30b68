package membw

import "encoding/binary"

// readWords sums b (len a multiple of 128) as little-endian uint64 words.
func readWords(b []byte) uint64 {
	var s0, s1, s2, s3 uint64
	for i := 0; i+32 <= len(b); i += 32 {
		s0 += binary.LittleEndian.Uint64(b[i:])
		s1 += binary.LittleEndian.Uint64(b[i+8:])
		s2 += binary.LittleEndian.Uint64(b[i+16:])
		s3 += binary.LittleEndian.Uint64(b[i+24:])
	}
	return s0 + s1 + s2 + s3
}
